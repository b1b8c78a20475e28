"""The statistics stage and the regression gate in real Dagster runs on a real DuckDB file.

Two MCP cells over eight tasks, three runs of the same job on one instance: the first has no
history (the gate passes, nothing to compare), the second is identical (passes), the third
breaks one cell's toolset (every run of that cell errors) and fails the gate for that cell
only; ``datagouv-eval gate`` says the same and exits 1.
"""

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from click.testing import CliRunner

from datagouv_eval_pipeline.cli import main
from datagouv_eval_pipeline.core.benchmark.cells import Cell
from datagouv_eval_pipeline.core.tasks.spec import TaskSpec
from datagouv_eval_pipeline.defs.partitions import register_cells
from datagouv_eval_pipeline.defs.resources import WarehouseResource
from datagouv_eval_pipeline.defs.statistics import no_regression
from datagouv_eval_pipeline.defs.warehouse import warehouse
from datagouv_eval_pipeline.pipeline.agents.runner import CellRun, execute_cell
from datagouv_eval_pipeline.pipeline.experiment import stages
from datagouv_eval_pipeline.pipeline.warehouse.gate import evaluate_gate, write_gate_results
from tests.defs.pipeline_helpers import (
    CELL_STAGES,
    MCP_CELLS,
    RANGE_END,
    RANGE_START,
    Paths,
    check_evaluation,
    query,
    resources,
)
from tests.warehouse.test_warehouse_statistics import A_KEY, B_KEY, DECIDED, _judged_runs

# baseline-oneshot at MCP 0.2.19 and 0.2.26: contiguous partitions, every task applies.
CELLS = MCP_CELLS[1:3]
BROKEN = CELLS[1]
TASKS = [f"task_{i:04d}" for i in range(1, 9)]


def _run(paths: Paths, instance: dg.DagsterInstance, **settings: Any) -> dg.ExecuteInProcessResult:
    job = dg.define_asset_job("with_statistics", selection=dg.AssetSelection.all())
    defs = dg.Definitions(
        assets=[*CELL_STAGES, warehouse],
        asset_checks=[no_regression],
        jobs=[job],
        resources=resources(paths, TASKS, **settings),
        executor=dg.in_process_executor,
    )
    register_cells(instance, CELLS)
    return defs.resolve_job_def("with_statistics").execute_in_process(
        instance=instance, tags={RANGE_START: CELLS[0], RANGE_END: CELLS[-1]}, raise_on_error=False
    )


def _break_toolset(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every run of the broken cell ends in an error, as with an unreachable MCP server."""

    def broken(cell: Cell, tasks: Sequence[TaskSpec], **options: Any) -> CellRun:
        run = execute_cell(cell, tasks, **options)
        if cell.key != BROKEN:
            return run
        failed = [
            t.model_copy(
                update={
                    "status": "error",
                    "status_reason": "MCP server unreachable",
                    "tool_calls": [],
                }
            )
            for t in run.traces
        ]
        return dataclasses.replace(run, traces=failed)

    monkeypatch.setattr(stages, "execute_cell", broken)


def test_identical_runs_pass_and_a_broken_cell_fails_the_gate_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = Paths(tmp_path)
    instance = dg.DagsterInstance.ephemeral()

    first = _run(paths, instance)
    assert first.success
    assert check_evaluation(first, "no_regression").passed
    assert query(paths.db, "SELECT count(*) FROM eval.experiments") == [(1,)]
    assert query(
        paths.db, "SELECT DISTINCT reason FROM eval.gate_results WHERE metric = 'scored'"
    ) == [("first run of this cell: nothing to compare with",)]
    # Every mean has n, coverage and an interval; every one-dimension pair a verdict.
    assert query(
        paths.db,
        "SELECT count(*) FROM eval.metric_estimates WHERE scope = 'cell' "
        "AND (n IS NULL OR coverage IS NULL OR (tasks >= 2 AND ci_low IS NULL))",
    ) == [(0,)]
    assert query(
        paths.db,
        "SELECT DISTINCT dimension, value_a, value_b FROM eval.comparisons ORDER BY ALL",
    ) == [("mcp_version", "0.2.19", "0.2.26"), ("mcp_version", "0.2.26", "0.2.19")]

    second = _run(paths, instance)
    assert second.success
    assert check_evaluation(second, "no_regression").passed
    experiments = query(
        paths.db,
        "SELECT experiment_id, dagster_run_id, runs FROM eval.experiments ORDER BY recorded_at",
    )
    assert [row[0] for row in experiments] == [first.run_id, second.run_id]
    assert [row[1:] for row in experiments] == [(first.run_id, 16), (second.run_id, 16)]

    _break_toolset(monkeypatch)
    third = _run(paths, instance, rerun=True)
    assert third.success  # the gate is a check: the run completes, the check fails
    evaluation = check_evaluation(third, "no_regression")
    assert not evaluation.passed
    assert evaluation.metadata["failed_cells"] == dg.JsonMetadataValue([BROKEN])
    assert query(
        paths.db,
        "SELECT DISTINCT cell_key, previous_experiment_id FROM eval.gate_results "
        f"WHERE failed AND experiment_id = '{third.run_id}'",
    ) == [(BROKEN, second.run_id)]
    # The earlier runs' rows are still there, queryable by run.
    assert query(
        paths.db,
        "SELECT experiment_id, count(*) FILTER (WHERE scored) FROM eval.runs_history "
        f"WHERE cell_key = '{BROKEN}' GROUP BY ALL ORDER BY ALL",
    ) == sorted([(first.run_id, 8), (second.run_id, 8), (third.run_id, 0)])

    gate = CliRunner().invoke(main, ["gate", "--db", str(paths.db)])
    assert gate.exit_code == 1
    assert f"{BROKEN} all scored [all]: 1.000 -> 0.000" in gate.output
    assert CELLS[0] not in gate.output
    against_second = CliRunner().invoke(
        main,
        ["gate", "--db", str(paths.db), "--experiment", second.run_id, "--against", first.run_id],
    )
    assert against_second.exit_code == 0, against_second.output


def test_the_check_warns_on_a_judge_outage_and_fails_on_a_real_regression(tmp_path: Path) -> None:
    # Same agents twice; the second time the judge's model answered garbage (coverage 1 -> 0.5):
    # not comparable, a warning naming the coverage, not a failure.
    outage = tmp_path / "outage"
    outage.mkdir()
    with _judged_runs(outage, [[False, None]] * 10, [[None, None]] * 10) as conn:
        write_gate_results(conn, evaluate_gate(conn))
    result = no_regression(warehouse=WarehouseResource(path=str(outage / "w.duckdb")))
    assert isinstance(result, dg.AssetCheckResult)
    assert not result.passed and result.severity == dg.AssetCheckSeverity.WARN
    assert result.metadata["failed_cells"] == dg.JsonMetadataValue([])
    assert result.metadata["not_comparable_cells"] == dg.JsonMetadataValue([A_KEY, B_KEY])
    details = result.metadata["details"].value
    assert f"{A_KEY} minimal accuracy [all]: not comparable: coverage fell from 1.00 to 0.50" in (
        str(details)
    )
    # Same judge, every criterion decided: an agent made worse fails the check (ERROR).
    worse = tmp_path / "worse"
    worse.mkdir()
    with _judged_runs(worse, [[False, False]] * 10, DECIDED) as conn:
        write_gate_results(conn, evaluate_gate(conn))
    failed = no_regression(warehouse=WarehouseResource(path=str(worse / "w.duckdb")))
    assert isinstance(failed, dg.AssetCheckResult)
    assert not failed.passed and failed.severity == dg.AssetCheckSeverity.ERROR
    assert failed.metadata["failed_cells"] == dg.JsonMetadataValue([A_KEY])
