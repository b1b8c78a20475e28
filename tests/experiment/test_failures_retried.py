"""Failures are not results: a run that ended without one is asked again on the next run.

A real OpenAI-compatible server on 127.0.0.1 plays the provider (it hangs, answers text forever,
fails or answers garbage); the agent stage runs the same cell twice over one cache, and the
server counts what the second run asked.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from datagouv_eval_pipeline.core.benchmark.cells import Cell, CellModel, expand_cells
from datagouv_eval_pipeline.core.benchmark.config import ProviderKind
from datagouv_eval_pipeline.core.benchmark.loader import load_benchmark_config
from datagouv_eval_pipeline.core.providers.limits import RateLimit, RateLimiters
from datagouv_eval_pipeline.core.providers.retry import RetryPolicy
from datagouv_eval_pipeline.core.tasks import TASK_SPECS_DIR, TaskSpec, load_task_specs
from datagouv_eval_pipeline.pipeline.agents.limits import RunBudget
from datagouv_eval_pipeline.pipeline.agents.runner import RunSettings
from datagouv_eval_pipeline.pipeline.experiment.cache import AgentRunCache
from datagouv_eval_pipeline.pipeline.experiment.stages import AgentStageResult, run_agents
from datagouv_eval_pipeline.world.replay import text_completion, tool_call_completion
from tests.providers.scripted_server import Reply, Script, ScriptedServer, always

KEY_ENV = "DGEVAL_TEST_PROVIDER_KEY"
SECRET = "sk-test-failures-are-not-results"
RELEASE = threading.Event()  # set at teardown, so a hanging handler thread ends


@pytest.fixture(scope="module")
def task() -> TaskSpec:
    return next(s for s in load_task_specs([TASK_SPECS_DIR]) if s.task_id == "task_0002")


@pytest.fixture(autouse=True)
def _release_hanging_handlers() -> Iterator[None]:
    RELEASE.clear()
    yield
    RELEASE.set()


@functools.cache
def _no_tools_cell() -> Cell:
    cells = expand_cells(load_benchmark_config())
    return next(c for c in cells if not c.capabilities and c.model.kind == "offline")


def live_cell(base_url: str) -> Cell:
    """A cell without tools whose model is the server at ``base_url``."""
    offline = _no_tools_cell()
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
    return dataclasses.replace(offline, key=offline.key + "__test", model=model)


def hangs(_body: dict[str, Any]) -> Reply:
    RELEASE.wait(timeout=30)  # never answers while the test runs
    return Reply(503)


def chats_forever(body: dict[str, Any]) -> Reply:
    # Text instead of the final-answer tool: the agent re-prompts until its request budget ends.
    return Reply(200, text_completion(str(body["model"]), "Je réfléchis encore…"))


def garbage(_body: dict[str, Any]) -> Reply:
    return Reply(200, raw=b"<html>502 Bad Gateway</html>")


def answers(body: dict[str, Any]) -> Reply:
    final = {"answer": "2066 jeux de données.", "declined": False, "cited_urls": [], "ids_used": []}
    return Reply(200, tool_call_completion(str(body["model"]), [("final_answer", final)]))


def run_twice(script: Script, task: TaskSpec, cache_dir: Path) -> tuple[list[Any], int, int]:
    """Run the cell twice over one cache: the traces, and the requests each run sent."""
    settings = RunSettings(
        budget=RunBudget(max_requests=2, wall_timeout_s=1.0),
        retry=RetryPolicy(retries=0, jitter_s=0),
    )
    cache = AgentRunCache(cache_dir)
    results: list[AgentStageResult] = []
    seen: list[int] = []
    with ScriptedServer(script) as server:
        for _ in range(2):
            results.append(
                run_agents(
                    live_cell(server.base_url),
                    [task],
                    twin_urls=None,
                    snapshot_id="snap-a",
                    cache=cache,
                    settings=settings,
                    environ={KEY_ENV: SECRET},
                    rate_limiters=RateLimiters(default=RateLimit()),
                )
            )
            seen.append(server.requests)
        RELEASE.set()
    traces = [result.document.traces[0] for result in results]
    assert [(r.executed, r.reused) for r in results] == [(1, 0), (1, 0)], traces
    return traces, seen[0], seen[1] - seen[0]


def test_a_hanging_provider_is_asked_again_on_the_next_run(task: TaskSpec, tmp_path: Path) -> None:
    traces, first, second = run_twice(hangs, task, tmp_path)
    assert [t.status for t in traces] == ["budget_exceeded", "budget_exceeded"]
    assert traces[0].status_reason == "wall-clock budget of 1 s exceeded"
    # The server saw the question again: the failure was not taken from the cache.
    assert (first, second) == (1, 1)
    assert not any(tmp_path.rglob("*.json"))


def test_a_run_ended_by_its_request_budget_is_asked_again(task: TaskSpec, tmp_path: Path) -> None:
    traces, first, second = run_twice(chats_forever, task, tmp_path)
    assert [t.status for t in traces] == ["budget_exceeded", "budget_exceeded"]
    assert "request_limit of 2" in (traces[0].status_reason or "")
    assert (first, second) == (2, 2)
    assert not any(tmp_path.rglob("*.json"))


@pytest.mark.parametrize("script", [always(500), garbage], ids=["http-500", "garbage"])
def test_a_provider_error_is_asked_again(task: TaskSpec, tmp_path: Path, script: Script) -> None:
    traces, first, second = run_twice(script, task, tmp_path)
    assert [t.status for t in traces] == ["error", "error"]
    assert traces[0].status_reason is not None
    assert traces[0].status_reason.startswith("model request failed")
    assert (first, second) == (1, 1)


def test_a_result_is_reused_and_not_asked_again(task: TaskSpec, tmp_path: Path) -> None:
    settings = RunSettings(retry=RetryPolicy(retries=0, jitter_s=0))
    cache = AgentRunCache(tmp_path)
    with ScriptedServer(answers) as server:
        runs = [
            run_agents(
                live_cell(server.base_url),
                [task],
                twin_urls=None,
                snapshot_id="snap-a",
                cache=cache,
                settings=settings,
                environ={KEY_ENV: SECRET},
                rate_limiters=RateLimiters(default=RateLimit()),
            )
            for _ in range(2)
        ]
        assert server.requests == 1
    assert [(r.executed, r.reused) for r in runs] == [(1, 0), (0, 1)]
    assert runs[1].document.traces[0].status == "ok"
