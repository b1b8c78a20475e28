"""A crash between two stages never pairs a stale judgement with a new answer.

The stage documents are written in order (agent runs, mappings, judge scores) and the
warehouse loads whatever is there. Each later document records the digest of the agent-run
document it was computed from; the tests below stop the sequence at every gap, with the same
(task, repeat) keys but a new answer (the case the issue hit: "Je ne sais pas" stored with
accuracy 1), and check what the warehouse would load.
"""

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from datagouv_eval_pipeline.core.benchmark.cells import Cell, expand_cells
from datagouv_eval_pipeline.core.benchmark.loader import load_benchmark_config
from datagouv_eval_pipeline.core.judges.deterministic import DeterministicJudge
from datagouv_eval_pipeline.core.tasks import TASK_SPECS_DIR, TaskSpec, load_task_specs
from datagouv_eval_pipeline.core.traces import load_trace
from datagouv_eval_pipeline.pipeline.experiment.documents import (
    ActionMappingsDocument,
    AgentRunsDocument,
    DocumentError,
    JudgeScoresDocument,
)
from datagouv_eval_pipeline.pipeline.experiment.stages import (
    ACTION_MAPPINGS,
    AGENT_RUNS,
    JUDGE_SCORES,
    StageInputError,
    cell_documents,
    judge_cell,
    map_actions,
)
from datagouv_eval_pipeline.pipeline.experiment.store import RunStore, RunStoreError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "traces"


@pytest.fixture(scope="module")
def cell() -> Cell:
    cells = expand_cells(load_benchmark_config())
    return next(c for c in cells if c.mcp_version == "0.2.26" and c.skills_version is None)


@pytest.fixture(scope="module")
def tasks() -> dict[str, TaskSpec]:
    return {s.task_id: s for s in load_task_specs([TASK_SPECS_DIR])}


def _document(cell: Cell, answer: str | None = None) -> AgentRunsDocument:
    trace = load_trace(FIXTURES / "task_0002_mcp.json")
    if answer is not None:
        trace = trace.model_copy(update={"answer": answer})
    return AgentRunsDocument.of(cell.to_record(), [trace])


@pytest.fixture
def old(cell: Cell, tasks: dict[str, TaskSpec]) -> dict[str, Any]:
    """A consistent set of documents for the fixture's right answer."""
    agent = _document(cell)
    mappings = map_actions(agent)
    scores = judge_cell(agent, mappings, tasks, DeterministicJudge())
    return {AGENT_RUNS: agent, ACTION_MAPPINGS: mappings, JUDGE_SCORES: scores}


def test_every_later_document_records_the_digest_of_its_agent_runs(
    old: dict[str, Any],
) -> None:
    digests = {old[ACTION_MAPPINGS].agent_runs_digest, old[JUDGE_SCORES].agent_runs_digest}
    assert digests == {old[AGENT_RUNS].digest()} and len(next(iter(digests))) == 16


def test_the_digest_is_the_same_for_the_document_read_back(
    old: dict[str, Any], tmp_path: Path
) -> None:
    store = RunStore(tmp_path)
    for stage, document in old.items():
        store.write(stage, "c", document)
        again = store.read_document(stage, "c", type(document))
        assert isinstance(again, BaseModel)
        assert again.model_dump(mode="json") == store.read(stage, "c")
    agent = store.read_document(AGENT_RUNS, "c", AgentRunsDocument)
    assert agent is not None and agent.digest() == old[AGENT_RUNS].digest()


def test_all_three_current_load_together(old: dict[str, Any]) -> None:
    documents = cell_documents(old[AGENT_RUNS], old[ACTION_MAPPINGS], old[JUDGE_SCORES])
    assert documents.stale == {}
    assert [run.score for run in documents.load.runs] == [
        result.score for result in old[JUDGE_SCORES].results
    ]


def test_crash_after_new_agent_runs_loads_the_new_answer_without_old_scores(
    cell: Cell, tasks: dict[str, TaskSpec], old: dict[str, Any]
) -> None:
    new_agent = _document(cell, answer="Je ne sais pas")
    documents = cell_documents(new_agent, old[ACTION_MAPPINGS], old[JUDGE_SCORES])
    (run,) = documents.load.runs
    assert run.trace.answer == "Je ne sais pas"
    assert (run.mapping, run.score, run.judgement) == (None, None, None)
    assert set(documents.stale) == {ACTION_MAPPINGS, JUDGE_SCORES}
    # And the judge stage refuses to judge the new runs with the old mapping.
    with pytest.raises(StageInputError, match="another agent_runs document"):
        judge_cell(new_agent, old[ACTION_MAPPINGS], tasks, DeterministicJudge())


def test_crash_after_new_mappings_loads_them_without_old_scores(
    cell: Cell, old: dict[str, Any]
) -> None:
    new_agent = _document(cell, answer="Je ne sais pas")
    new_mappings = map_actions(new_agent)
    documents = cell_documents(new_agent, new_mappings, old[JUDGE_SCORES])
    (run,) = documents.load.runs
    (result,) = new_mappings.results
    assert run.mapping == result.mapping.trace_mapping()
    assert (run.score, run.judgement) == (None, None)
    assert documents.stale == {JUDGE_SCORES: "computed from another agent_runs document"}


def test_after_the_judge_stage_the_new_scores_load(
    cell: Cell, tasks: dict[str, TaskSpec], old: dict[str, Any]
) -> None:
    new_agent = _document(cell, answer="Je ne sais pas")
    new_mappings = map_actions(new_agent)
    new_scores = judge_cell(new_agent, new_mappings, tasks, DeterministicJudge())
    documents = cell_documents(new_agent, new_mappings, new_scores)
    assert documents.stale == {}
    (run,) = documents.load.runs
    (result,) = new_scores.results
    assert run.judgement == result.judgement
    assert result.judgement != old[JUDGE_SCORES].results[0].judgement  # the answer changed


def test_a_trace_without_task_id_names_the_file_and_the_field(cell: Cell, tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    document = _document(cell).to_json()
    del document["traces"][0]["task_id"]
    path = store.write(AGENT_RUNS, cell.key, document)
    with pytest.raises(RunStoreError) as caught:
        store.read_document(AGENT_RUNS, cell.key, AgentRunsDocument)
    assert str(caught.value) == f"{path}: traces[0].task_id: Field required"


@pytest.mark.parametrize(
    ("stage", "model", "field", "value", "message"),
    [
        (
            JUDGE_SCORES,
            "judge",
            "results",
            [{"task_id": "task_0002", "repeat": 0, "judgement": None, "score": {"task_id": "t"}}],
            "results[0].score.minimal: Field",
        ),
        (ACTION_MAPPINGS, "map", "unmapped_calls", "many", "unmapped_calls: Input should be"),
        (ACTION_MAPPINGS, "map", "agent_runs_digest", None, "agent_runs_digest: Input should"),
        (
            ACTION_MAPPINGS,
            "map",
            "results",
            [{"task_id": "task_0002", "mapping": {}}],
            "results[0].repeat: Field required",
        ),
        (
            JUDGE_SCORES,
            "judge",
            "results",
            [{"task_id": "task_0002", "repeat": 0, "judgement": {"task_id": 1}, "score": None}],
            "results[0].judgement.task_id: Input",
        ),
    ],
)
def test_a_schema_invalid_later_document_names_the_file_and_the_field(
    old: dict[str, Any],
    tmp_path: Path,
    stage: str,
    model: str,
    field: str,
    value: Any,
    message: str,
) -> None:
    store = RunStore(tmp_path)
    document = old[stage].to_json()
    document[field] = value
    path = store.write(stage, "c", document)
    with pytest.raises(RunStoreError) as caught:
        store.read_document(stage, "c", type(old[stage]))
    assert str(caught.value).startswith(f"{path}: {message}")


def test_a_corrupt_run_store_file_names_itself(cell: Cell, tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    path = store.path(AGENT_RUNS, cell.key)
    path.parent.mkdir(parents=True)
    path.write_text('{"cell": {', encoding="utf-8")
    with pytest.raises(RunStoreError, match=f"^{path}: not valid JSON"):
        store.read(AGENT_RUNS, cell.key)


def test_a_status_the_trace_format_does_not_know_names_the_field(cell: Cell) -> None:
    document = _document(cell).to_json()
    document["traces"][0]["status"] = "exploded"
    with pytest.raises(DocumentError, match=r"^agent_runs\.json: traces\[0\]\.status: "):
        AgentRunsDocument.parse(document, "agent_runs.json")


def _parallel_lists(document: dict[str, Any]) -> dict[str, Any]:
    """A ``judge_scores`` document in the shape written before results were kept per run."""
    results = document.pop("results")
    return {
        **document,
        "runs": [[result["task_id"], result["repeat"]] for result in results],
        "judgements": [result["judgement"] for result in results],
        "scores": [result["score"] for result in results],
    }


def test_a_judge_document_of_parallel_lists_reads_as_results_per_run(
    old: dict[str, Any], tmp_path: Path
) -> None:
    current = old[JUDGE_SCORES]
    store = RunStore(tmp_path)
    stored = _parallel_lists(current.to_json())
    assert list(stored) == [
        "cell",
        "agent_runs_digest",
        "judge_id",
        "references",
        "runs",
        "judgements",
        "scores",
    ]
    store.write(JUDGE_SCORES, "c", stored)
    again = store.read_document(JUDGE_SCORES, "c", JudgeScoresDocument)
    assert again == current
    assert again is not None and again.runs() == [("task_0002", 0)]
    # It pairs with its agent runs as the new shape does, and is rewritten in the new shape.
    documents = cell_documents(old[AGENT_RUNS], old[ACTION_MAPPINGS], again)
    assert documents.stale == {}
    assert [run.score for run in documents.load.runs] == [r.score for r in current.results]
    assert again.to_json() == current.to_json()


def test_a_judge_document_of_parallel_lists_of_different_lengths_is_refused(
    old: dict[str, Any], tmp_path: Path
) -> None:
    store = RunStore(tmp_path)
    stored = _parallel_lists(old[JUDGE_SCORES].to_json())
    stored["scores"] = []
    path = store.write(JUDGE_SCORES, "c", stored)
    with pytest.raises(RunStoreError) as caught:
        store.read_document(JUDGE_SCORES, "c", JudgeScoresDocument)
    assert str(caught.value).startswith(
        f"{path}: <document>: Value error, runs, judgements and scores differ in length (1, 1, 0)"
    )


def _mapping_lists(document: dict[str, Any]) -> dict[str, Any]:
    """An ``action_mappings`` document in the shape written before mappings were kept per run."""
    results = document.pop("results")
    at = list(document).index("unmapped_calls")
    items = list(document.items())
    return dict(
        [
            *items[:at],
            ("runs", [[result["task_id"], result["repeat"]] for result in results]),
            ("mappings", [result["mapping"] for result in results]),
            *items[at:],
        ]
    )


def test_a_mapping_document_of_parallel_lists_reads_as_one_mapping_per_run(
    cell: Cell, tasks: dict[str, TaskSpec], tmp_path: Path
) -> None:
    trace = load_trace(FIXTURES / "task_0002_mcp.json")
    agent = AgentRunsDocument.of(
        cell.to_record(), [trace, trace.model_copy(update={"repeat": 1, "answer": "Non"})]
    )
    current = map_actions(agent)
    store = RunStore(tmp_path)
    stored = _mapping_lists(current.to_json())
    assert list(stored) == [
        "cell",
        "agent_runs_digest",
        "runs",
        "mappings",
        "unmapped_calls",
        "classifier",
    ]
    store.write(ACTION_MAPPINGS, "c", stored)
    again = store.read_document(ACTION_MAPPINGS, "c", ActionMappingsDocument)
    assert again == current
    assert again is not None and again.runs() == [("task_0002", 0), ("task_0002", 1)]
    assert [r.mapping for r in again.results] == [r.mapping for r in current.results]
    # The judge stage and the warehouse pair it with its agent runs as the new shape.
    judged = judge_cell(agent, again, tasks, DeterministicJudge())
    documents = cell_documents(agent, again, judged)
    assert documents.stale == {}
    assert again.to_json() == current.to_json()


def test_a_mapping_document_round_trips_in_its_per_run_shape(
    old: dict[str, Any], tmp_path: Path
) -> None:
    current = old[ACTION_MAPPINGS]
    stored = current.to_json()
    assert list(stored["results"][0]) == ["task_id", "repeat", "mapping"]
    assert "runs" not in stored and "mappings" not in stored
    store = RunStore(tmp_path)
    store.write(ACTION_MAPPINGS, "c", stored)
    assert store.read_document(ACTION_MAPPINGS, "c", ActionMappingsDocument) == current
    assert store.read(ACTION_MAPPINGS, "c") == stored


def test_a_mapping_document_of_parallel_lists_of_different_lengths_is_refused(
    old: dict[str, Any], tmp_path: Path
) -> None:
    store = RunStore(tmp_path)
    stored = _mapping_lists(old[ACTION_MAPPINGS].to_json())
    stored["runs"].append(["task_0002", 1])
    path = store.write(ACTION_MAPPINGS, "c", stored)
    with pytest.raises(RunStoreError) as caught:
        store.read_document(ACTION_MAPPINGS, "c", ActionMappingsDocument)
    assert str(caught.value).startswith(
        f"{path}: <document>: Value error, runs and mappings differ in length (2, 1)"
    )
