"""``datagouv-eval experiment``: materialize the whole experiment in one Dagster run.

This is the README's main command. It runs the ``experiment`` job in this process over every
cell (the same job the UI and the weekly schedule launch), on the project's Dagster instance
(``dagster_home/`` unless ``DAGSTER_HOME`` is set), so the run and its materializations show up
in ``dagster dev`` afterwards. ``--dry-run`` lists the cells and the cost estimate instead.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import click

from datagouv_eval_pipeline.cli.dagster_home import resolve_home
from datagouv_eval_pipeline.experiment.plan import ExperimentPlan, SelectionError, plan_experiment
from datagouv_eval_pipeline.warehouse.location import default_duckdb_path

EXAMPLE_QUERIES = (
    # The headline ranking: mean, 95 % interval and n; cells scored on fewer than half their
    # runs are listed after the ranked ones, unranked, with a note saying so.
    "SELECT accuracy_rank AS rank, model_name, capability_set, mcp_version, "
    "round(accuracy, 2) AS accuracy, '[' || round(accuracy_ci_low, 2) || ', ' || "
    "round(accuracy_ci_high, 2) || ']' AS ci95, accuracy_n || '/' || runs AS n, "
    "round(action_f1, 2) AS action_f1, note FROM headline_ranking WHERE tier = 'minimal' "
    "ORDER BY ranked DESC, accuracy_rank, accuracy DESC NULLS LAST;",
    # Does MCP 0.2.26 do better than 0.2.19? The paired test per cell pair, with its verdict.
    "SELECT cell_a, value_a, value_b, round(paired_difference, 3) AS diff, "
    "'[' || round(difference_ci_low, 3) || ', ' || round(difference_ci_high, 3) || ']' AS ci95, "
    "paired_runs AS n, round(p_adjusted, 3) AS p_adj, verdict, round(mde, 2) AS mde "
    "FROM cell_comparison WHERE dimension = 'mcp_version' AND metric = 'accuracy' "
    "AND tier = 'minimal' AND value_a < value_b ORDER BY value_a, value_b, cell_a;",
    # The regression gate against each cell's previous run (`datagouv-eval gate` exits 1 on it).
    "SELECT cell_key, passed, failed_measures, previous_experiment_id FROM regression_gate "
    "WHERE is_latest ORDER BY passed, cell_key;",
    "SELECT status, count(*) AS runs, round(avg(latency_ms)) AS avg_latency_ms "
    "FROM eval.runs GROUP BY status ORDER BY runs DESC;",
)


def _print_plan(plan: ExperimentPlan) -> None:
    estimates = plan.estimate()
    click.echo(f"{'cell':<72} {'runs':>5} {'requests':>9} {'cost':>10}")
    for e in estimates:
        cost = "unpriced" if e.cost is None else f"{e.cost:.4f}"
        click.echo(f"{e.cell_key:<72} {e.task_runs:>5} {e.requests:>9} {cost:>10}")
    priced = [e.cost for e in estimates if e.cost is not None]
    click.echo(
        f"\n{len(plan.cells)} cells × {len(plan.tasks)} tasks × {plan.repeats} repeat(s) = "
        f"{plan.task_runs} task runs; estimated cost {sum(priced):.4f} "
        f"({len(estimates) - len(priced)} unpriced cell(s)); no agent was run."
    )


@click.command("experiment")
@click.option("--dry-run", is_flag=True, help="List the cells and the cost estimate; run nothing.")
@click.option(
    "--evaluation-type",
    "evaluation_types",
    multiple=True,
    help="Only cells of this evaluation type (repeatable).",
)
@click.option("--tasks", "task_ids", default="", help="Comma-separated task ids (default: active).")
@click.option("--repeats", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--skip-validation", is_flag=True, help="Run quarantined tasks too.")
@click.option("--rerun", is_flag=True, help="Ignore the agent-run cache.")
@click.option("--live", is_flag=True, help="Use the live data.gouv.fr instead of the twin.")
def command(
    dry_run: bool,
    evaluation_types: tuple[str, ...],
    task_ids: str,
    repeats: int,
    skip_validation: bool,
    rerun: bool,
    live: bool,
) -> None:
    """Run the default experiment (twin + offline baselines + deterministic judge)."""
    ids = [item.strip() for item in task_ids.split(",") if item.strip()]
    try:
        plan = plan_experiment(evaluation_types=evaluation_types, task_ids=ids, repeats=repeats)
    except SelectionError as error:
        raise click.UsageError(str(error)) from None
    if dry_run:
        _print_plan(plan)
        return
    home = resolve_home(None)
    home.mkdir(parents=True, exist_ok=True)
    os.environ["DAGSTER_HOME"] = str(home)
    started = time.perf_counter()
    result, db_path, report = _execute(
        {
            "evaluation_types": list(evaluation_types),
            "task_ids": ids,
            "repeats": repeats,
            "skip_validation": skip_validation,
            "rerun": rerun,
        },
        live=live,
    )
    elapsed = time.perf_counter() - started
    if not result.success:
        click.echo(f"the experiment run failed after {elapsed:.0f} s; see the log above", err=True)
        sys.exit(1)
    click.echo(
        f"\nexperiment done in {elapsed:.0f} s: {len(plan.cells)} cells × {len(plan.tasks)} tasks "
        f"(Dagster run {result.run_id}, instance {home})"
    )
    runs = result.asset_materializations_for_node("agent_runs")
    if runs:
        meta = runs[0].metadata
        click.echo(
            f"agent task runs: {meta['task_runs_executed'].value} executed, "
            f"{meta['task_runs_reused'].value} reused from the cache"
        )
    click.echo(f"warehouse (DuckDB): {db_path}")
    click.echo(f"report: {report}")
    click.echo("example queries (paste into `duckdb -readonly <file>`, or run them as shown):")
    for query in EXAMPLE_QUERIES:
        click.echo(f'  python3 -m uv run datagouv-eval sql "{query}"')


def _execute(settings: dict[str, Any], *, live: bool) -> tuple[Any, Path, Path]:
    """Run the ``experiment`` job over every cell, in process, on the persistent instance."""
    import dagster as dg

    from datagouv_eval_pipeline.definitions import defs
    from datagouv_eval_pipeline.defs.partitions import CELLS

    job = defs.resolve_job_def("experiment")
    with dg.DagsterInstance.get() as instance:
        result = job.execute_in_process(
            run_config={
                "resources": {
                    "experiment": {"config": settings},
                    "catalog": {"config": {"live": live}},
                }
            },
            instance=instance,
            tags={
                "dagster/asset_partition_range_start": CELLS[0].key,
                "dagster/asset_partition_range_end": CELLS[-1].key,
            },
            raise_on_error=False,
        )
    db_path = Path(default_duckdb_path())
    return result, db_path, db_path.with_name("experiment_report.md")
