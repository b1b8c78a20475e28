"""A failing cell sinks neither the other cells nor the warehouse, and keeps its last result."""

from pathlib import Path

import dagster as dg
import pytest

from datagouv_eval_pipeline.pipeline.experiment.stages import (
    ACTION_MAPPINGS,
    AGENT_RUNS,
    JUDGE_SCORES,
)
from tests.defs.pipeline_helpers import (
    MCP_CELLS,
    STAGE_NAMES,
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


def test_a_failed_cell_shows_in_dagster_is_not_rebuilt_and_is_flagged_in_the_warehouse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = Paths(tmp_path)
    with dg.instance_for_test() as instance:
        assert run_range(cells_job_defs(paths, task_ids=TASKS), BROKEN, HEALTHY, instance).success
        good = paths.store.read(AGENT_RUNS, BROKEN)
        good_mapping = paths.store.read(ACTION_MAPPINGS, BROKEN)
        good_scores = paths.store.read(JUDGE_SCORES, BROKEN)
        healthy_before = paths.store.read(AGENT_RUNS, HEALTHY)
        assert good is not None and healthy_before is not None
        assert query(paths.db, "SELECT count(*) FROM eval.cells WHERE stale_reason IS NULL") == [
            (2,)
        ]

        with counting_task_runs(monkeypatch) as counter:
            counter.fail_cells = {BROKEN}
            # rerun: ignore the cache so that both cells really ask their agent again.
            defs = cells_job_defs(paths, task_ids=TASKS, rerun=True)
            result = run_range(defs, BROKEN, HEALTHY, instance)

            # One cell's failure does not sink the others: the healthy cell runs through.
            assert result.success
            assert counter.per_cell == {HEALTHY: 1}
            (event, *_) = result.asset_materializations_for_node("agent_runs")
            assert event.metadata["cells_failed"] == dg.IntMetadataValue(1)
            assert event.metadata["cells_written"] == dg.IntMetadataValue(1)
            # Dagster is told, per partition: the failed cell's check fails at every stage
            # (with the reason), the healthy cell's passes.
            evaluations = {
                (e.asset_key.to_user_string(), e.partition): e
                for e in result.get_asset_check_evaluations()
                if e.check_name == "cell_ok"
            }
            assert set(evaluations) == {
                (stage, key) for stage in STAGE_NAMES for key in (BROKEN, HEALTHY)
            }
            for stage in STAGE_NAMES:
                assert evaluations[(stage, HEALTHY)].passed
                assert not evaluations[(stage, BROKEN)].passed
            reason = str(evaluations[("agent_runs", BROKEN)].metadata["reason"].value)
            assert f"provider exploded for {BROKEN}" in reason
            assert "agent_runs failed" in str(
                evaluations[("action_mappings", BROKEN)].metadata["reason"].value
            )
            # The failed cell's earlier documents are intact at every stage: its downstream
            # was not rebuilt from its old traces.
            assert paths.store.read(AGENT_RUNS, BROKEN) == good
            assert paths.store.read(ACTION_MAPPINGS, BROKEN) == good_mapping
            assert paths.store.read(JUDGE_SCORES, BROKEN) == good_scores
            failure = paths.store.failure(AGENT_RUNS, BROKEN)
            assert failure is not None and f"provider exploded for {BROKEN}" in failure.reason
            assert paths.store.failure(AGENT_RUNS, HEALTHY) is None
            assert paths.store.read(AGENT_RUNS, HEALTHY) != healthy_before
            # The warehouse keeps the failed cell's last good rows, flagged stale with why.
            rows = query(paths.db, "SELECT cell_key, count(*) FROM eval.runs GROUP BY 1 ORDER BY 1")
            assert rows == sorted([(BROKEN, 1), (HEALTHY, 1)])
            flags = dict(query(paths.db, "SELECT cell_key, stale_reason FROM eval.cells"))
            assert flags[HEALTHY] is None
            assert flags[BROKEN].startswith("agent_runs failed at ")
            assert f"provider exploded for {BROKEN}" in flags[BROKEN]
            # The unpartitioned check names the failed cell, and only it.
            check = check_evaluation(result, "cells_succeeded")
            assert not check.passed
            assert check.metadata["failed_cells"] == dg.IntMetadataValue(1)
            details = str(check.metadata["details"].value)
            assert BROKEN in details and HEALTHY not in details

            # A run of exactly that one cell fails in Dagster: the partition shows failed.
            alone = materialize_cell(paths, BROKEN, task_ids=TASKS, rerun=True)
            assert not alone.success
            failed_steps = [e.step_key for e in alone.all_events if e.is_step_failure]
            assert failed_steps == ["agent_runs"]
            assert paths.store.read(AGENT_RUNS, BROKEN) == good

            # Once the cell runs again, the flag goes.
            counter.fail_cells = set()
            assert run_range(defs, BROKEN, HEALTHY, instance).success
            flags = dict(query(paths.db, "SELECT cell_key, stale_reason FROM eval.cells"))
            assert flags == {BROKEN: None, HEALTHY: None}
