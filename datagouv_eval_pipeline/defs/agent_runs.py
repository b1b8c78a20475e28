"""The ``agent_runs`` asset: every task of a cell run by the cell's agent (one partition per cell).

Task runs are cached by the hash of their inputs (``experiment.cache``): re-materializing a
cell asks the model again only for the tasks whose spec, setup, snapshot or run code changed.
"""

from typing import Any

import dagster as dg

from datagouv_eval_pipeline.agents.cancel import cancel_on_signals
from datagouv_eval_pipeline.agents.runner import RunSettings
from datagouv_eval_pipeline.defs.catalog_validation import catalog_validation
from datagouv_eval_pipeline.defs.partitions import CELLS_BY_KEY, cell_partitions
from datagouv_eval_pipeline.defs.per_cell import process_cells, result_of
from datagouv_eval_pipeline.defs.resources import (
    CatalogResource,
    ExperimentSettings,
    RunStoreResource,
)
from datagouv_eval_pipeline.defs.task_specs import task_specs
from datagouv_eval_pipeline.experiment.cache import run_code_fingerprint
from datagouv_eval_pipeline.experiment.plan import select_tasks
from datagouv_eval_pipeline.experiment.quarantine import quarantined_tasks
from datagouv_eval_pipeline.experiment.stages import AGENT_RUNS, run_agents
from datagouv_eval_pipeline.tasks import TASK_SPECS_DIR, load_task_specs


@dg.asset(
    partitions_def=cell_partitions,
    backfill_policy=dg.BackfillPolicy.single_run(),
    deps=[task_specs, catalog_validation],
    group_name="cells",
    kinds={"python"},
    code_version=run_code_fingerprint()[:12],
    pool="agent_runs",
)
def agent_runs(
    context: dg.AssetExecutionContext,
    experiment: ExperimentSettings,
    catalog: CatalogResource,
    run_store: RunStoreResource,
) -> dg.MaterializeResult[None]:
    """Run every selected task of each cell against the catalog and store the traces."""
    store = run_store.store()
    specs = load_task_specs([TASK_SPECS_DIR])
    selected = select_tasks(specs, experiment.task_ids)
    quarantined = {} if experiment.skip_validation else quarantined_tasks(store)
    tasks = [task for task in selected if task.task_id not in quarantined]
    if quarantined:
        # One line, not one per task: every log line is an event the instance stores.
        context.log.warning(
            "quarantined tasks skipped: %s",
            "; ".join(f"{task_id} ({why})" for task_id, why in quarantined.items()),
        )
    # Tasks outside an explicit selection keep their earlier traces.
    keep = [s.task_id for s in specs if s.task_id not in {t.task_id for t in tasks}]
    # --rerun asks the agents again but still stores their traces: an interrupted rerun resumes.
    cache = run_store.agent_cache()
    settings = RunSettings(max_concurrency=experiment.max_concurrency)
    totals = {"executed": 0, "reused": 0}

    def progress(summary: dict[str, Any]) -> str:
        statuses: dict[str, int] = summary["statuses"]
        counts = ", ".join(f"{n} {status}" for status, n in sorted(statuses.items()))
        return f"{sum(statuses.values())} runs, {counts} ({summary['reused']} from the cache)"

    def work(key: str) -> tuple[dict[str, Any], dict[str, Any]] | str:
        cell = CELLS_BY_KEY[key]
        if experiment.evaluation_types and not set(cell.evaluation_types) & set(
            experiment.evaluation_types
        ):
            return "not in the selected evaluation types"
        result = run_agents(
            cell,
            tasks,
            twin_urls=catalog.urls(),
            snapshot_id=catalog.served_snapshot(),
            repeats=experiment.repeats,
            cache=cache,
            reuse=not experiment.rerun,
            previous=store.read(AGENT_RUNS, key),
            keep_tasks=keep if experiment.task_ids else (),
            settings=settings,
            builds=catalog.builds() if cell.mcp_build is not None else None,
            cancel=stop,
        )
        totals["executed"] += result.executed
        totals["reused"] += result.reused
        summary = {
            "executed": result.executed,
            "reused": result.reused,
            "statuses": dict(result.statuses),
        }
        if result.problem is not None:
            summary["problem"] = result.problem
        return result.document, summary

    # Ctrl-C or SIGTERM stops the cell in progress (its in-flight runs end as cancelled, the
    # finished ones are cached) and fails the step: the next run resumes from the cache.
    with cancel_on_signals() as stop:
        outcomes = process_cells(context, store, AGENT_RUNS, work, cancel=stop, progress=progress)
    context.log.info(
        "%d cell(s): %d task runs executed, %d reused from the cache (per cell: metadata)",
        len(outcomes.written),
        totals["executed"],
        totals["reused"],
    )
    return result_of(
        outcomes,
        task_runs_executed=totals["executed"],
        task_runs_reused=totals["reused"],
        quarantined_tasks=dg.MetadataValue.json(sorted(quarantined)),
    )
