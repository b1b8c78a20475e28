"""The live-model path (OpenAIChatModel over HTTP) through the local replay server."""

from __future__ import annotations

import json
from collections.abc import Mapping
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from datagouv_eval_pipeline.core.benchmark.cells import Cell, CellModel
from datagouv_eval_pipeline.core.benchmark.config import ProviderKind
from datagouv_eval_pipeline.core.providers.limits import RateLimit, RateLimiters
from datagouv_eval_pipeline.core.providers.retry import RetryPolicy
from datagouv_eval_pipeline.core.tasks.spec import TaskSpec
from datagouv_eval_pipeline.pipeline.agents.runner import RunSettings, run_cell
from datagouv_eval_pipeline.world.api.server import TwinServer
from datagouv_eval_pipeline.world.replay import (
    ProviderSimulation,
    ReplayConfig,
    ReplayServer,
    tool_call_completion,
)
from tests.providers.scripted_server import ScriptedServer, always

from .helpers import key_of, variant

KEY_ENV = "DGEVAL_TEST_PROVIDER_KEY"
SECRET = "sk-test-0123456789abcdef-never-in-traces"
NO_LIMIT = RateLimiters(default=RateLimit())


class Script:
    """A fake model: search the catalog once, then answer with the first dataset id."""

    def __call__(self, body: dict[str, Any]) -> Mapping[str, Any]:
        model = str(body["model"])
        messages = body["messages"]
        tools = [tool["function"]["name"] for tool in body.get("tools") or []]
        assert "final_answer" in tools and "search_datasets" in tools
        if messages[-1]["role"] != "tool":
            return tool_call_completion(model, [("search_datasets", {"query": "catalogue"})])
        found = messages[-1]["content"]
        dataset_id = found.split("ID: ", 1)[1].split()[0]
        answer = {
            "answer": f"Voir le jeu {dataset_id}. (clé vue : {SECRET})",
            "declined": False,
            "cited_urls": [],
            "ids_used": [dataset_id],
        }
        return tool_call_completion(model, [("final_answer", answer)], prompt_tokens=30)


def live_cell(cells: dict[str, Cell], base_url: str) -> Cell:
    model = CellModel(
        provider="mistral",
        name="mistral-small-test",
        kind=ProviderKind.OPENAI_COMPATIBLE,
        base_url=base_url,
        api_key_env=KEY_ENV,
        input_price_per_mtok=2.0,
        output_price_per_mtok=6.0,
        currency="EUR",
    )
    return variant(cells[key_of("baseline-oneshot", "mcp@0.2.26")], model=model)


def server(simulation: ProviderSimulation | None = None) -> ReplayServer:
    return ReplayServer(
        ReplayConfig(
            mode="scripted",
            responder=Script(),
            simulation=simulation or ProviderSimulation(),
            required_api_key=SECRET,
        )
    )


def test_openai_compatible_model_with_mistral_quirks(
    cells: dict[str, Cell], twin: TwinServer, tasks: dict[str, TaskSpec]
) -> None:
    with server(ProviderSimulation(mistral_quirks=True)) as provider:
        (trace,) = run_cell(
            live_cell(cells, provider.base_url),
            [tasks["task_0003"]],
            twin_urls=twin.urls,
            environ={KEY_ENV: SECRET},
            rate_limiters=NO_LIMIT,
        )
        stats = provider.state.stats()
    assert trace.status == "ok", trace.status_reason
    assert stats["scripted"] == 2  # the key was accepted (a wrong one answers 401)
    # Tool-call arguments arrive as a JSON string over the wire: the trace holds the object.
    assert trace.tool_calls[0].name == "search_datasets"
    assert trace.tool_calls[0].arguments == {"query": "catalogue"}
    assert trace.ids_used == ["5d13a8b6634f41070a43dff3"]
    # Per-request tokens come from the provider's usage: 10 + 30 in, 5 + 5 out.
    assert [(r.input_tokens, r.output_tokens) for r in trace.requests] == [(10, 5), (30, 5)]
    assert trace.usage.input_tokens == 40 and trace.usage.output_tokens == 10
    assert trace.cost == pytest.approx((40 * 2.0 + 10 * 6.0) / 1_000_000)
    assert trace.model == "mistral-small-test"


def test_secrets_never_appear_in_traces(
    cells: dict[str, Cell], twin: TwinServer, tasks: dict[str, TaskSpec]
) -> None:
    with server() as provider:
        (trace,) = run_cell(
            live_cell(cells, provider.base_url),
            [tasks["task_0003"]],
            twin_urls=twin.urls,
            environ={KEY_ENV: SECRET},
            rate_limiters=NO_LIMIT,
        )
    assert trace.status == "ok"
    # The fake model echoed the key into its answer: the trace keeps a mask instead.
    assert SECRET not in trace.model_dump_json()
    assert "(clé vue : ***)" in trace.answer


def test_missing_key_skips_with_the_variable_name(
    cells: dict[str, Cell], twin: TwinServer, tasks: dict[str, TaskSpec]
) -> None:
    (trace,) = run_cell(
        live_cell(cells, "http://127.0.0.1:9/v1"),
        [tasks["task_0003"]],
        twin_urls=twin.urls,
        environ={},
    )
    assert trace.status == "skipped"
    assert f"set the environment variable {KEY_ENV}" in (trace.status_reason or "")


def test_429_is_retried_after_retry_after_and_counted_as_a_wait(
    cells: dict[str, Cell], twin: TwinServer, tasks: dict[str, TaskSpec]
) -> None:
    # One request per 0.4 s window: the second request is refused with Retry-After.
    simulation = ProviderSimulation(rate_limit_rpm=1, rate_window_s=0.4)
    with server(simulation) as provider:
        (trace,) = run_cell(
            live_cell(cells, provider.base_url),
            [tasks["task_0003"]],
            twin_urls=twin.urls,
            environ={KEY_ENV: SECRET},
            rate_limiters=NO_LIMIT,
        )
        stats = provider.state.stats()
    assert trace.status == "ok", trace.status_reason
    assert stats["rate_limited"] >= 1
    assert stats["scripted"] == 2
    assert trace.rate_limit_wait_ms > 0
    assert trace.usage.requests == 2


def test_server_errors_are_retried_then_reported(
    cells: dict[str, Cell], twin: TwinServer, tasks: dict[str, TaskSpec]
) -> None:
    settings = RunSettings(
        retry=RetryPolicy(retries=2, base_delay_s=0.01, min_delay_s=0.01, jitter_s=0)
    )
    with server(ProviderSimulation(fail_requests={1: 503})) as provider:
        (recovered,) = run_cell(
            live_cell(cells, provider.base_url),
            [tasks["task_0003"]],
            twin_urls=twin.urls,
            environ={KEY_ENV: SECRET},
            settings=settings,
            rate_limiters=NO_LIMIT,
        )
    assert recovered.status == "ok"
    assert recovered.rate_limit_wait_ms == 0.0  # a 5xx backoff is not a rate-limit wait
    with server(ProviderSimulation(fail_every=1, fail_status=502)) as provider:
        (failed,) = run_cell(
            live_cell(cells, provider.base_url),
            [tasks["task_0003"]],
            twin_urls=twin.urls,
            environ={KEY_ENV: SECRET},
            settings=settings,
            rate_limiters=NO_LIMIT,
        )
        stats = provider.state.stats()
    assert failed.status == "error"
    assert failed.status_reason == "model request failed: HTTP 502 after 2 retries"
    assert stats["faults"] == 3


def test_recorded_cassette_replays_the_same_run(
    cells: dict[str, Cell],
    twin: TwinServer,
    tasks: dict[str, TaskSpec],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The recording proxy reads the upstream key from the environment at request time.
    monkeypatch.setenv(KEY_ENV, SECRET)
    with server() as upstream:
        recorder = ReplayConfig(
            mode="record",
            cassettes_dir=tmp_path,
            upstream_url=upstream.base_url,
            upstream_api_key_env=KEY_ENV,
        )
        with ReplayServer(recorder) as proxy:
            (recorded,) = run_cell(
                live_cell(cells, proxy.base_url),
                [tasks["task_0003"]],
                twin_urls=twin.urls,
                environ={KEY_ENV: "offline"},
                rate_limiters=NO_LIMIT,
            )
    assert recorded.status == "ok", recorded.status_reason
    cassette_text = "".join(path.read_text() for path in tmp_path.glob("*.json"))
    assert SECRET not in cassette_text
    with ReplayServer(ReplayConfig(mode="replay", cassettes_dir=tmp_path)) as replay:
        (replayed,) = run_cell(
            live_cell(cells, replay.base_url),
            [tasks["task_0003"]],
            twin_urls=twin.urls,
            environ={KEY_ENV: "offline"},
            rate_limiters=NO_LIMIT,
        )
        replay.raise_for_misses()
    assert replayed.status == "ok"
    strip = {"duration_ms"}
    assert [
        {k: v for k, v in json.loads(c.model_dump_json()).items() if k not in strip}
        for c in replayed.tool_calls
    ] == [
        {k: v for k, v in json.loads(c.model_dump_json()).items() if k not in strip}
        for c in recorded.tool_calls
    ]
    assert replayed.answer == recorded.answer


def test_429s_count_against_the_retries(
    cells: dict[str, Cell], twin: TwinServer, tasks: dict[str, TaskSpec]
) -> None:
    # The provider wants a minute's pause; the waits are capped at 50 ms and 2 retries.
    settings = RunSettings(
        retry=RetryPolicy(retries=2, max_delay_s=0.05, min_delay_s=0.01, jitter_s=0)
    )
    with server(ProviderSimulation(rate_limit_rpm=1, rate_window_s=60)) as provider:
        (trace,) = run_cell(
            live_cell(cells, provider.base_url),
            [tasks["task_0003"]],
            twin_urls=twin.urls,
            environ={KEY_ENV: SECRET},
            settings=settings,
            rate_limiters=NO_LIMIT,
        )
        stats = provider.state.stats()
    assert trace.status == "error"
    assert trace.status_reason == "model request failed: HTTP 429 after 2 retries"
    assert trace.usage.requests == 1  # the first request went through
    assert stats["rate_limited"] == 3  # the second request: 1 attempt + 2 retries
    assert [call.name for call in trace.tool_calls] == ["search_datasets"]


def test_retry_after_zero_is_floored_and_bounded(
    cells: dict[str, Cell], twin: TwinServer, tasks: dict[str, TaskSpec]
) -> None:
    # The counter-example: a 429 with Retry-After: 0 once made the runner send 197 requests
    # in 10 s. Now: 1 + 3 retries = 4 requests, each wait floored at 0.1 s and recorded.
    settings = RunSettings(retry=RetryPolicy(retries=3, min_delay_s=0.1, jitter_s=0))
    with ScriptedServer(always(429, **{"retry-after": "0"})) as provider:
        (trace,) = run_cell(
            live_cell(cells, provider.base_url),
            [tasks["task_0003"]],
            twin_urls=twin.urls,
            environ={KEY_ENV: SECRET},
            settings=settings,
            rate_limiters=NO_LIMIT,
        )
        arrivals = provider.arrivals
    assert provider.requests == 4
    gaps = [later - earlier for earlier, later in pairwise(arrivals)]
    assert len(gaps) == 3 and min(gaps) >= 0.1
    assert trace.status == "error"
    assert trace.status_reason == "model request failed: HTTP 429 after 3 retries"
    # Three waits of 0.1 s, all rate-limit waits (the floor, since the server advised 0).
    assert trace.rate_limit_wait_ms == pytest.approx(300.0, abs=1.0)


def test_a_server_that_always_fails_sees_one_plus_the_retries(
    cells: dict[str, Cell], twin: TwinServer, tasks: dict[str, TaskSpec]
) -> None:
    settings = RunSettings(
        retry=RetryPolicy(retries=2, min_delay_s=0.01, jitter_s=0, base_delay_s=0.01)
    )
    with ScriptedServer(always(503)) as provider:
        (trace,) = run_cell(
            live_cell(cells, provider.base_url),
            [tasks["task_0003"]],
            twin_urls=twin.urls,
            environ={KEY_ENV: SECRET},
            settings=settings,
            rate_limiters=NO_LIMIT,
        )
    assert provider.requests == 3  # the SDK's own retries are off
    assert trace.status_reason == "model request failed: HTTP 503 after 2 retries"
    assert trace.rate_limit_wait_ms == 0.0  # a 5xx backoff is not a rate-limit wait
