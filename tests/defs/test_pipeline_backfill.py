"""Many cells in one run, and a changed task spec reruns exactly that task in each cell."""

from pathlib import Path

import dagster as dg
import pytest

from datagouv_eval_pipeline.core.tasks import load_task_specs
from datagouv_eval_pipeline.pipeline.experiment.stages import (
    ACTION_MAPPINGS,
    AGENT_RUNS,
    JUDGE_SCORES,
)
from tests.defs.pipeline_helpers import (
    MCP_CELLS,
    STAGE_NAMES,
    TASK_IDS,
    Paths,
    cells_job_defs,
    check_evaluation,
    copy_task_specs,
    counting_task_runs,
    query,
    run_range,
)

# oneshot at MCP 0.2.5, 0.2.19 and 0.2.26: contiguous partitions. task_0002 needs MCP >= 0.2.13,
# so it is skipped (no model asked) in the first cell.
CELLS = MCP_CELLS[:3]
CHANGED = "task_0003"


def _traces(paths: Paths, key: str) -> dict[str, dict[str, object]]:
    document = paths.store.read(AGENT_RUNS, key)
    assert document is not None
    return {str(t["task_id"]): t for t in document["traces"]}


def test_a_range_runs_in_one_run_and_a_changed_spec_reruns_only_its_tasks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    specs_dir = copy_task_specs(tmp_path, monkeypatch)
    paths = Paths(tmp_path)
    defs = cells_job_defs(paths)
    instance = dg.DagsterInstance.ephemeral()

    with counting_task_runs(monkeypatch) as counter:
        first = run_range(defs, CELLS[0], CELLS[-1], instance)
        assert first.success
        # One Dagster run covered every cell of the range, each stage once.
        assert len(instance.get_runs()) == 1
        for name in STAGE_NAMES:
            events = first.asset_materializations_for_node(name)
            assert sorted(str(e.partition) for e in events) == sorted(CELLS)
        for key in CELLS:
            for stage in (AGENT_RUNS, ACTION_MAPPINGS, JUDGE_SCORES):
                assert paths.store.read(stage, key) is not None, (stage, key)
        # 2 tasks × 3 cells, minus task_0002 skipped at MCP 0.2.5.
        assert counter.total == 5
        assert counter.per_task == {"task_0002": 2, "task_0003": 3}
        assert query(paths.db, "SELECT count(*) FROM eval.runs") == [(len(CELLS) * len(TASK_IDS),)]
        assert check_evaluation(first, "transcripts_present").passed
        assert check_evaluation(first, "runs_match_partitions").passed
        before = {key: _traces(paths, key) for key in CELLS}

        # Rewrite one task's prompt: its spec hash, hence its run inputs, change.
        path = specs_dir / f"{CHANGED}.yml"
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace("prompt: >", "prompt: >\n  Question reformulée :", 1), "utf-8")
        new_hash = next(s.spec_hash() for s in load_task_specs([specs_dir]) if s.task_id == CHANGED)
        counter.reset()
        second = run_range(defs, CELLS[0], CELLS[-1], instance)
        assert second.success

    # Exactly one task run per cell, all of the changed task; the rest came from the cache.
    assert counter.total == len(CELLS)
    assert counter.per_cell == dict.fromkeys(CELLS, 1)
    assert counter.per_task == {CHANGED: len(CELLS)}
    (agent_runs,) = {
        e.metadata["task_runs_executed"]
        for e in second.asset_materializations_for_node("agent_runs")
    }
    assert agent_runs == dg.IntMetadataValue(len(CELLS))
    for key in CELLS:
        after = _traces(paths, key)
        assert after[CHANGED] != before[key][CHANGED]
        assert after[CHANGED]["status"] == "ok"
    # The unchanged task's traces are the cached ones, byte for byte (a skipped run is re-decided
    # for free each time, so only the cells where it ran compare equal).
    assert _traces(paths, CELLS[0])["task_0002"]["status"] == "skipped"
    for key in CELLS[1:]:
        assert _traces(paths, key)["task_0002"] == before[key]["task_0002"]
    # The warehouse replaced the cells' rows: same count, no duplicate, the new spec scored.
    assert query(paths.db, "SELECT count(*) FROM eval.runs") == [(len(CELLS) * len(TASK_IDS),)]
    assert query(
        paths.db, f"SELECT DISTINCT spec_hash FROM eval.runs WHERE task_id = '{CHANGED}'"
    ) == [(new_hash,)]
    assert check_evaluation(second, "runs_match_partitions").passed
    assert check_evaluation(second, "no_duplicate_runs").passed
