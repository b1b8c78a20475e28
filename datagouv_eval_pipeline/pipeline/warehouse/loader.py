"""Loading cells into the DuckDB warehouse: one transaction per cell, idempotent.

``load_cell`` deletes every row of the cell (by cell key) and inserts the new ones in ONE
transaction: re-loading the same cell never duplicates rows, changed scores replace the old ones,
and a failure (bad input, constraint violation) rolls back and leaves the previous rows intact.
Rows go in through pandas DataFrames (``INSERT ... BY NAME SELECT``), not row-by-row.

DuckDB allows one writer process; callers (the Dagster warehouse asset) keep connections short
and close them before dbt runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb

from datagouv_eval_pipeline.core.benchmark import CellRecord
from datagouv_eval_pipeline.pipeline.warehouse.connections import track
from datagouv_eval_pipeline.pipeline.warehouse.history import ExperimentRecord, record_experiment
from datagouv_eval_pipeline.pipeline.warehouse.queries import Coverage, cell_coverage
from datagouv_eval_pipeline.pipeline.warehouse.rows import (
    CellRows,
    Row,
    RunLoad,
    WarehouseInputError,
    build_cell_rows,
    task_feature_rows,
    task_row,
)
from datagouv_eval_pipeline.pipeline.warehouse.schema import (
    CELL_TABLES,
    HISTORY_TABLES,
    SCHEMA,
    TABLES_BY_NAME,
    create_schema,
)
from datagouv_eval_pipeline.pipeline.warehouse.storage import open_writable

DbTarget = str | Path | duckdb.DuckDBPyConnection
"""A DuckDB file path, or an open connection (left open)."""


def connect(path: str | Path, *, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open the warehouse file, creating its parent directory and the schema if needed.

    A writable file is kept in the storage format the ``duckdb`` shell reads
    (``pipeline/warehouse/storage.py``).
    """
    if read_only:
        return track(duckdb.connect(str(path), read_only=True))
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    conn = open_writable(Path(path))
    create_schema(conn)
    return conn


@contextmanager
def _connection(target: DbTarget) -> Iterator[duckdb.DuckDBPyConnection]:
    if isinstance(target, duckdb.DuckDBPyConnection):
        create_schema(target)
        yield target
        return
    conn = connect(target)
    try:
        yield conn
    finally:
        conn.close()


@dataclass(frozen=True)
class CellLoad:
    """Everything stored for one cell: its record and one entry per run.

    Attributes:
        cell: The cell record (``Cell.to_record()``).
        runs: One entry per run: its trace, and its mapping, score and judgement when present.
        stale_reason: Why these documents are not from the cell's last attempt (a stage failed
            on it and kept its earlier document); None when they are.
    """

    cell: CellRecord
    runs: Sequence[RunLoad]
    stale_reason: str | None = None


@dataclass(frozen=True)
class CellLoadResult:
    """What ``load_cell`` wrote.

    Attributes:
        cell_key: The cell.
        rows: Rows inserted per table.
        deleted: Rows deleted per table (the cell's previous rows).
    """

    cell_key: str
    rows: dict[str, int]
    deleted: dict[str, int]


def _insert(
    conn: duckdb.DuckDBPyConnection,
    table: str,
    rows: list[Row],
    constants: Mapping[str, Any] | None = None,
) -> None:
    """Insert rows (plus ``constants``, the same value on every row) in one statement."""
    if not rows:
        return
    # pandas (about 1 s to import) only where rows are written: the code location imports this.
    import pandas as pd  # type: ignore[import-untyped]

    fixed = dict(constants or {})
    columns = TABLES_BY_NAME[table].column_names
    frame = pd.DataFrame(
        {
            name: [fixed[name]] * len(rows) if name in fixed else [row[name] for row in rows]
            for name in columns
        }
    )
    view = f"_wh_{table}"
    conn.register(view, frame)
    try:
        conn.execute(f"INSERT INTO {SCHEMA}.{table} BY NAME SELECT * FROM {view}")
    finally:
        conn.unregister(view)


def load_cell(db: DbTarget, load: CellLoad, *, loaded_at: datetime | None = None) -> CellLoadResult:
    """Replace one cell's rows in the warehouse, atomically.

    Args:
        db: DuckDB file path or open connection.
        load: The cell record and its runs (a failed run is a trace with status ``error``).
        loaded_at: Load timestamp for ``cells.loaded_at`` (now by default).

    Returns:
        Rows inserted and deleted per table.

    Raises:
        WarehouseInputError: On inconsistent input; nothing is written then.
        duckdb.Error: On a database error; the transaction is rolled back.
    """
    rows = _prepare(load, loaded_at)
    with _connection(db) as conn:
        deleted = _replace_cells(conn, [(load.cell.key, rows)])
    return CellLoadResult(load.cell.key, rows.counts(), deleted[load.cell.key])


def _prepare(load: CellLoad, loaded_at: datetime | None) -> CellRows:
    """Check one cell's input and build its rows (no database access)."""
    return build_cell_rows(
        load.cell, load.runs, loaded_at=loaded_at, stale_reason=load.stale_reason
    )


def _replace_cells(
    conn: duckdb.DuckDBPyConnection,
    batch: Sequence[tuple[str, CellRows]],
    experiment_id: str | None = None,
) -> dict[str, dict[str, int]]:
    """Delete the cells' rows and insert the new ones, all in one transaction.

    With an ``experiment_id``, the same rows are also appended to the history tables (a
    re-load within the same experiment replaces its own history rows).
    """
    deleted: dict[str, dict[str, int]] = {}
    conn.begin()
    try:
        for key, _ in batch:
            deleted[key] = {}
            # Children first, so a future foreign key could never block the delete.
            for table in reversed(CELL_TABLES):
                result = conn.execute(
                    f"DELETE FROM {table.qualified} WHERE cell_key = ?", [key]
                ).fetchone()
                deleted[key][table.name] = int(result[0]) if result else 0
            if experiment_id is not None:
                for history in HISTORY_TABLES.values():
                    conn.execute(
                        f"DELETE FROM {history.qualified} WHERE experiment_id = ? AND cell_key = ?",
                        [experiment_id, key],
                    )
        # One insert per table for the whole batch: its cost is mostly per statement.
        for table in CELL_TABLES:
            _insert(conn, table.name, [row for _, rows in batch for row in rows.tables[table.name]])
        if experiment_id is not None:
            for name, history in HISTORY_TABLES.items():
                _insert(
                    conn,
                    history.name,
                    [row for _, rows in batch for row in rows.tables[name]],
                    {"experiment_id": experiment_id},
                )
        conn.commit()
    except BaseException:
        conn.rollback()
        raise
    return deleted


def load_tasks(db: DbTarget, specs: Iterable[Any]) -> int:
    """Upsert ``eval.tasks`` rows (task id × spec hash) and their ``eval.task_features``.

    Returns:
        The number of ``eval.tasks`` rows written.
    """
    specs = list(specs)
    rows = [task_row(spec) for spec in specs]
    with _connection(db) as conn:
        _upsert_tasks(conn, rows, _feature_rows(specs))
    return len(rows)


def _feature_rows(specs: Iterable[Any]) -> list[Row]:
    return [row for spec in specs for row in task_feature_rows(spec)]


def _upsert_tasks(
    conn: duckdb.DuckDBPyConnection, rows: list[Row], features: list[Row] | None = None
) -> None:
    """Replace the given task versions' rows and their features, in one transaction.

    The features are keyed like the task version (``meta.exercises`` is part of the spec hash,
    so an edited list is a new version): re-loading a version replaces its features, never
    duplicates them.
    """
    if not rows:
        return
    conn.begin()
    try:
        for row in rows:
            for table in ("task_features", "tasks"):
                conn.execute(
                    f"DELETE FROM {SCHEMA}.{table} WHERE task_id = ? AND spec_hash = ?",
                    [row["task_id"], row["spec_hash"]],
                )
        _insert(conn, "tasks", rows)
        _insert(conn, "task_features", features or [])
        conn.commit()
    except BaseException:
        conn.rollback()
        raise


def load_experiment(
    db: DbTarget,
    cells: Iterable[CellLoad],
    expected: Sequence[str] | None = None,
    *,
    tasks: Iterable[Any] = (),
    loaded_at: datetime | None = None,
    experiment: ExperimentRecord | None = None,
) -> tuple[list[CellLoadResult], Coverage]:
    """Load many cells and report coverage.

    Every valid cell is replaced in one transaction (one insert per table for the batch: the
    cost is mostly per statement). A cell with invalid input is recorded in
    ``Coverage.failed_loads`` and the others still load; on a database error the batch is
    rolled back and retried one transaction per cell, so only the failing cell is left out.
    A cell that fails keeps its previous rows, if any.

    Args:
        db: DuckDB file path or open connection (one connection is used for every cell).
        cells: The cells to load (missing or failed partitions are simply absent).
        expected: Every cell key of the experiment; defaults to the keys given in ``cells``.
        tasks: ``TaskSpec`` objects to upsert into ``eval.tasks`` (for per-language models).
        loaded_at: Load timestamp (now by default).
        experiment: The experiment run to record in ``eval.experiments``; the loaded cells'
            runs and metrics are appended to the history tables under its id. None: the latest
            rows are replaced and no history is kept.

    Returns:
        The per-cell results and the coverage (cells present / expected).
    """
    failures: dict[str, str] = {}
    given: list[str] = []
    prepared: list[tuple[str, CellRows]] = []
    for item in cells:
        key = item.cell.key
        given.append(key)
        try:
            prepared.append((key, _prepare(item, loaded_at)))
        except WarehouseInputError as error:
            failures[key] = str(error)
    results: list[CellLoadResult] = []
    with _connection(db) as conn:
        specs = list(tasks)
        _upsert_tasks(conn, [task_row(spec) for spec in specs], _feature_rows(specs))
        experiment_id = experiment.experiment_id if experiment is not None else None
        try:
            deleted = _replace_cells(conn, prepared, experiment_id)
            results = [CellLoadResult(k, rows.counts(), deleted[k]) for k, rows in prepared]
        except duckdb.Error:
            # Find the culprit: one transaction per cell, so the others still load.
            for key, rows in prepared:
                try:
                    one = _replace_cells(conn, [(key, rows)], experiment_id)
                    results.append(CellLoadResult(key, rows.counts(), one[key]))
                except duckdb.Error as error:
                    failures[key] = str(error)
        coverage = cell_coverage(
            conn, list(expected if expected is not None else dict.fromkeys(given))
        )
        if experiment is not None:
            record_experiment(
                conn, experiment, cells_loaded=len(results), cells_failed=len(failures)
            )
    return results, Coverage(coverage.expected, coverage.present, coverage.missing, failures)


def delete_cell(db: DbTarget, cell_key: str) -> int:
    """Remove every row of one cell (e.g. a cell dropped from the benchmark).

    Returns:
        The number of rows deleted over all tables.
    """
    total = 0
    with _connection(db) as conn:
        conn.begin()
        try:
            for table in reversed(CELL_TABLES):
                result = conn.execute(
                    f"DELETE FROM {table.qualified} WHERE cell_key = ?", [cell_key]
                ).fetchone()
                total += int(result[0]) if result else 0
            conn.commit()
        except BaseException:
            conn.rollback()
            raise
    return total
