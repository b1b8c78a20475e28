"""The ``warehouse`` assets: the DuckDB tables analysts query, one asset per table.

This is the only loader of the DuckDB file (pool ``duckdb_writer``, limit 1): partitioned stages
write run store documents, and this fan-in loads every cell present, tolerating missing or failed
cells and reporting coverage. A cell's load replaces its rows (never duplicates them), and the
rows of cells that left the benchmark YAML are removed so the warehouse is the experiment.
Each materialization is one experiment run (``eval.experiments``, id = the Dagster run id):
the loaded runs and metrics are also appended to ``eval.runs_history`` / ``eval.metrics_history``.
The same step then runs the statistics stage (``defs/statistics.py``): error bars, paired
comparisons and the regression gate, so dbt runs once, after all of it.
"""

import dataclasses
from collections.abc import Iterator
from typing import Any

import dagster as dg

from datagouv_eval_pipeline.core.tasks import TASK_SPECS_DIR, load_task_specs
from datagouv_eval_pipeline.defs.interrupts import stop_if_requested, stopped_if_query_interrupted
from datagouv_eval_pipeline.defs.judge_scores import judge_scores
from datagouv_eval_pipeline.defs.partitions import ACTIVE_KEYS, CELLS
from datagouv_eval_pipeline.defs.resources import RunStoreResource, WarehouseResource
from datagouv_eval_pipeline.defs.result_tables import WAREHOUSE_PREVIEWS, preview_metadata
from datagouv_eval_pipeline.defs.statistics import GateConfig, run_statistics
from datagouv_eval_pipeline.pipeline.experiment import (
    ACTION_MAPPINGS,
    AGENT_RUNS,
    JUDGE_SCORES,
    ActionMappingsDocument,
    AgentRunsDocument,
    JudgeScoresDocument,
    RunStore,
    RunStoreError,
    StageInputError,
    cell_documents,
)
from datagouv_eval_pipeline.pipeline.warehouse import (
    PIPELINE_TABLES,
    SCHEMA,
    Table,
    config_hash,
    connect,
    delete_cell,
    load_experiment,
    new_experiment,
    queries,
)

# Fire once every partition upstream is done, even when some are missing or failed: the plain
# eager condition waits for all of them forever (``any_deps_missing``).
EAGER_TOLERATING_MISSING = (
    dg.AutomationCondition.eager()
    .without(~dg.AutomationCondition.any_deps_missing())
    .with_label("eager, tolerating missing cells")
)


def _column_schema(table: Table) -> dg.TableSchema:
    return dg.TableSchema(
        columns=[
            dg.TableColumn(
                column.name,
                column.type,
                description=column.doc,
                constraints=dg.TableColumnConstraints(nullable=column.nullable),
            )
            for column in table.columns
        ]
    )


WAREHOUSE_KEYS = [dg.AssetKey([SCHEMA, table.name]) for table in PIPELINE_TABLES]


@dg.multi_asset(
    specs=[
        dg.AssetSpec(
            key,
            deps=[judge_scores],
            group_name="warehouse",
            kinds={"duckdb"},
            description=f"{table.qualified}: {table.grain}.",
            metadata={"dagster/column_schema": _column_schema(table)},
            automation_condition=EAGER_TOLERATING_MISSING,
        )
        for key, table in zip(WAREHOUSE_KEYS, PIPELINE_TABLES, strict=True)
    ],
    pool="duckdb_writer",
    can_subset=False,
)
def warehouse(
    context: dg.AssetExecutionContext,
    run_store: RunStoreResource,
    warehouse: WarehouseResource,
    config: GateConfig,
) -> Iterator[dg.MaterializeResult[None]]:
    """Load every cell's documents into DuckDB, report coverage, then the statistics stage."""
    stop_if_requested(context)
    store = run_store.store()
    # The experiment is the active cells, plus any other cell materialized on request (an
    # inactive evaluation type run from the launchpad or with --evaluation-type).
    present = set(store.cell_keys(AGENT_RUNS))
    expected = [cell.key for cell in CELLS if cell.key in ACTIVE_KEYS or cell.key in present]
    loads = []
    failed_stages: dict[str, str] = {}
    unreadable: dict[str, str] = {}
    stale: dict[str, dict[str, str]] = {}
    for key in expected:
        # A corrupt or malformed document fails only its cell (its earlier rows are kept).
        try:
            runs = store.read_document(AGENT_RUNS, key, AgentRunsDocument)
            if runs is None:
                continue
            documents = cell_documents(
                runs,
                store.read_document(ACTION_MAPPINGS, key, ActionMappingsDocument),
                store.read_document(JUDGE_SCORES, key, JudgeScoresDocument),
            )
            # A cell whose last attempt at a stage failed loads its last good rows, flagged.
            reason = _last_failure(store, key)
        except (RunStoreError, StageInputError) as error:
            unreadable[key] = str(error)
            context.log.error("warehouse: cell %s not loaded: %s", key, error)
            continue
        if reason is not None:
            failed_stages[key] = reason
            documents = dataclasses.replace(
                documents, load=dataclasses.replace(documents.load, stale_reason=reason)
            )
        loads.append(documents.load)
        if documents.stale:
            stale[key] = documents.stale
    if failed_stages:
        context.log.warning(
            "warehouse: %d cell(s) keep their earlier rows, flagged in eval.cells.stale_reason: %s",
            len(failed_stages),
            "; ".join(f"{k} ({v})" for k, v in failed_stages.items()),
        )
    if stale:
        context.log.warning(
            "warehouse: %d cell(s) load with NULL scores: their later stages were computed "
            "from other agent runs (rematerialize them): %s",
            len(stale),
            "; ".join(f"{k} ({', '.join(v)})" for k, v in stale.items()),
        )
    db = warehouse.db_path()
    specs = load_task_specs([TASK_SPECS_DIR])
    # Every run is recorded: its rows join the history, the previous runs' rows stay.
    record = new_experiment(
        config_hash(
            [cell.to_record().model_dump() for cell in CELLS if cell.key in ACTIVE_KEYS],
            {s.task_id: s.spec_hash() for s in specs},
        ),
        dagster_run_id=context.run.run_id,
    )
    stop_if_requested(context, "the documents were read, nothing was loaded")
    with stopped_if_query_interrupted(context, "nothing was loaded"):
        results, coverage = load_experiment(db, loads, expected, tasks=specs, experiment=record)
    with connect(db, read_only=True) as conn:
        known = [row[0] for row in conn.execute(f"SELECT cell_key FROM {SCHEMA}.cells").fetchall()]
    dropped = [key for key in known if key not in {cell.key for cell in CELLS}]
    for key in dropped:
        delete_cell(db, key)
    stop_if_requested(context, "the runs were loaded, the statistics were not computed")
    with stopped_if_query_interrupted(context, "the runs were loaded"):
        statistics = run_statistics(context, db, config)
        with connect(db, read_only=True) as conn:
            counts = queries.row_counts(conn)
            # The questions and their answers, readable on the asset page as tables.
            previews = {name: preview_metadata(conn, p) for name, p in WAREHOUSE_PREVIEWS.items()}
    failures: dict[str, str] = {}
    for key in expected:
        try:
            failure = store.failure(AGENT_RUNS, key)
        except RunStoreError as error:  # an unreadable record is named, never fatal
            failures[key] = str(error)
            continue
        if failure is not None:
            failures[key] = failure.reason
    context.log.info(
        "warehouse %s: %d/%d cells, %d runs",
        db,
        len(coverage.present),
        len(expected),
        counts.get("runs", 0),
    )
    for asset_key, table in zip(WAREHOUSE_KEYS, PIPELINE_TABLES, strict=True):
        metadata: dict[str, Any] = {
            "path": str(db),
            "rows": counts.get(table.name, 0),
            "dagster/row_count": counts.get(table.name, 0),
        }
        metadata |= statistics.get(table.name, {})
        metadata |= previews.get(table.name, {})
        if table.name == "experiments":
            metadata |= {"experiment_id": record.experiment_id, "config_hash": record.config_hash}
        if table.name == "cells":
            metadata |= {
                "coverage": dg.MetadataValue.json(coverage.to_json()),
                "cells_loaded": len(results),
                "cells_with_failed_agent_runs": dg.MetadataValue.json(failures),
                "cells_dropped": dg.MetadataValue.json(dropped),
                "cells_unreadable": dg.MetadataValue.json(unreadable),
                "cells_with_stale_stages": dg.MetadataValue.json(stale),
                "cells_flagged_stale": dg.MetadataValue.json(failed_stages),
            }
        yield dg.MaterializeResult(asset_key=asset_key, metadata=metadata)


def _last_failure(store: RunStore, key: str) -> str | None:
    """The first cell stage whose last attempt failed for ``key``, as a reason; None if none."""
    for stage in (AGENT_RUNS, ACTION_MAPPINGS, JUDGE_SCORES):
        failure = store.failure(stage, key)
        if failure is not None:
            return f"{stage} failed at {failure.at}: {failure.reason}"
    return None
