"""Jobs, the weekly schedule and the sensors.

* ``experiment``: every asset; one run covers a contiguous range of cells (single-run backfill
  policy), so the whole default experiment is one Dagster run.
* ``experiment_dry_run``: lists the cells and the cost estimate without running any agent.
* ``weekly_experiment``: every Monday 03:00 UTC, one run per model provider against the
  configured catalog (the twin by default, live URLs in production), each tagged with its
  provider so the instance's tag concurrency limits keep one run per provider at a time.
* ``new_cells``: requests the agent runs of cells that were never materialized (a new model or
  MCP version added to the YAML), and says when the YAML has cells the loaded code does not.
* ``eval_automation``: evaluates the declarative automation (downstream stages follow their
  partition; the warehouse fires once the cells are done), running by default.
"""

from collections.abc import Iterator

import dagster as dg

from datagouv_eval_pipeline.benchmark.cells import expand_cells
from datagouv_eval_pipeline.benchmark.loader import load_benchmark_config
from datagouv_eval_pipeline.defs.partitions import CELLS, provider_ranges
from datagouv_eval_pipeline.defs.resources import ExperimentSettings
from datagouv_eval_pipeline.experiment.plan import plan_experiment

WEEKLY_CRON = "0 3 * * 1"
PROVIDER_TAG = "datagouv-eval/provider"

experiment_job = dg.define_asset_job(
    "experiment",
    selection=dg.AssetSelection.all(),
    description="Every stage of the experiment, for a range of cells, in one run.",
)

agent_runs_job = dg.define_asset_job(
    "agent_runs_for_new_cells",
    selection=dg.AssetSelection.assets("agent_runs").downstream(),
)


@dg.op(description="List the cells and estimate requests, tokens and cost; run no agent.")
def plan_experiment_op(context: dg.OpExecutionContext, experiment: ExperimentSettings) -> None:
    """Log the plan and emit it as an asset-free output with metadata."""
    plan = plan_experiment(
        evaluation_types=experiment.evaluation_types,
        task_ids=experiment.task_ids,
        repeats=experiment.repeats,
    )
    estimates = plan.estimate()
    for estimate in estimates:
        cost = "unpriced" if estimate.cost is None else f"{estimate.cost:.4f} {estimate.currency}"
        context.log.info(
            "%s: %d task runs, ~%d requests, ~%d tokens, %s",
            estimate.cell_key,
            estimate.task_runs,
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
    description="Weekly re-run of the benchmark, one run per model provider.",
)
def weekly_experiment(context: dg.ScheduleEvaluationContext) -> Iterator[dg.RunRequest]:
    """One run per provider, each over its contiguous range of cells."""
    for provider, (first, last) in provider_ranges().items():
        yield dg.RunRequest(
            run_key=f"{provider}:{context.scheduled_execution_time:%Y-%m-%d}",
            tags={
                "dagster/asset_partition_range_start": first,
                "dagster/asset_partition_range_end": last,
                PROVIDER_TAG: provider,
            },
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
    fresh = [cell for cell in CELLS if cell.key not in done]
    if not fresh:
        unloaded = sorted(on_disk - loaded)
        if unloaded:
            return dg.SkipReason(
                f"{len(unloaded)} cell(s) in the YAML are not loaded yet; reload the code "
                f"location: {', '.join(unloaded[:5])}"
            )
        return dg.SkipReason("every cell has agent runs")
    return dg.SensorResult(
        run_requests=[
            dg.RunRequest(
                run_key=cell.key,
                partition_key=cell.key,
                tags={PROVIDER_TAG: cell.model.provider},
            )
            for cell in fresh
        ]
    )


eval_automation = dg.AutomationConditionSensorDefinition(
    "eval_automation",
    target=dg.AssetSelection.all(),
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30,
)
