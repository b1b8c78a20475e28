"""models.yml settings on the wire: a real HTTP server on 127.0.0.1 reads what each request sent.

The model entries are written in a models.yml, loaded and expanded like the pipeline's; the
runs go through the real OpenAI client to :class:`ScriptedServer`, which keeps every body.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from datagouv_eval_pipeline.core.benchmark.cells import Cell, expand_cells
from datagouv_eval_pipeline.core.benchmark.loader import load_benchmark_config
from datagouv_eval_pipeline.core.providers.limits import RateLimit, RateLimiters
from datagouv_eval_pipeline.core.tasks.spec import TaskSpec
from datagouv_eval_pipeline.pipeline.agents.runner import run_cell
from datagouv_eval_pipeline.world.api.server import TwinServer
from tests.benchmark.benchmark_fixtures import write_config
from tests.providers.scripted_server import ScriptedServer, SearchThenAnswer

KEY_ENV = "ALBERT_API_KEY"
ENVIRON = {KEY_ENV: "sk-local-test"}
NO_LIMIT = RateLimiters(default=RateLimit())


def _cell(tmp_path: Path, base_url: str, provider: str, model: str) -> Cell:
    config_dir = write_config(tmp_path / "benchmark")
    models = config_dir / "models.yml"
    text = models.read_text(encoding="utf-8")
    text = text.replace("https://albert.example/v1", base_url, 1)
    text = text.replace(
        "    api_key_env: ALBERT_API_KEY\n", "    api_key_env: ALBERT_API_KEY\n" + provider, 1
    )
    text = text.replace(
        "      - name: openai/gpt-oss-120b\n", "      - name: openai/gpt-oss-120b\n" + model, 1
    )
    models.write_text(text, encoding="utf-8")
    cells = expand_cells(load_benchmark_config(config_dir))
    return next(c for c in cells if c.model.provider == "albert" and c.capabilities == ("mcp",))


def test_settings_of_models_yml_reach_the_wire_and_the_provenance(
    tmp_path: Path, twin: TwinServer, tasks: dict[str, TaskSpec]
) -> None:
    with ScriptedServer(SearchThenAnswer()) as server:
        cell = _cell(
            tmp_path,
            server.base_url,
            "    timeout_s: 30\n    retries: 1\n",
            "        temperature: 0.3\n        top_p: 0.8\n        seed: 11\n"
            "        max_output_tokens: 256\n        stop: ['</fin>']\n"
            "        context_window: 32768\n",
        )
        (trace,) = run_cell(
            cell,
            [tasks["task_0003"]],
            twin_urls=twin.urls,
            environ=ENVIRON,
            rate_limiters=NO_LIMIT,
        )
    assert trace.status == "ok", trace.status_reason
    assert len(server.bodies) == 2
    for body in server.bodies:
        assert body["temperature"] == 0.3
        assert body["top_p"] == 0.8
        assert body["seed"] == 11
        # Every OpenAI-compatible server knows max_tokens; only OpenAI's own API gets the other.
        assert body["max_tokens"] == 256 and "max_completion_tokens" not in body
        assert body["stop"] == ["</fin>"]
    assert trace.provenance.model_settings == {
        "timeout_s": 30.0,
        "retries": 1,
        "temperature": 0.3,
        "top_p": 0.8,
        "seed": 11,
        "max_output_tokens": 256,
        "stop": ["</fin>"],
        "context_window": 32768,
    }
    assert trace.provenance.cell_key == cell.key and "@" in cell.model.key


def test_a_model_without_settings_sends_none(
    tmp_path: Path, twin: TwinServer, tasks: dict[str, TaskSpec]
) -> None:
    with ScriptedServer(SearchThenAnswer()) as server:
        cell = _cell(tmp_path, server.base_url, "", "")
        (trace,) = run_cell(
            cell,
            [tasks["task_0003"]],
            twin_urls=twin.urls,
            environ=ENVIRON,
            rate_limiters=NO_LIMIT,
        )
    assert trace.status == "ok", trace.status_reason
    for body in server.bodies:
        assert not {"temperature", "top_p", "seed", "max_tokens", "stop"} & set(body)
    assert trace.provenance.model_settings is None


def test_the_provider_timeout_ends_a_request_and_its_retries_are_counted(
    tmp_path: Path, twin: TwinServer, tasks: dict[str, TaskSpec]
) -> None:
    script = SearchThenAnswer(delay_s=2.5)
    with ScriptedServer(script) as server:
        cell = _cell(tmp_path, server.base_url, "    timeout_s: 0.5\n    retries: 0\n", "")
        (trace,) = run_cell(
            cell,
            [tasks["task_0003"]],
            twin_urls=twin.urls,
            environ=ENVIRON,
            rate_limiters=NO_LIMIT,
        )
        sent = server.requests
    assert trace.status == "error"
    assert "model request failed" in (trace.status_reason or "")
    assert sent == 1  # retries: 0 -- the slow request was not sent again


def test_a_tool_result_is_cut_to_the_room_left_in_the_window(
    tmp_path: Path, twin: TwinServer, tasks: dict[str, TaskSpec]
) -> None:
    # The first request read 600 tokens and wrote 20: of a 1024-token window with 200 kept for
    # the answer, 1024 - 200 - 620 - 16 (the result's own overhead) = 188 tokens remain, shown
    # as 3 characters a token: 564 characters.
    with ScriptedServer(SearchThenAnswer(prompt_tokens=600, completion_tokens=20)) as server:
        cell = _cell(
            tmp_path,
            server.base_url,
            "",
            "        context_window: 1024\n        max_output_tokens: 200\n",
        )
        (trace,) = run_cell(
            cell,
            [tasks["task_0003"]],
            twin_urls=twin.urls,
            environ=ENVIRON,
            rate_limiters=NO_LIMIT,
        )
    assert trace.status == "ok", trace.status_reason
    shown = server.bodies[1]["messages"][-1]["content"]
    (call,) = trace.tool_calls
    assert len(call.result) > 564  # the trace keeps the whole result
    assert len(shown) == 564
    marker = (
        f"\n[... truncated to fit the model's context window: {len(call.result)} characters in "
        "total]"
    )
    assert shown == call.result[: 564 - len(marker)] + marker
    assert call.shown_chars == 564 - len(marker)


def test_a_request_that_cannot_fit_is_not_sent(
    tmp_path: Path, twin: TwinServer, tasks: dict[str, TaskSpec]
) -> None:
    # 900 + 20 tokens already used: no room for any result, and the next request (920 tokens,
    # plus the marker, plus 200 for the answer) cannot fit 1024.
    with ScriptedServer(SearchThenAnswer(prompt_tokens=900, completion_tokens=20)) as server:
        cell = _cell(
            tmp_path,
            server.base_url,
            "",
            "        context_window: 1024\n        max_output_tokens: 200\n",
        )
        (trace,) = run_cell(
            cell,
            [tasks["task_0003"]],
            twin_urls=twin.urls,
            environ=ENVIRON,
            rate_limiters=NO_LIMIT,
        )
        sent = server.requests
    assert sent == 1
    assert trace.status == "error"
    assert (trace.status_reason or "").startswith("context_overflow: ")
    assert "context window of 1024 tokens; it was not sent" in (trace.status_reason or "")
    (call,) = trace.tool_calls
    assert call.shown_chars == 0


@pytest.mark.parametrize("host", ["api.openai.com"])
def test_openai_itself_gets_max_completion_tokens(host: str) -> None:
    from datagouv_eval_pipeline.core.benchmark.cells import CellModel
    from datagouv_eval_pipeline.core.benchmark.config import ModelCallSettings, ProviderKind
    from datagouv_eval_pipeline.pipeline.agents.models import live_model

    model = CellModel(
        "openai",
        "gpt-test",
        ProviderKind.OPENAI_COMPATIBLE,
        f"https://{host}/v1",
        "OPENAI_API_KEY",
        None,
        None,
        "EUR",
        settings=ModelCallSettings(max_output_tokens=64, timeout_s=12.0),
    )
    built = live_model(model, environ={"OPENAI_API_KEY": "sk-x"})
    assert built.profile.get("openai_chat_supports_max_completion_tokens") is True
    assert built.settings == {"max_tokens": 64}
    assert built.client.timeout == 12.0
