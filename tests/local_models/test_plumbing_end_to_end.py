"""A cell and the hybrid judge against a real llama.cpp server, recorded and replayed.

The model is SmolLM2-135M-Instruct: **plumbing, not an agent**. Its answers are noise, so
nothing here grades them; what is checked is what the pipeline does around a real local server:
the server started from the model's settings, the tools shown through the chat template, the
generation settings on the wire, tokens and durations recorded per request, the budget and
timeout paths, and a recording that replays in a fresh process with zero misses. Skipped,
naming what is missing, without the runtime (the ``local-llm`` extra) or the model
(``./dev local-llm``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pydantic_ai.models
import pytest

from datagouv_eval_pipeline.pipeline.agents.limits import RunBudget, wall_clock_reason
from datagouv_eval_pipeline.world.api.server import TwinServer
from datagouv_eval_pipeline.world.catalogue.urls import TwinUrls
from datagouv_eval_pipeline.world.local_models import LocalServers
from datagouv_eval_pipeline.world.replay import ReplayConfig, ReplayServer

from .conftest import require_llama
from .plumbing_run import (
    MAX_OUTPUT_TOKENS,
    NAME,
    plumbing_model,
    run_agent,
    run_judge,
    summary,
)

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _requests_to_the_local_server(monkeypatch: pytest.MonkeyPatch) -> None:
    # Model requests are allowed here: they can only reach servers on 127.0.0.1.
    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    """The plumbing model's server, started from its models.yml settings."""
    require_llama()
    with LocalServers() as servers:
        yield servers.base_url(plumbing_model())


@pytest.fixture(scope="module")
def twin() -> Iterator[TwinUrls]:
    with TwinServer() as urls:
        yield urls


def _bodies(cassette: Path) -> list[dict[str, Any]]:
    data = json.loads(cassette.read_text(encoding="utf-8"))
    return [item["request"]["body"] for item in data["interactions"]]


def test_the_server_is_sized_from_the_model_settings(served: str) -> None:
    with httpx.Client(timeout=30, trust_env=False) as client:
        props = client.get(served.removesuffix("/v1") + "/props").json()
        models = client.get(served + "/models").json()
    assert [model["id"] for model in models["data"]] == [NAME]
    assert props["total_slots"] == 1
    assert props["default_generation_settings"]["n_ctx"] == 4096


def test_a_cell_and_the_hybrid_judge_record_and_replay_in_a_fresh_process(
    served: str, twin: TwinUrls, tmp_path: Path
) -> None:
    recorder = ReplayConfig(
        mode="record", cassettes_dir=tmp_path, upstream_url=served, upstream_timeout_s=600
    )
    with ReplayServer(recorder) as proxy:
        traces = run_agent(
            proxy.cassette_url("agent"), twin, RunBudget(max_requests=3, wall_timeout_s=600)
        )
        (trace,) = traces
        judged = run_judge(proxy.cassette_url("judge"), trace)
    # Whatever the model said, the run ended in a recorded state, never an exception.
    assert trace.status in ("ok", "error", "budget_exceeded"), trace.status_reason
    requests = trace.requests or []
    assert requests, "no model request was recorded"
    for request in requests:
        assert request.input_tokens > 0
        assert 0 < request.output_tokens <= MAX_OUTPUT_TOKENS
        assert request.duration_ms is not None and request.duration_ms > 0
    assert trace.usage.input_tokens == sum(r.input_tokens for r in requests)
    assert trace.usage.output_tokens == sum(r.output_tokens for r in requests)
    assert trace.provenance.model_settings is not None
    assert trace.provenance.model_settings["context_window"] == 4096

    bodies = _bodies(tmp_path / "agent.json")
    assert len(bodies) == len(requests)
    first = bodies[0]
    assert first["model"] == NAME
    assert [tool["function"]["name"] for tool in first["tools"]] == ["final_answer"]
    # The model's settings from models.yml, on the wire to the real server.
    assert (first["temperature"], first["seed"], first["max_tokens"]) == (0, 42, MAX_OUTPUT_TOKENS)
    # The tools reach the model through its chat template: the server shows them in the prompt.
    with httpx.Client(timeout=60, trust_env=False) as client:
        prompt = client.post(served.removesuffix("/v1") + "/apply-template", json=first).json()
    assert '"name": "final_answer"' in prompt["prompt"]
    assert "<tools>" in prompt["prompt"]

    # The rules decided the first criterion; the second went to the model on the server.
    assert judged["judge_id"] == f"hybrid:local/{NAME}"
    (ruled, asked) = judged["verdicts"]
    assert ruled[0].startswith("deterministic") and ruled[1] in ("pass", "fail")
    assert asked[0] == f"llm:local/{NAME}"
    assert judged["model_requests"] >= 1
    assert len(_bodies(tmp_path / "judge.json")) == judged["model_requests"]

    fresh = subprocess.run(
        [sys.executable, "-m", "tests.local_models.plumbing_run", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert fresh.returncode == 0, fresh.stderr[-3000:]
    replayed = json.loads(fresh.stdout.strip().splitlines()[-1])
    assert replayed["misses"] == []
    assert replayed["agent"] == json.loads(json.dumps(summary(traces)))
    assert replayed["judge"] == judged


def test_the_request_budget_ends_the_run(served: str, twin: TwinUrls) -> None:
    # One request: the model's text answer needs a second (a retry asking for the tool call).
    (trace,) = run_agent(served, twin, RunBudget(max_requests=1, wall_timeout_s=600))
    assert len(trace.requests or []) == 1
    assert trace.status in ("ok", "budget_exceeded"), trace.status_reason
    if trace.status == "budget_exceeded":
        assert "request_limit" in (trace.status_reason or ""), trace.status_reason


def test_the_wall_clock_budget_ends_a_slow_run(served: str, twin: TwinUrls) -> None:
    (trace,) = run_agent(served, twin, RunBudget(max_requests=10, wall_timeout_s=1))
    assert trace.status == "budget_exceeded"
    assert trace.status_reason == wall_clock_reason(1)
