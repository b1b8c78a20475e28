"""The ``agent_runs`` asset: every task of a cell run by the cell's agent (one partition per cell).

Task runs are cached by the hash of their inputs (``experiment.cache``): re-materializing a
cell asks the model again only for the tasks whose spec, setup, snapshot or code changed, the
code being the cell's own (the shared agent code and its toolsets', ``experiment.fingerprints``).
The cells of a run go side by side on their providers' lanes, within the slots the step claims
in each provider's pool (``defs/provider_pools.py``, ``pipeline/experiment/lanes.py``).
"""

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import dagster as dg

from datagouv_eval_pipeline.core.benchmark import Cell, ProviderKind, load_benchmark_config
from datagouv_eval_pipeline.core.tasks import TASK_SPECS_DIR, load_task_specs
from datagouv_eval_pipeline.defs.catalog_validation import catalog_validation
from datagouv_eval_pipeline.defs.interrupts import stop_if_requested
from datagouv_eval_pipeline.defs.partitions import CELLS_BY_KEY
from datagouv_eval_pipeline.defs.per_cell import (
    StageEvent,
    cell_results,
    cell_stage,
    not_selected,
    process_cells,
)
from datagouv_eval_pipeline.defs.provider_pools import claimed_slots
from datagouv_eval_pipeline.defs.resources import (
    CatalogResource,
    ExperimentSettings,
    RunStoreResource,
)
from datagouv_eval_pipeline.defs.task_specs import task_specs
from datagouv_eval_pipeline.defs.versions import cell_setups, task_spec_files
from datagouv_eval_pipeline.pipeline.agents import CancelToken, cancel_on_signals
from datagouv_eval_pipeline.pipeline.experiment import (
    AGENT_RUNS,
    AgentRunsDocument,
    offline_only,
    plan_lanes,
    pool_name,
    provider_slots,
    quarantined_tasks,
    run_agents,
    running_lanes,
    select_tasks,
    shared_run_code,
)

if TYPE_CHECKING:
    # The agents' code is imported when the cells run (stages.run_agents), not at load.
    from datagouv_eval_pipeline.pipeline.agents import RunSettings


@cell_stage(
    # Per-cell and per-task versions (``defs/versions.py``): an edit stales only what it changes.
    deps=[
        task_specs,
        catalog_validation,
        cell_setups,
        dg.AssetDep(task_spec_files, partition_mapping=dg.AllPartitionMapping()),
    ],
    # The code every cell shares; each cell's toolset code is in its ``cell_setups`` version.
    code_version=shared_run_code()[:12],
    # Not eager: agent runs cost model calls; jobs and the new-cells sensor ask for them.
    # No static pool either: the step claims slots in each provider's pool (provider_pools.py).
    eager=False,
)
def agent_runs(
    context: dg.AssetExecutionContext,
    experiment: ExperimentSettings,
    catalog: CatalogResource,
    run_store: RunStoreResource,
) -> Iterator[StageEvent]:
    """Run every selected task of each cell against the catalog and store the traces."""
    yield from run_agent_cells(context, experiment, catalog, run_store)


def run_agent_cells(
    context: dg.AssetExecutionContext,
    experiment: ExperimentSettings,
    catalog: CatalogResource,
    run_store: RunStoreResource,
    *,
    cells_by_key: Mapping[str, Cell] = CELLS_BY_KEY,
    slots: Mapping[str, int] | None = None,
) -> Iterator[StageEvent]:
    """The body of ``agent_runs``: the run's cells on their providers' lanes.

    Args:
        context: The step's context (its partition keys are the cells).
        experiment: The run's settings.
        catalog: The catalog the agents use.
        run_store: Where the traces go.
        cells_by_key: Cell of each partition key (the YAML's cells).
        slots: Slots wanted per provider (default: ``models.yml``).
    """
    stop_if_requested(context)
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
    totals = {"executed": 0, "reused": 0}

    def progress(summary: dict[str, Any]) -> str:
        statuses: dict[str, int] = summary["statuses"]
        counts = ", ".join(f"{n} {status}" for status, n in sorted(statuses.items()))
        return f"{sum(statuses.values())} runs, {counts} ({summary['reused']} from the cache)"

    def excluded(cell: Cell) -> str | None:
        if (
            why := not_selected(
                cell.key, experiment.evaluation_types, cells_by_key, chosen=experiment.cells
            )
        ) is not None:
            return why
        if catalog.live and (why := offline_only(cell)):
            return why  # its offline results stay
        return None

    def arguments(cell: Cell) -> dict[str, Any]:
        # What a worker process needs (picklable); the builds stay in this process.
        return {
            "tasks": tasks,
            "twin_urls": catalog.urls(),
            "snapshot_id": catalog.served_snapshot(),
            "repeats": experiment.repeats,
            "cache": cache,
            "reuse": not experiment.rerun,
            # An unreadable previous document fails this cell only (RunStoreError names the
            # file and the field) and is left as it is for a person to look at.
            "previous": store.read_document(AGENT_RUNS, cell.key, AgentRunsDocument),
            "keep_tasks": keep if experiment.task_ids else (),
            "model_base_url": experiment.model_base_url or None,
        }

    def run_here(cell: Cell, settings: "RunSettings", cancel: CancelToken | None) -> Any:
        served: dict[str, Any] = {}
        if cell.model.kind == ProviderKind.LLAMA_CPP:
            # Its llama.cpp server starts with the first of its cells, stops with the run.
            served["model_base_url"] = catalog.local_models().base_url(cell.model)
        return run_agents(
            cell,
            settings=settings,
            builds=catalog.builds() if cell.mcp_build is not None else None,
            cancel=cancel,
            **served,
            **arguments(cell),
        )

    cells = [cells_by_key[key] for key in context.partition_keys if key in cells_by_key]
    runnable = [cell for cell in cells if excluded(cell) is None]
    if runnable:
        catalog.urls()  # start the twin before the lanes share it
    if slots is None:
        slots = provider_slots(load_benchmark_config())
    offline = {cell.model.provider for cell in cells if cell.model.kind == ProviderKind.OFFLINE}
    wanted = {name: slots[name] for name in dict.fromkeys(c.model.provider for c in runnable)}

    # Ctrl-C or SIGTERM stops the cells in progress (their in-flight runs end as cancelled, the
    # finished ones are cached) and fails the step: the next run resumes from the cache.
    with (
        cancel_on_signals() as stop,
        claimed_slots(
            context, wanted, cancel=stop, pool_limits={pool_name(p): n for p, n in slots.items()}
        ) as got,
    ):
        plans = {
            name: plan_lanes(
                name,
                count,
                max_per_cell=experiment.max_concurrency,
                offline=name in offline,
                max_workers=experiment.worker_processes,
            )
            for name, count in got.items()
        }
        with running_lanes(
            runnable,
            plans,
            run_here,
            arguments,
            needs_parent=lambda cell: cell.mcp_build is not None,
            cancel=stop,
        ) as futures:

            def work(key: str) -> tuple[AgentRunsDocument, dict[str, Any]] | str:
                cell = cells_by_key.get(key)
                if cell is None:
                    return "not a cell of the benchmark configuration any more"
                why = excluded(cell)
                if why is not None:
                    return why
                result = futures[key].result()
                totals["executed"] += result.executed
                totals["reused"] += result.reused
                summary = {
                    "executed": result.executed,
                    "reused": result.reused,
                    "statuses": dict(result.statuses),
                }
                if result.problem is not None:
                    summary["problem"] = result.problem
                if result.missing_key is not None:
                    summary["missing_key"] = result.missing_key
                if result.missing_sandbox is not None:
                    summary["missing_sandbox"] = result.missing_sandbox
                return result.document, summary

            outcomes = process_cells(
                context, store, AGENT_RUNS, work, cancel=stop, progress=progress
            )
    context.log.info(
        "%d cell(s): %d task runs executed, %d reused from the cache (per cell: metadata)",
        len(outcomes.written),
        totals["executed"],
        totals["reused"],
    )
    yield from cell_results(
        context,
        outcomes,
        task_runs_executed=totals["executed"],
        task_runs_reused=totals["reused"],
        quarantined_tasks=dg.MetadataValue.json(sorted(quarantined)),
    )
