"""The DuckDB warehouse: documented tables, idempotent per-cell loaders, standard queries.

Pure: no Dagster here. The Dagster warehouse asset calls :func:`load_experiment` (or
:func:`load_cell` per partition) with what the partitioned stages stored. ``docs/warehouse.md``
documents every table.
"""

from datagouv_eval_pipeline.warehouse.history import ExperimentRecord, config_hash, new_experiment
from datagouv_eval_pipeline.warehouse.loader import (
    CellLoad,
    CellLoadResult,
    Coverage,
    cell_coverage,
    connect,
    delete_cell,
    load_cell,
    load_experiment,
    load_tasks,
)
from datagouv_eval_pipeline.warehouse.rows import CellRecord, WarehouseInputError, run_id
from datagouv_eval_pipeline.warehouse.schema import (
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
    "CellRecord",
    "Column",
    "Coverage",
    "ExperimentRecord",
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
    "run_id",
]
