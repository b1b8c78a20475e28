"""The DuckDB warehouse: documented tables, idempotent per-cell loaders, standard queries.

Pure: no Dagster here. The Dagster warehouse asset calls :func:`load_experiment` (or
:func:`load_cell` per partition) with what the partitioned stages stored. ``docs/warehouse.md``
documents every table.

The public names are imported on first use (PEP 562), so that a command needing only the
warehouse's location or schema (``datagouv-eval sql``) does not import the loaders, the judges
and pandas behind them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from datagouv_eval_pipeline.pipeline.warehouse.history import (
        ExperimentRecord,
        config_hash,
        new_experiment,
    )
    from datagouv_eval_pipeline.pipeline.warehouse.loader import (
        CellLoad,
        CellLoadResult,
        connect,
        delete_cell,
        load_cell,
        load_experiment,
        load_tasks,
    )
    from datagouv_eval_pipeline.pipeline.warehouse.queries import Coverage, cell_coverage
    from datagouv_eval_pipeline.pipeline.warehouse.rows import RunLoad, WarehouseInputError
    from datagouv_eval_pipeline.pipeline.warehouse.schema import (
        ALL_TABLES,
        DDL,
        SCHEMA,
        SCHEMA_VERSION,
        STATISTICS_TABLES,
        TABLES,
        TABLES_BY_NAME,
        Column,
        SchemaVersionError,
        Table,
        create_schema,
    )

_MODULE_OF: dict[str, str] = {
    "ALL_TABLES": "schema",
    "CellLoad": "loader",
    "CellLoadResult": "loader",
    "Column": "schema",
    "Coverage": "queries",
    "DDL": "schema",
    "ExperimentRecord": "history",
    "SCHEMA": "schema",
    "SCHEMA_VERSION": "schema",
    "RunLoad": "rows",
    "STATISTICS_TABLES": "schema",
    "SchemaVersionError": "schema",
    "TABLES": "schema",
    "TABLES_BY_NAME": "schema",
    "Table": "schema",
    "WarehouseInputError": "rows",
    "cell_coverage": "queries",
    "config_hash": "history",
    "connect": "loader",
    "create_schema": "schema",
    "delete_cell": "loader",
    "load_cell": "loader",
    "load_experiment": "loader",
    "load_tasks": "loader",
    "new_experiment": "history",
}
"""Each public name, and the module of this package that defines it."""


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "ALL_TABLES",
    "DDL",
    "SCHEMA",
    "SCHEMA_VERSION",
    "STATISTICS_TABLES",
    "TABLES",
    "TABLES_BY_NAME",
    "CellLoad",
    "CellLoadResult",
    "Column",
    "Coverage",
    "ExperimentRecord",
    "RunLoad",
    "SchemaVersionError",
    "Table",
    "WarehouseInputError",
    "cell_coverage",
    "config_hash",
    "connect",
    "create_schema",
    "delete_cell",
    "load_cell",
    "load_experiment",
    "load_tasks",
    "new_experiment",
]
