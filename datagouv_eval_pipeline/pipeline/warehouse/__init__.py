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
    from datagouv_eval_pipeline.pipeline.warehouse.calibration import (
        calibration_rows,
        latest_calibration,
        write_calibration,
        write_review_labels,
    )
    from datagouv_eval_pipeline.pipeline.warehouse.connections import (
        QueryInterrupted,
        interrupt_queries,
        run_interruptibly,
        track,
    )
    from datagouv_eval_pipeline.pipeline.warehouse.dbt_docs import built_columns, docs_files
    from datagouv_eval_pipeline.pipeline.warehouse.error_bars import compute_statistics
    from datagouv_eval_pipeline.pipeline.warehouse.gate import (
        COVERAGE_TOLERANCE,
        HEADLINE_METRICS,
        NOT_COMPARABLE,
        SCORED,
        WORSE,
        GateComparison,
        GateError,
        GateReport,
        GateSettings,
        evaluate_gate,
        read_gate_results,
        summary_lines,
        write_gate_results,
    )
    from datagouv_eval_pipeline.pipeline.warehouse.history import (
        ExperimentRecord,
        config_hash,
        latest_experiment,
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
    from datagouv_eval_pipeline.pipeline.warehouse.location import DUCKDB_ENV, default_duckdb_path
    from datagouv_eval_pipeline.pipeline.warehouse.metric_docs import (
        WAREHOUSE_DOCS,
        MarkersMissingError,
        with_metric_table,
    )
    from datagouv_eval_pipeline.pipeline.warehouse.queries import Coverage, cell_coverage
    from datagouv_eval_pipeline.pipeline.warehouse.review import (
        ReviewError,
        calibration_document,
        check_review,
        draft_tasks,
        draw_sample,
        judge_outcomes,
        label_rows,
        read_review,
        write_calibration_file,
        write_review,
    )
    from datagouv_eval_pipeline.pipeline.warehouse.rows import RunLoad, WarehouseInputError
    from datagouv_eval_pipeline.pipeline.warehouse.schema import (
        ALL_TABLES,
        COMPARISONS,
        DDL,
        EXPERIMENTS,
        FEATURE_COMPARISONS,
        FEATURE_ESTIMATES,
        GATE_RESULTS,
        JUDGE_CALIBRATION,
        METRIC_ESTIMATES,
        METRICS_HISTORY,
        PIPELINE_TABLES,
        QUESTION_COMPARISONS,
        QUESTIONS,
        SCHEMA,
        SCHEMA_VERSION,
        STATISTICS_TABLES,
        TABLES,
        TABLES_BY_NAME,
        TASK_FEATURES,
        Column,
        SchemaVersionError,
        Table,
        create_schema,
    )
    from datagouv_eval_pipeline.pipeline.warehouse.storage import describe_open_error
    from datagouv_eval_pipeline.pipeline.warehouse.trends import TrendPoint, cell_trends

_MODULE_OF: dict[str, str] = {
    "ALL_TABLES": ".schema",
    "COMPARISONS": ".schema",
    "COVERAGE_TOLERANCE": ".gate",
    "CellLoad": ".loader",
    "CellLoadResult": ".loader",
    "Column": ".schema",
    "Coverage": ".queries",
    "DDL": ".schema",
    "DUCKDB_ENV": ".location",
    "EXPERIMENTS": ".schema",
    "ExperimentRecord": ".history",
    "FEATURE_COMPARISONS": ".schema",
    "FEATURE_ESTIMATES": ".schema",
    "GATE_RESULTS": ".schema",
    "GateComparison": ".gate",
    "GateError": ".gate",
    "GateReport": ".gate",
    "GateSettings": ".gate",
    "HEADLINE_METRICS": ".gate",
    "JUDGE_CALIBRATION": ".schema",
    "METRICS_HISTORY": ".schema",
    "METRIC_ESTIMATES": ".schema",
    "MarkersMissingError": ".metric_docs",
    "NOT_COMPARABLE": ".gate",
    "PIPELINE_TABLES": ".schema",
    "QUESTIONS": ".schema",
    "QUESTION_COMPARISONS": ".schema",
    "QueryInterrupted": ".connections",
    "ReviewError": ".review",
    "RunLoad": ".rows",
    "SCHEMA": ".schema",
    "SCHEMA_VERSION": ".schema",
    "SCORED": ".gate",
    "STATISTICS_TABLES": ".schema",
    "SchemaVersionError": ".schema",
    "TABLES": ".schema",
    "TABLES_BY_NAME": ".schema",
    "TASK_FEATURES": ".schema",
    "Table": ".schema",
    "TrendPoint": ".trends",
    "WAREHOUSE_DOCS": ".metric_docs",
    "WORSE": ".gate",
    "WarehouseInputError": ".rows",
    "built_columns": ".dbt_docs",
    "calibration_document": ".review",
    "calibration_rows": ".calibration",
    "cell_coverage": ".queries",
    "cell_trends": ".trends",
    "check_review": ".review",
    "compute_statistics": ".error_bars",
    "config_hash": ".history",
    "connect": ".loader",
    "create_schema": ".schema",
    "default_duckdb_path": ".location",
    "delete_cell": ".loader",
    "describe_open_error": ".storage",
    "docs_files": ".dbt_docs",
    "draft_tasks": ".review",
    "draw_sample": ".review",
    "evaluate_gate": ".gate",
    "interrupt_queries": ".connections",
    "judge_outcomes": ".review",
    "label_rows": ".review",
    "latest_calibration": ".calibration",
    "latest_experiment": ".history",
    "load_cell": ".loader",
    "load_experiment": ".loader",
    "load_tasks": ".loader",
    "new_experiment": ".history",
    "read_gate_results": ".gate",
    "read_review": ".review",
    "run_interruptibly": ".connections",
    "summary_lines": ".gate",
    "track": ".connections",
    "with_metric_table": ".metric_docs",
    "write_calibration": ".calibration",
    "write_calibration_file": ".review",
    "write_gate_results": ".gate",
    "write_review": ".review",
    "write_review_labels": ".calibration",
}
"""Each public name, and the module that defines it."""

if not TYPE_CHECKING:  # hidden from mypy, which then checks each name imported from the face

    def __getattr__(name: str) -> Any:
        """Import the module defining a public name on first use (PEP 562)."""
        module = _MODULE_OF.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, __name__), name)
        globals()[name] = value
        return value


__all__ = [
    "ALL_TABLES",
    "COMPARISONS",
    "COVERAGE_TOLERANCE",
    "DDL",
    "DUCKDB_ENV",
    "EXPERIMENTS",
    "FEATURE_COMPARISONS",
    "FEATURE_ESTIMATES",
    "GATE_RESULTS",
    "HEADLINE_METRICS",
    "JUDGE_CALIBRATION",
    "METRICS_HISTORY",
    "METRIC_ESTIMATES",
    "NOT_COMPARABLE",
    "PIPELINE_TABLES",
    "QUESTIONS",
    "QUESTION_COMPARISONS",
    "SCHEMA",
    "SCHEMA_VERSION",
    "SCORED",
    "STATISTICS_TABLES",
    "TABLES",
    "TABLES_BY_NAME",
    "TASK_FEATURES",
    "WAREHOUSE_DOCS",
    "WORSE",
    "CellLoad",
    "CellLoadResult",
    "Column",
    "Coverage",
    "ExperimentRecord",
    "GateComparison",
    "GateError",
    "GateReport",
    "GateSettings",
    "MarkersMissingError",
    "QueryInterrupted",
    "ReviewError",
    "RunLoad",
    "SchemaVersionError",
    "Table",
    "TrendPoint",
    "WarehouseInputError",
    "built_columns",
    "calibration_document",
    "calibration_rows",
    "cell_coverage",
    "cell_trends",
    "check_review",
    "compute_statistics",
    "config_hash",
    "connect",
    "create_schema",
    "default_duckdb_path",
    "delete_cell",
    "describe_open_error",
    "docs_files",
    "draft_tasks",
    "draw_sample",
    "evaluate_gate",
    "interrupt_queries",
    "judge_outcomes",
    "label_rows",
    "latest_calibration",
    "latest_experiment",
    "load_cell",
    "load_experiment",
    "load_tasks",
    "new_experiment",
    "read_gate_results",
    "read_review",
    "run_interruptibly",
    "summary_lines",
    "track",
    "with_metric_table",
    "write_calibration",
    "write_calibration_file",
    "write_gate_results",
    "write_review",
    "write_review_labels",
]
