"""The mapping stage classifies what the rules cannot decide, with the configured LLM judge.

A code cell runs in the real sandbox with a scripted agent whose first call requests a catalog
URL no endpoint of the registry matches (the rules leave it undecided even from the wire). The
judge is a real OpenAI-compatible server on 127.0.0.1 reached through the real client: valid
classifications, garbage, or 500s. Dagster materializes the real assets on a temporary run
store and warehouse.
"""

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import dagster as dg
import pydantic_ai.models
import pytest

from datagouv_eval_pipeline.core.benchmark.cells import Cell, _cell_model
from datagouv_eval_pipeline.core.benchmark.loader import load_benchmark_config
from datagouv_eval_pipeline.core.judges.hybrid import HybridJudge
from datagouv_eval_pipeline.core.providers.limits import process_rate_limiters
from datagouv_eval_pipeline.core.tasks.spec import TaskSpec
from datagouv_eval_pipeline.defs.action_mappings import action_mappings
from datagouv_eval_pipeline.defs.judge_scores import judge_scores
from datagouv_eval_pipeline.defs.resources import JudgeResource
from datagouv_eval_pipeline.defs.warehouse import warehouse
from datagouv_eval_pipeline.pipeline.agents.capabilities import default_sandbox
from datagouv_eval_pipeline.pipeline.agents.output import FinalAnswer
from datagouv_eval_pipeline.pipeline.agents.runner import CellRun, execute_cell, rate_limit_of
from datagouv_eval_pipeline.pipeline.experiment import stages
from datagouv_eval_pipeline.pipeline.experiment.stages import ACTION_MAPPINGS
from datagouv_eval_pipeline.world.replay import tool_call_completion
from datagouv_eval_pipeline.world.sandbox.base import SandboxUnavailableError
from datagouv_eval_pipeline.world.sandbox.local import LocalSandbox
from tests.agents.runner.helpers import factory, scripted
from tests.defs.pipeline_helpers import CELL_STAGES, Paths, cells_instance, query, resources
from tests.judges.judge_server import garbage, grading
from tests.providers.scripted_server import Reply, ScriptedServer, always

# OpenAI's quota (500 requests a minute, models.yml) spaces the judge's requests 0.12 s apart;
# Mistral's 60 made each of the tens of requests to the local server wait a second.
MODEL = "openai/gpt-5.4-nano-2026-03-17"
CELL = "offline~baseline-thorough__code__data_gouv_context"
TASK = "task_0002"
UNDECIDED = "https://www.data.gouv.fr/api/1/tags/suggest/?q=catalogue"
DATASET = "5d13a8b6634f41070a43dff3"


@pytest.fixture(autouse=True)
def _setup(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    sandbox = default_sandbox()
    assert isinstance(sandbox, LocalSandbox)
    try:
        _ = sandbox.isolation
    except SandboxUnavailableError as error:
        pytest.skip(f"no local sandbox here: {error}")
    agent = scripted(
        [
            ("execute_python", {"code": f"import requests\nprint(requests.get('{UNDECIDED}'))"}),
            (
                "execute_python",
                {
                    "code": "import requests\nprint(requests.get("
                    f"'https://www.data.gouv.fr/api/1/datasets/{DATASET}/').json()['title'])"
                },
            ),
            FinalAnswer(answer=f"Le catalogue des données (identifiant {DATASET})."),
        ]
    )
    real = execute_cell

    def with_agent(cell: Cell, tasks: Sequence[TaskSpec], **options: Any) -> CellRun:
        return real(cell, tasks, model_factory=factory(agent), **options)

    monkeypatch.setattr(stages, "execute_cell", with_agent)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-for-a-local-server")
    # Restored after the test (monkeypatch): setting False here refused the model requests of
    # every later test of the session (the provider-pool tests failed only in the whole suite).
    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)
    yield


CLASSIFIED = {
    "actions": [{"action": "search.datasets", "args": {"query": "catalogue"}}],
    "reason": "tag suggestions to find datasets",
}


def classifying(body: dict[str, Any]) -> Reply:
    """:func:`grading`, except that a call is classified as a dataset search."""
    tool = body["tools"][0]["function"]
    if "actions" not in tool["parameters"]["properties"]:
        return grading(body)
    completion = tool_call_completion(
        str(body["model"]), [(tool["name"], CLASSIFIED)], prompt_tokens=200, completion_tokens=20
    )
    return Reply(200, completion)


def _materialize(paths: Paths, judge: JudgeResource, stages_: list[Any]) -> None:
    settings = {**resources(paths, [TASK]), "judge": judge}
    instance = cells_instance(CELL)
    assert dg.materialize(
        stages_, partition_key=CELL, resources=settings, instance=instance
    ).success
    assert dg.materialize([warehouse], resources=settings).success


def _mapping(paths: Paths) -> dict[str, Any]:
    document = paths.store.read(ACTION_MAPPINGS, CELL)
    assert document is not None
    (result,) = document["results"]
    mapping = result["mapping"]
    return {"document": document, "mapping": mapping}


def _undecided_call(paths: Paths) -> str:
    (call_id,) = [
        c["call_id"] for c in _mapping(paths)["mapping"]["calls"] if c["status"] == "unmapped"
    ]
    return str(call_id)


def test_the_mapping_stage_classifies_undecided_calls_and_caches(tmp_path: Path) -> None:
    paths = Paths(tmp_path)
    _materialize(paths, JudgeResource(), CELL_STAGES)  # the rules alone
    ruled = _mapping(paths)
    assert ruled["document"]["classifier"] is None and "classifications" not in ruled["mapping"]
    call_id = _undecided_call(paths)
    assert "catalog URL(s) matching no endpoint" in next(
        c["reason"] for c in ruled["mapping"]["calls"] if c["call_id"] == call_id
    )

    with ScriptedServer(classifying) as server:
        judge = JudgeResource(kind="hybrid", model=MODEL, base_url=server.base_url)
        _materialize(paths, judge, [action_mappings])
        asked = server.requests
        classified = _mapping(paths)
        assert classified["document"]["classifier"] == f"hybrid:{MODEL}"
        (one,) = classified["mapping"]["classifications"]
        assert one["call_id"] == call_id and one["model"] == MODEL
        assert one["actions"] == [{"action": "search.datasets", "args": {"query": "catalogue"}}]
        verdict = one["verdict"]
        assert verdict["status"] == "ok" and verdict["judge_id"] == f"llm:{MODEL}"
        assert verdict["prompt_hash"] and verdict["cached"] is False
        # One question, one request: the rules decided every other call.
        assert asked == 1 and classified["mapping"]["judge_spend"]["questions"] == 1
        assert classified["document"]["judge_spend"]["questions"] == 1

        # The judge stage takes the mapping stage's classification and does not ask again.
        _materialize(paths, judge, [judge_scores])
        after_judging = server.requests
        bodies = [str(b["messages"][-1]["content"]) for b in server.bodies[asked:]]
        assert not any(UNDECIDED in body and "<call>" in body for body in bodies)
        rows = query(
            paths.db,
            "SELECT action, args, origin, reason FROM eval.action_instances "
            f"WHERE source_call_id = '{call_id}'",
        )
        assert rows == [
            (
                "search.datasets",
                '{"query": "catalogue"}',
                "classification",
                f"classified by llm:{MODEL}",
            )
        ]
        (row,) = query(
            paths.db,
            "SELECT status, passed, judge_id, prompt_hash FROM eval.verdicts "
            f"WHERE kind = 'classification' AND name = '{call_id}'",
        )
        assert row[:3] == ("ok", True, f"llm:{MODEL}") and row[3] == verdict["prompt_hash"]

        # Re-running both stages makes no judge call: every answer is in the judge cache.
        _materialize(paths, judge, [action_mappings, judge_scores])
        assert server.requests == after_judging
        again = _mapping(paths)
        assert again["mapping"]["judge_spend"]["questions"] == 0
        assert again["mapping"]["classifications"][0]["verdict"]["cached"] is True
        assert query(paths.db, "SELECT judge_questions, judge_requests FROM eval.runs") == [(0, 0)]


@pytest.mark.parametrize(
    ("script", "error"),
    [
        (garbage, "judge provider error: ModelAPIError: Failed to decode"),
        (always(500), "judge provider error: "),
    ],
    ids=["garbage", "500"],
)
def test_an_undecidable_classification_is_null_with_its_reason(
    tmp_path: Path, script: Any, error: str
) -> None:
    paths = Paths(tmp_path)
    _materialize(paths, JudgeResource(), CELL_STAGES)
    call_id = _undecided_call(paths)
    with ScriptedServer(script) as server:
        judge = JudgeResource(kind="hybrid", model=MODEL, base_url=server.base_url)
        _materialize(paths, judge, [action_mappings, judge_scores])
    (one,) = _mapping(paths)["mapping"]["classifications"]
    assert one["actions"] == [] and one["verdict"]["status"] == "unscored"
    assert one["verdict"]["error"].startswith(error)
    assert query(
        paths.db, f"SELECT count(*) FROM eval.action_instances WHERE source_call_id = '{call_id}'"
    ) == [(0,)]
    (row,) = query(
        paths.db,
        "SELECT status, passed, judge_id, error FROM eval.verdicts "
        f"WHERE kind = 'classification' AND name = '{call_id}'",
    )
    assert row[:3] == ("unscored", None, f"llm:{MODEL}") and row[3].startswith(error)


def test_the_mapping_stage_judge_shares_the_agents_rate_limiter() -> None:

    # What the asset builds (the same resource as the judge stage's).
    judge = JudgeResource(kind="hybrid", model=MODEL, base_url="http://127.0.0.1:9/v1").judge()
    assert isinstance(judge, HybridJudge)
    models = load_benchmark_config().models
    provider = next(p for p in models.providers if p.name == MODEL.split("/")[0])
    entry = next(e for e in provider.models if e.name == MODEL.split("/")[1])
    agent_model = _cell_model(provider, entry, models.currency)
    # The limiter the agent runner takes for that model's runs, from the process's limiters.
    assert judge.llm.limiter_of("default") is process_rate_limiters().get(
        *rate_limit_of(agent_model)
    )
