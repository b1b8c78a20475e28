"""Jobs, the weekly schedule and the sensors.

* ``experiment``: every asset; one run covers a contiguous range of cells (single-run backfill
  policy), so the whole default experiment is one Dagster run.
* ``experiment_dry_run``: lists the cells and the cost estimate without running any agent.
* ``weekly_experiment``: every Monday 03:00 UTC, one live run per model provider whose API key
  the instance's environment holds (and the offline baselines), with the judge configured for
  live use (``experiment.live``), each tagged with its provider so the instance's tag
  concurrency limits keep one run per provider at a time.
* ``new_cells``: requests the agent runs of cells that were never materialized (a new model or
  MCP version, a new ``build:`` entry added to the YAML), and says when the YAML has cells the
  loaded code does not.
* ``new_builds``: requests the agent runs of a real MCP build's cells again when the build's
  code changed since their results (a ``path:`` checkout with new commits, a reinstall).
* ``active_cell_partitions``: registers the active cells as partitions of the instance (on by
  default; the CLI does it too), so a fresh instance shows them (``defs/partitions.py``).
* ``eval_automation``: evaluates the declarative automation (downstream stages follow their
  partition; the warehouse fires once the cells are done), running by default.
"""

import os
from typing import Any

import dagster as dg

from datagouv_eval_pipeline.core.benchmark import expand_cells, load_benchmark_config
from datagouv_eval_pipeline.defs import partitions
from datagouv_eval_pipeline.defs.partitions import (
    ACTIVE_CELLS,
    CELL_PARTITIONS,
    CELLS,
    CELLS_BY_KEY,
    cells_to_register,
    provider_ranges,
    range_keys,
    register_cells,
)
from datagouv_eval_pipeline.defs.resources import (
    CatalogResource,
    ExperimentSettings,
    RunStoreResource,
)
from datagouv_eval_pipeline.pipeline.experiment import (
    changed_builds,
    current_snapshot_id,
    live_config,
    plan_experiment,
)

WEEKLY_CRON = "0 3 * * 1"
PROVIDER_TAG = "datagouv-eval/provider"
LIVE_TAG = "datagouv-eval/live"

experiment_job = dg.define_asset_job(
    "experiment",
    # The version observations have their own jobs (``defs/versions.py``): the per-task one
    # has other partitions than the cells. The judge's calibration runs on demand
    # (``datagouv-eval judge calibrate`` or the asset): with an LLM judge it costs a model call
    # per labelled item, which a run of the benchmark must not pay each time its judge changes.
    selection=dg.AssetSelection.all()
    - dg.AssetSelection.assets("cell_setups", "task_spec_files", ["eval", "judge_calibration"]),
    description="Every stage of the experiment, for a range of cells, in one run.",
)

agent_runs_job = dg.define_asset_job(
    "agent_runs_for_new_cells",
    selection=dg.AssetSelection.assets("agent_runs").downstream(),
)


@dg.op(description="List the cells and estimate requests, tokens and cost; run no agent.")
def plan_experiment_op(
    context: dg.OpExecutionContext,
    experiment: ExperimentSettings,
    catalog: CatalogResource,
    run_store: RunStoreResource,
) -> None:
    """Log the plan (cached runs counted, the twin not started) and emit it as metadata."""
    plan = plan_experiment(
        evaluation_types=experiment.evaluation_types,
        task_ids=experiment.task_ids,
        repeats=experiment.repeats,
        cells=experiment.cells,
    )
    estimates = plan.estimate(
        cache=run_store.agent_cache(),
        snapshot_id=None if catalog.live else (catalog.snapshot_id or current_snapshot_id()),
        rerun=experiment.rerun,
        live=catalog.live,
    )
    for estimate in estimates:
        cost = "unpriced" if estimate.cost is None else f"{estimate.cost:.4f} {estimate.currency}"
        context.log.info(
            "%s: %d task runs, %d cached, %d skipped, ~%d requests, ~%d tokens, %s",
            estimate.cell_key,
            estimate.task_runs,
            estimate.cached_runs,
            estimate.skipped_runs,
            estimate.requests,
            estimate.input_tokens + estimate.output_tokens,
            cost,
        )
    priced = [e.cost for e in estimates if e.cost is not None]
    context.add_output_metadata(
        {
            "cells": len(plan.cells),
            "tasks": len(plan.tasks),
            "task_runs": plan.task_runs,
            "cached_runs": sum(e.cached_runs for e in estimates),
            "skipped_runs": sum(e.skipped_runs for e in estimates),
            "estimated_requests": sum(e.requests for e in estimates),
            "estimated_cost": sum(priced),
            "unpriced_cells": len(estimates) - len(priced),
        }
    )


@dg.job(description="Dry run: the cells and the cost estimate, without running agents.")
def experiment_dry_run() -> None:
    """List the plan."""
    plan_experiment_op()


@dg.schedule(
    job=experiment_job,
    cron_schedule=WEEKLY_CRON,
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.STOPPED,
    description="Weekly live re-run of the benchmark, one run per model provider with a key.",
)
def weekly_experiment(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest] | dg.SkipReason:
    """One live run per provider whose key is set, each over its contiguous range of cells.

    The configuration comes from the instance's environment (``experiment.live``); an
    impossible one (an LLM judge without its key) raises, so the tick fails and says why.
    """
    config = live_config(partitions.ACTIVE_CELLS, os.environ)
    for provider, why in config.left_out.items():
        context.log.info("provider %s left out of the weekly run: %s", provider, why)
    order = register_cells(context.instance)
    ranges = provider_ranges(order)
    requests = [
        dg.RunRequest(
            run_key=f"{provider}:{context.scheduled_execution_time:%Y-%m-%d}",
            run_config=_only_provider_cells(config.run_config(), provider, order, ranges),
            tags={
                "dagster/asset_partition_range_start": ranges[provider][0],
                "dagster/asset_partition_range_end": ranges[provider][1],
                PROVIDER_TAG: provider,
                LIVE_TAG: "true" if config.live else "false",
            },
        )
        for provider in config.providers
    ]
    if not requests:
        return dg.SkipReason(
            "no provider can run: " + "; ".join(f"{p}: {w}" for p, w in config.left_out.items())
        )
    return requests


def _only_provider_cells(
    run_config: dict[str, Any],
    provider: str,
    order: list[str],
    ranges: dict[str, tuple[str, str]],
) -> dict[str, Any]:
    """``run_config`` naming the provider's cells when its range holds other cells too.

    On a fresh instance each provider's active cells are contiguous; cells registered later
    (a new model, an inactive cell run on request) can fall inside a range, and must not run.
    """
    mine = [c.key for c in partitions.ACTIVE_CELLS if c.model.provider == provider]
    if set(range_keys(order, *ranges[provider])) <= set(mine):
        return run_config
    experiment = {"config": {"cells": mine}}
    return {**run_config, "resources": {**run_config["resources"], "experiment": experiment}}


@dg.sensor(
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Registers the active cells of the YAML as partitions of the instance.",
)
def active_cell_partitions(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
    """Add the active cells the instance lacks (inactive ones are added when asked for)."""
    missing = cells_to_register(context.instance.get_dynamic_partitions(CELL_PARTITIONS))
    if not missing:
        return dg.SkipReason(f"the {len(ACTIVE_CELLS)} active cells are partitions")
    return dg.SensorResult(
        dynamic_partitions_requests=[dg.AddDynamicPartitionsRequest(CELL_PARTITIONS, missing)]
    )


@dg.sensor(
    job=agent_runs_job,
    minimum_interval_seconds=300,
    default_status=dg.DefaultSensorStatus.STOPPED,
    description="Runs the cells never materialized (a new model or MCP version in the YAML).",
)
def new_cells(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
    """Request each never-materialized cell once; flag YAML cells the loaded code lacks."""
    on_disk = {cell.key for cell in expand_cells(load_benchmark_config())}
    loaded = {cell.key for cell in CELLS}
    done = context.instance.get_materialized_partitions(dg.AssetKey("agent_runs"))
    # Cells of inactive evaluation types are partitions too, run on request only.
    fresh = [cell for cell in ACTIVE_CELLS if cell.key not in done]
    if not fresh:
        unloaded = sorted(on_disk - loaded)
        if unloaded:
            return dg.SkipReason(
                f"{len(unloaded)} cell(s) in the YAML are not loaded yet; reload the code "
                f"location: {', '.join(unloaded[:5])}"
            )
        return dg.SkipReason("every cell has agent runs")
    registered = context.instance.get_dynamic_partitions(CELL_PARTITIONS)
    return dg.SensorResult(
        dynamic_partitions_requests=_register(cells_to_register(registered)),
        run_requests=[
            dg.RunRequest(
                run_key=cell.key,
                partition_key=cell.key,
                tags={PROVIDER_TAG: cell.model.provider},
            )
            for cell in fresh
        ],
    )


@dg.sensor(
    job=agent_runs_job,
    minimum_interval_seconds=600,
    default_status=dg.DefaultSensorStatus.STOPPED,
    description="Re-runs the cells of a real MCP build whose code changed (a checkout's commits).",
)
def new_builds(
    context: dg.SensorEvaluationContext, run_store: RunStoreResource
) -> dg.SensorResult | dg.SkipReason:
    """Request each build cell once per new code digest (new build entries: ``new_cells``)."""
    changes, notes = changed_builds(CELLS, run_store.store())
    for note in notes:
        context.log.info("%s", note)
    if not changes:
        builds = sum(1 for cell in CELLS if cell.mcp_build is not None)
        return dg.SkipReason(f"no build changed ({builds} build cell(s) known)")
    registered = context.instance.get_dynamic_partitions(CELL_PARTITIONS)
    # A build cell may be inactive: it becomes a partition when its code changes.
    added = cells_to_register(registered, [change.cell_key for change in changes])
    return dg.SensorResult(
        dynamic_partitions_requests=_register(added),
        run_requests=[
            dg.RunRequest(
                run_key=f"{change.cell_key}@{change.digest[:16]}",
                partition_key=change.cell_key,
                tags={PROVIDER_TAG: CELLS_BY_KEY[change.cell_key].model.provider},
            )
            for change in changes
        ],
    )


def _register(keys: list[str]) -> list[dg.AddDynamicPartitionsRequest]:
    """The request adding ``keys`` as partitions (none when empty); applied before the runs."""
    return [dg.AddDynamicPartitionsRequest(CELL_PARTITIONS, keys)] if keys else []


eval_automation = dg.AutomationConditionSensorDefinition(
    "eval_automation",
    target=dg.AssetSelection.all(),
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30,
)
