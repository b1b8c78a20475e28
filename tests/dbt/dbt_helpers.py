"""What the dbt tests share: the fixture warehouse, its source tables and a planted bad score."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
from dbt.cli.main import dbtRunner, dbtRunnerResult

from datagouv_eval_pipeline.pipeline.warehouse import (
    Coverage,
    ExperimentRecord,
    connect,
    load_experiment,
)
from datagouv_eval_pipeline.pipeline.warehouse.error_bars import compute_statistics
from datagouv_eval_pipeline.pipeline.warehouse.gate import evaluate_gate, write_gate_results
from tests.warehouse.warehouse_factories import (
    MCP_26,
    hand_cell,
    hand_cell_b,
    realistic_experiment,
    specs,
)

PROJECT = Path(__file__).resolve().parents[2] / "dbt_metrics"
"""The dbt project."""
DUCKDB_ENV = "DATAGOUV_EVAL_DUCKDB"

WAREHOUSE_TABLES = [
    "action_instances",
    "cells",
    "comparisons",
    "experiments",
    "failure_modes",
    "feature_comparisons",
    "feature_estimates",
    "gate_results",
    "judge_calibration",
    "metric_estimates",
    "metrics",
    "metrics_history",
    "pass_k",
    "question_comparisons",
    "questions",
    "references",
    "review_labels",
    "runs",
    "runs_history",
    "task_features",
    "tasks",
    "tool_calls",
    "verdicts",
]
"""The warehouse tables dbt reads (its sources), sorted."""

RANGE_TESTS = [
    "source_in_unit_interval_eval_verdicts_score",
    "source_in_unit_interval_eval_verdicts_value",
]
"""The dbt tests a score planted out of [0, 1] fails (see :func:`plant_out_of_range_score`)."""


def load_fixture_warehouse(db: Path) -> Coverage:
    """Load the realistic experiment and both hand cells, with their task specs, into ``db``.

    Recorded as two identical experiment runs, then the statistics stage and the gate run, as
    the pipeline does before dbt.
    """
    loads = [*realistic_experiment(), hand_cell(), hand_cell_b()]
    for minutes, name in ((0, "fixture-1"), (5, "fixture-2")):
        record = ExperimentRecord(
            name, "cfg", name, datetime(2026, 11, 30, 10, minutes, tzinfo=UTC), "abc", False, None
        )
        _, coverage = load_experiment(db, loads, tasks=specs().values(), experiment=record)
    conn = connect(db)
    try:
        compute_statistics(conn)
        write_gate_results(conn, evaluate_gate(conn))
    finally:
        conn.close()
    return coverage


def plant_out_of_range_score(db: Path) -> None:
    """Set one trajectory verdict's score and value to 1.5 (out of [0, 1])."""
    conn = duckdb.connect(str(db))
    try:
        conn.execute(
            "UPDATE eval.verdicts SET score = 1.5, value = 1.5 WHERE cell_key = ? "
            "AND kind = 'trajectory' AND tier = 'minimal' AND task_id = 'task_0002' "
            "AND repeat_index = 0",
            [MCP_26],
        )
    finally:
        conn.close()


def rows(db: Path, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    """The rows of one query on ``db``.

    Not read-only: the same configuration as dbt-duckdb's in-process connection (a read-only
    one would be refused while that is open).
    """
    conn = duckdb.connect(str(db))
    try:
        return conn.execute(sql, params or []).fetchall()
    finally:
        conn.close()


def run_dbt(args: list[str], tmp: Path) -> dbtRunnerResult:
    """One dbt invocation of the project, its target and logs under ``tmp``."""
    return dbtRunner().invoke(
        [
            *args,
            "--project-dir",
            str(PROJECT),
            "--profiles-dir",
            str(PROJECT),
            "--target-path",
            str(tmp / "target"),
            "--log-path",
            str(tmp / "logs"),
            "--quiet",
        ]
    )


@contextmanager
def warehouse_env(db: Path) -> Iterator[None]:
    """Point dbt's profile at ``db`` for the duration."""
    previous = os.environ.get(DUCKDB_ENV)
    os.environ[DUCKDB_ENV] = str(db)
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(DUCKDB_ENV, None)
        else:
            os.environ[DUCKDB_ENV] = previous
