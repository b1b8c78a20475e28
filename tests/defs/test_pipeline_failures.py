"""A failing cell sinks neither the other cells nor the warehouse, and keeps its last result."""

from pathlib import Path

import dagster as dg
import pytest

from datagouv_eval_pipeline.experiment.stages import AGENT_RUNS
from tests.defs.pipeline_helpers import (
    MCP_CELLS,
    Paths,
    cells_job_defs,
    check_evaluation,
    counting_task_runs,
    materialize_cell,
    query,
    run_range,
)

CELLS = MCP_CELLS[1:3]  # oneshot at MCP 0.2.19 and 0.2.26
BROKEN, HEALTHY = CELLS
TASKS = ["task_0003"]


def test_a_failed_cell_is_recorded_while_the_others_and_the_warehouse_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = Paths(tmp_path)
    instance = dg.DagsterInstance.ephemeral()
    assert run_range(cells_job_defs(paths, task_ids=TASKS), BROKEN, HEALTHY, instance).success
    good = paths.store.read(AGENT_RUNS, BROKEN)
    healthy_before = paths.store.read(AGENT_RUNS, HEALTHY)
    assert good is not None and healthy_before is not None

    with counting_task_runs(monkeypatch) as counter:
        counter.fail_cells = {BROKEN}
        # rerun: ignore the cache so that both cells really ask their agent again.
        defs = cells_job_defs(paths, task_ids=TASKS, rerun=True)
        result = run_range(defs, BROKEN, HEALTHY, instance)

        # The run as a whole succeeds: one cell's failure does not sink the others.
        assert result.success
        assert counter.per_cell == {HEALTHY: 1}
        (event, *_) = result.asset_materializations_for_node("agent_runs")
        assert event.metadata["cells_failed"] == dg.IntMetadataValue(1)
        assert event.metadata["cells_written"] == dg.IntMetadataValue(1)
        # The failed cell's earlier document is intact and its failure is recorded beside it.
        assert paths.store.read(AGENT_RUNS, BROKEN) == good
        failure = paths.store.failure(AGENT_RUNS, BROKEN)
        assert failure is not None and f"provider exploded for {BROKEN}" in failure.reason
        assert paths.store.failure(AGENT_RUNS, HEALTHY) is None
        assert paths.store.read(AGENT_RUNS, HEALTHY) != healthy_before
        # The warehouse still loaded both cells (the broken one from its last good document).
        assert len(result.asset_materializations_for_node("warehouse")) > 0
        rows = query(paths.db, "SELECT cell_key, count(*) FROM eval.runs GROUP BY 1 ORDER BY 1")
        assert rows == sorted([(BROKEN, 1), (HEALTHY, 1)])
        # The check names the failed cell, and only it.
        check = check_evaluation(result, "cells_succeeded")
        assert not check.passed
        assert check.metadata["failed_cells"] == dg.IntMetadataValue(1)
        details = str(check.metadata["details"].value)
        assert BROKEN in details and HEALTHY not in details

        # A run of exactly that one cell fails in Dagster, so the UI shows the partition failed.
        alone = materialize_cell(paths, BROKEN, task_ids=TASKS, rerun=True)
        assert not alone.success
        failed_steps = [e.step_key for e in alone.all_events if e.is_step_failure]
        assert failed_steps == ["agent_runs"]
        assert paths.store.read(AGENT_RUNS, BROKEN) == good
