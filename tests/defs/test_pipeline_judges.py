"""The pipeline's judge: hybrid against a local OpenAI-compatible judge server.

The judge server is a real HTTP server on 127.0.0.1 reached through the real OpenAI client;
the agents are the offline baselines against the twin. One MCP cell, one task.
"""

from pathlib import Path
from typing import Any

import dagster as dg
import pydantic_ai.models
import pytest

from datagouv_eval_pipeline.defs.judge_scores import judge_scores
from datagouv_eval_pipeline.defs.resources import (
    CatalogResource,
    ExperimentSettings,
    JudgeResource,
    RunStoreResource,
    WarehouseResource,
)
from datagouv_eval_pipeline.defs.warehouse import warehouse
from tests.defs.pipeline_helpers import CELL_STAGES, MCP_CELLS, Paths, cells_instance, query
from tests.judges.judge_server import garbage, grading
from tests.providers.scripted_server import ScriptedServer, always

# OpenAI's quota (500 requests a minute, models.yml) spaces the judge's requests 0.12 s apart;
# Mistral's 60 made each of the tens of requests to the local server wait a second.
MODEL = "openai/gpt-5.4-nano-2026-03-17"
CELL = next(key for key in MCP_CELLS if "thorough" in key and "0.2.26" in key)
# task_0002's criteria are all decided by its hints and assertions; task_0010 keeps two that only
# a reader can judge (whether the answer concludes clearly, one conclusion per file).
TASK = "task_0010"


@pytest.fixture(autouse=True)
def allow_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-for-a-local-server")
    # Restored after the test (the default is True): a leaked False fails later tests' requests.
    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)


def _resources(paths: Paths, judge: JudgeResource) -> dict[str, Any]:
    return {
        "experiment": ExperimentSettings(task_ids=[TASK]),
        "catalog": CatalogResource(),
        "run_store": RunStoreResource(root=str(paths.store_root)),
        "warehouse": WarehouseResource(path=str(paths.db)),
        "judge": judge,
    }


def _run(paths: Paths, judge: JudgeResource, *, stages: list[Any] = CELL_STAGES) -> None:
    cell = dg.materialize(
        stages,
        partition_key=CELL,
        resources=_resources(paths, judge),
        instance=cells_instance(CELL),
    )
    assert cell.success
    assert dg.materialize([warehouse], resources=_resources(paths, judge)).success


def _criteria(paths: Paths) -> list[tuple[Any, ...]]:
    return query(
        paths.db,
        "SELECT tier, name, status, passed, judge_id, prompt_hash, reason, error "
        "FROM eval.verdicts WHERE kind = 'criterion' ORDER BY tier, name",
    )


def test_the_hybrid_judge_decides_every_criterion_and_caches(tmp_path: Path) -> None:
    paths = Paths(tmp_path)
    # The deterministic run first: what the rules decide alone.
    _run(paths, JudgeResource())
    ruled = _criteria(paths)
    assert ruled and {row[4] for row in ruled} == {"deterministic@3"}
    rules_open = [row for row in ruled if row[2] == "unscored"]
    assert rules_open, "task_0010 has criteria the rules cannot decide"

    with ScriptedServer(grading) as server:
        judge = JudgeResource(kind="hybrid", model=MODEL, base_url=server.base_url)
        _run(paths, judge, stages=[judge_scores])
        first = server.requests
        rows = _criteria(paths)
        # Coverage 1.0: every criterion decided, by the rules where they could, else the LLM.
        assert [row[2] for row in rows] == ["ok"] * len(rows)
        for before, after in zip(ruled, rows, strict=True):
            if before[2] == "ok":
                assert after[3:5] == before[3:5]  # a rule's decision stands, and says so
            else:
                assert after[4] == f"llm:{MODEL}" and after[3] is True and after[5]
        (questions, requests, judge_id) = query(
            paths.db, "SELECT judge_questions, judge_requests, judge_id FROM eval.runs"
        )[0]
        assert judge_id == f"hybrid:{MODEL}"
        # Every request the server saw is counted; none was retried: one per question.
        assert requests == first
        assert questions == first
        # Re-running the stage asks the server nothing: every answer is in the judge cache.
        _run(paths, judge, stages=[judge_scores])
        assert server.requests == first
        assert query(paths.db, "SELECT judge_questions, judge_requests FROM eval.runs") == [(0, 0)]
    # Criteria of the minimal tier count in both tiers: each unique criterion is asked once.
    unique_open = {row[1] for row in rules_open}
    assert first >= len(unique_open)


def test_a_failing_judge_server_leaves_unscored_verdicts_with_reasons(tmp_path: Path) -> None:
    paths = Paths(tmp_path)
    _run(paths, JudgeResource())
    ruled = _criteria(paths)
    requests = {}
    for name, script, error in [
        ("garbage", garbage, "judge provider error: ModelAPIError: Failed to decode"),
        ("500", always(500), "judge provider error: "),
    ]:
        with ScriptedServer(script) as server:
            judge = JudgeResource(kind="hybrid", model=MODEL, base_url=server.base_url)
            _run(paths, judge, stages=[judge_scores])
        requests[name] = server.requests
        rows = _criteria(paths)
        for before, after in zip(ruled, rows, strict=True):
            if before[2] == "ok":
                assert after[2:5] == before[2:5], name  # the rules' decisions stand
            else:
                assert after[2] == "unscored" and after[3] is None, name
                assert after[7].startswith(error) and "(rules: " in after[7], after[7]
                assert name != "500" or "status_code: 500" in after[7]
    # The same questions were asked both times: garbage is not retried, a 500 is, exactly
    # retries (2, judge.yml) times, and the SDK's own retries are off.
    assert requests["garbage"] > 0
    assert requests["500"] == 3 * requests["garbage"]
