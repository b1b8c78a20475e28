"""The pure stage functions: mapping documents, judging a cell, aligning a cell's load."""

import re
from pathlib import Path

import pytest

from datagouv_eval_pipeline.core.benchmark.cells import Cell, expand_cells
from datagouv_eval_pipeline.core.benchmark.loader import load_benchmark_config
from datagouv_eval_pipeline.core.judges.deterministic import DeterministicJudge
from datagouv_eval_pipeline.core.metrics.catalog import CatalogObject, StaticCatalogLookup
from datagouv_eval_pipeline.core.semantic.mapper import map_trace
from datagouv_eval_pipeline.core.tasks import TASK_SPECS_DIR, TaskSpec, load_task_specs
from datagouv_eval_pipeline.core.tasks.references import Reference
from datagouv_eval_pipeline.core.traces import Trace, load_trace
from datagouv_eval_pipeline.pipeline.experiment.documents import (
    AgentRunsDocument,
    StoredTraceMapping,
)
from datagouv_eval_pipeline.pipeline.experiment.stages import (
    StageInputError,
    cell_load,
    judge_cell,
    map_actions,
)
from datagouv_eval_pipeline.pipeline.warehouse import RunLoad

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "traces"


@pytest.fixture(scope="module")
def cell() -> Cell:
    cells = expand_cells(load_benchmark_config())
    return next(c for c in cells if c.mcp_version == "0.2.26" and c.skills_version is None)


@pytest.fixture(scope="module")
def tasks() -> dict[str, TaskSpec]:
    return {s.task_id: s for s in load_task_specs([TASK_SPECS_DIR])}


def _trace(name: str, repeat: int = 0) -> Trace:
    return load_trace(FIXTURES / name).model_copy(update={"repeat": repeat})


def _agent_document(cell: Cell, traces: list[Trace]) -> AgentRunsDocument:
    return AgentRunsDocument.of(cell.to_record(), traces)


@pytest.mark.parametrize("name", ["task_0002_mcp.json", "task_0002_code.json"])
def test_a_stored_mapping_round_trips_a_real_mapping(name: str) -> None:
    mapping = map_trace(_trace(name))
    assert mapping.calls, "the fixture must have tool calls"
    assert any(call.instances for call in mapping.calls)
    stored = StoredTraceMapping.of(mapping).to_json()
    assert stored == mapping.to_dict()
    rebuilt = StoredTraceMapping.model_validate(stored).trace_mapping()
    assert rebuilt == mapping
    assert rebuilt.to_dict() == mapping.to_dict()
    assert [i.action for i in rebuilt.instances] == [i.action for i in mapping.instances]


def test_map_actions_keeps_trace_order_and_counts_unmapped(cell: Cell) -> None:
    traces = [_trace("task_0002_mcp.json", 0), _trace("task_0002_code.json", 1)]
    document = map_actions(_agent_document(cell, traces))
    assert document.runs() == [("task_0002", 0), ("task_0002", 1)]
    mappings = [result.mapping for result in document.results]
    assert [len(m.calls) for m in mappings] == [4, 3]
    unmapped = sum(1 for m in mappings for c in m.calls if c.status == "unmapped")
    assert document.unmapped_calls == unmapped


def test_a_cell_goes_through_mapping_judging_and_loading(
    cell: Cell, tasks: dict[str, TaskSpec]
) -> None:
    failed = Trace(task_id="task_0003", status="error", status_reason="provider down")
    agent = _agent_document(cell, [_trace("task_0002_mcp.json"), failed])
    mappings = map_actions(agent)
    judged = judge_cell(agent, mappings, tasks, DeterministicJudge())
    assert judged.runs() == [("task_0002", 0), ("task_0003", 0)]
    # Only ok runs are judged and scored; the error keeps NULLs, never zeros.
    ok, error = judged.results
    assert ok.judgement is not None and ok.score is not None
    assert error.judgement is None and error.score is None

    load = cell_load(agent, mappings, judged)
    assert load.cell == cell.to_record()
    assert load.runs == [
        RunLoad(trace, mapped.mapping.trace_mapping(), result.score, result.judgement)
        for trace, mapped, result in zip(
            agent.traces, mappings.results, judged.results, strict=True
        )
    ]


def test_judging_refuses_mappings_of_other_runs(cell: Cell, tasks: dict[str, TaskSpec]) -> None:
    agent = _agent_document(cell, [_trace("task_0002_mcp.json", 0)])
    stale = map_actions(_agent_document(cell, [_trace("task_0002_mcp.json", 1)]))
    with pytest.raises(StageInputError, match="rematerialize action_mappings"):
        judge_cell(agent, stale, tasks, DeterministicJudge())


def test_judging_names_a_task_without_spec(cell: Cell, tasks: dict[str, TaskSpec]) -> None:
    agent = _agent_document(cell, [Trace(task_id="task_0999", answer="x")])
    with pytest.raises(StageInputError, match="task_0999"):
        judge_cell(agent, map_actions(agent), tasks, DeterministicJudge())


def test_a_stale_later_stage_loads_as_nulls(cell: Cell, tasks: dict[str, TaskSpec]) -> None:
    old_agent = _agent_document(cell, [_trace("task_0002_mcp.json", 0)])
    old_mappings = map_actions(old_agent)
    old_scores = judge_cell(old_agent, old_mappings, tasks, DeterministicJudge())
    # The agent runs were rematerialized with a second repeat; mappings and scores were not.
    new_agent = _agent_document(
        cell, [_trace("task_0002_mcp.json", 0), _trace("task_0002_mcp.json", 1)]
    )
    load = cell_load(new_agent, old_mappings, old_scores)
    assert load.runs == [RunLoad(trace) for trace in new_agent.traces]

    # Mappings caught up, scores did not: only the scores load as NULL.
    new_mappings = map_actions(new_agent)
    load = cell_load(new_agent, new_mappings, old_scores)
    assert load.runs == [
        RunLoad(trace, result.mapping.trace_mapping())
        for trace, result in zip(new_agent.traces, new_mappings.results, strict=True)
    ]


def test_missing_later_stages_load_as_nulls(cell: Cell) -> None:
    agent = _agent_document(cell, [_trace("task_0002_mcp.json")])
    load = cell_load(agent, None, None)
    assert load.runs == [RunLoad(trace) for trace in agent.traces]


def test_a_later_stage_with_the_wrong_length_loads_as_nulls(cell: Cell) -> None:
    agent = _agent_document(cell, [_trace("task_0002_mcp.json")])
    mappings = map_actions(agent)
    truncated = mappings.model_copy(update={"results": []})
    assert cell_load(agent, truncated, None).runs == [RunLoad(trace) for trace in agent.traces]


def test_judging_follows_the_changed_count_and_resolves_slugs(
    cell: Cell, tasks: dict[str, TaskSpec]
) -> None:
    # The regression of issue 10: the catalog now has 2 080 datasets before the date. An answer
    # with the new figure is right for the value check and the judge's value criterion; the
    # spec's literal 2076 is no longer what the answer is compared with.
    moved = _trace("task_0002_mcp.json")
    answer = re.sub(r"2\s?076", "2 080", moved.answer)
    moved = moved.model_copy(update={"answer": answer})
    agent = _agent_document(cell, [moved])
    mappings = map_actions(agent)
    reference = Reference(
        task_id="task_0002",
        name="datasets_before_2012_06_28",
        spec_value=2076,
        value=2080,
        source="twin test-snapshot (Tabular API http://127.0.0.1/tabular/api/)",
    )
    catalog = StaticCatalogLookup.of(
        [
            CatalogObject(
                "dataset", "5d13a8b6634f41070a43dff3", "catalogue-des-donnees-de-data-gouv-fr"
            )
        ]
    )
    literal = judge_cell(agent, mappings, tasks, DeterministicJudge()).to_json()
    followed = judge_cell(
        agent, mappings, tasks, DeterministicJudge(), references=[reference], catalog=catalog
    ).to_json()
    assert literal["results"][0]["score"]["checks"]["value"]["passed"] is False
    assert literal["results"][0]["score"]["checks"]["citation"]["passed"] is False  # slug unknown
    score = followed["results"][0]["score"]
    assert score["checks"]["value"]["passed"] is True
    assert score["checks"]["value"]["details"]["expected"]["datasets_before_2012_06_28"] == {
        "value": 2080,
        "tolerance": 0.0,
        "spec_value": 2076,
        "source": reference.source,
        "reference_error": None,
        "about": [["2012"]],
        "outcome": "stated",
        "reason": "stated as '2 080'",
    }
    assert score["checks"]["citation"]["passed"] is True
    assert score["provenance"]["spec_hash"] == tasks["task_0002"].spec_hash()
    first = followed["results"][0]["judgement"]["criteria"][0]
    assert "2080" in first["criterion"]
    assert first["verdict"]["passed"] is True
    assert literal["results"][0]["judgement"]["criteria"][0]["verdict"]["passed"] is False
    assert followed["references"] == [reference.model_dump(mode="json")]
