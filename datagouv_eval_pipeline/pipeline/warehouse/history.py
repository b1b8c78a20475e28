"""Experiment history: one ``eval.experiments`` row per load, earlier runs' rows kept.

The cell tables (``eval.runs``, ``eval.metrics``, ...) hold the latest run of each cell, which
is what the dbt marts show. Each load that names an experiment also appends the loaded cells'
runs and metrics to ``eval.runs_history`` / ``eval.metrics_history`` under the experiment id
(the Dagster run id), so any earlier run stays queryable and the regression gate can pair a
cell's latest run with its previous one.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import duckdb

from datagouv_eval_pipeline.core.metrics import code_version, working_tree_dirty
from datagouv_eval_pipeline.pipeline.warehouse.schema import EXPERIMENTS, RUNS_HISTORY, SCHEMA


@dataclass(frozen=True, slots=True)
class ExperimentRecord:
    """What identifies one experiment run.

    Attributes:
        experiment_id: The Dagster run id (a uuid outside Dagster).
        config_hash: :func:`config_hash` of the cells and task specs.
        dagster_run_id: The Dagster run id; None outside Dagster.
        recorded_at: When it was loaded.
        git_sha: Commit of the code.
        git_dirty: Uncommitted changes; None when unknown.
        code_version: Package version.
    """

    experiment_id: str
    config_hash: str
    dagster_run_id: str | None
    recorded_at: datetime
    git_sha: str | None
    git_dirty: bool | None
    code_version: str | None


def config_hash(cell_records: Iterable[Mapping[str, Any]], spec_hashes: Mapping[str, str]) -> str:
    """Digest of what the experiment was configured to run: cell records and task spec hashes."""
    text = json.dumps(
        {"cells": list(cell_records), "tasks": dict(spec_hashes)}, sort_keys=True, default=str
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def new_experiment(
    config: str, *, dagster_run_id: str | None = None, recorded_at: datetime | None = None
) -> ExperimentRecord:
    """An experiment record for this process's code (git sha, dirty flag, package version)."""
    version = code_version()
    return ExperimentRecord(
        experiment_id=dagster_run_id or str(uuid.uuid4()),
        config_hash=config,
        dagster_run_id=dagster_run_id,
        recorded_at=recorded_at or datetime.now(UTC),
        git_sha=version.git_sha,
        git_dirty=working_tree_dirty(),
        code_version=version.package,
    )


def record_experiment(
    conn: duckdb.DuckDBPyConnection,
    record: ExperimentRecord,
    *,
    cells_loaded: int,
    cells_failed: int,
) -> None:
    """Write (or replace) the experiment's row; snapshots, judges and runs from its history."""
    row = conn.execute(
        f"""
        SELECT string_agg(DISTINCT snapshot_id, ',' ORDER BY snapshot_id),
               string_agg(DISTINCT judge_id, ',' ORDER BY judge_id),
               count(*)
        FROM {RUNS_HISTORY.qualified} WHERE experiment_id = ?
        """,
        [record.experiment_id],
    ).fetchone()
    snapshots, judges, runs = row if row is not None else (None, None, 0)
    conn.begin()
    try:
        conn.execute(
            f"DELETE FROM {EXPERIMENTS.qualified} WHERE experiment_id = ?", [record.experiment_id]
        )
        conn.execute(
            f"INSERT INTO {EXPERIMENTS.qualified} BY NAME SELECT "
            "? AS experiment_id, ? AS dagster_run_id, ? AS recorded_at, ? AS git_sha, "
            "? AS git_dirty, ? AS code_version, ? AS config_hash, ? AS snapshot_ids, "
            "? AS judge_ids, ? AS cells_loaded, ? AS cells_failed, ? AS runs",
            [
                record.experiment_id,
                record.dagster_run_id,
                record.recorded_at,
                record.git_sha,
                record.git_dirty,
                record.code_version,
                record.config_hash,
                snapshots,
                judges,
                cells_loaded,
                cells_failed,
                int(runs),
            ],
        )
        conn.commit()
    except BaseException:
        conn.rollback()
        raise


def latest_experiment(conn: duckdb.DuckDBPyConnection) -> str | None:
    """The id of the most recently recorded experiment; None when there is none."""
    row = conn.execute(
        f"SELECT experiment_id FROM {SCHEMA}.experiments "
        "ORDER BY recorded_at DESC, experiment_id DESC LIMIT 1"
    ).fetchone()
    return None if row is None else str(row[0])


def experiment_exists(conn: duckdb.DuckDBPyConnection, experiment_id: str) -> bool:
    """Whether ``eval.experiments`` has this id."""
    row = conn.execute(
        f"SELECT count(*) FROM {SCHEMA}.experiments WHERE experiment_id = ?", [experiment_id]
    ).fetchone()
    return bool(row and row[0])


def previous_runs_of_cells(
    conn: duckdb.DuckDBPyConnection, experiment_id: str
) -> dict[str, str | None]:
    """For each cell loaded by ``experiment_id``: the previous experiment that loaded it.

    Returns:
        Cell key -> the latest earlier experiment id with rows of that cell (None: first run).
    """
    rows = conn.execute(
        f"""
        WITH loaded AS (
            SELECT DISTINCT h.experiment_id, h.cell_key, e.recorded_at
            FROM {RUNS_HISTORY.qualified} AS h
            JOIN {SCHEMA}.experiments AS e USING (experiment_id)
        ),
        current AS (SELECT cell_key, recorded_at FROM loaded WHERE experiment_id = ?)
        SELECT c.cell_key,
               (SELECT l.experiment_id FROM loaded AS l
                WHERE l.cell_key = c.cell_key AND l.experiment_id <> ?
                  AND l.recorded_at <= c.recorded_at
                ORDER BY l.recorded_at DESC, l.experiment_id DESC LIMIT 1)
        FROM current AS c ORDER BY c.cell_key
        """,
        [experiment_id, experiment_id],
    ).fetchall()
    return {str(key): (None if previous is None else str(previous)) for key, previous in rows}
