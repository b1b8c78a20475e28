"""``datagouv-eval experiment``: materialize the whole experiment in one Dagster run.

This is the README's main command. It runs the ``experiment`` job in this process over every
cell (the same job the UI and the weekly schedule launch), on the project's Dagster instance
(``dagster_home/`` unless ``DAGSTER_HOME`` is set), so the run and its materializations show up
in ``dagster dev`` afterwards, as runs of its code location (in the Overview timeline too).
``--dry-run`` lists the cells and the cost estimate instead.
"""

from __future__ import annotations

import gc
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import click

from datagouv_eval_pipeline.cli.dagster_home import (
    RUN_HOST_TAG,
    RUN_PID_TAG,
    clean_dead_runs,
    describe_cleaned,
    open_instance,
    resolve_home,
)
from datagouv_eval_pipeline.cli.experiment_summary import (
    Summary,
    exit_code,
    summarise,
    summary_lines,
)
from datagouv_eval_pipeline.cli.interrupts import Stoppable
from datagouv_eval_pipeline.cli.preconditions import (
    exclusive_run_store,
    require_code_cell_dirs,
    require_instance_dir,
    require_writable_warehouse,
    sandbox_notice,
)
from datagouv_eval_pipeline.cli.urls import HTTP_URL
from datagouv_eval_pipeline.core.tasks import SpecErrors
from datagouv_eval_pipeline.pipeline.agents import SANDBOX_CAPABILITIES, CancelToken, last_interrupt
from datagouv_eval_pipeline.pipeline.experiment import (
    ExperimentPlan,
    SelectionError,
    default_run_store,
    plan_experiment,
)
from datagouv_eval_pipeline.pipeline.warehouse import default_duckdb_path

EXAMPLE_QUERIES = (
    # The headline ranking: mean, 95 % interval and n; cells scored on fewer than half their
    # runs are listed after the ranked ones, unranked, with a note saying so.
    "SELECT accuracy_rank AS rank, model_name, capability_set, mcp_version, "
    "round(accuracy, 2) AS accuracy, '[' || round(accuracy_ci_low, 2) || ', ' || "
    "round(accuracy_ci_high, 2) || ']' AS ci95, accuracy_n || '/' || runs AS n, "
    "round(action_f1, 2) AS action_f1, note FROM headline_ranking WHERE tier = 'minimal' "
    "ORDER BY ranked DESC, accuracy_rank, accuracy DESC NULLS LAST, model_name, capability_set, "
    "mcp_version NULLS FIRST, skills_version NULLS FIRST;",
    # Does MCP 0.2.26 do better than 0.2.19? The paired test per cell pair, with its verdict.
    "SELECT cell_a, value_a, value_b, round(paired_difference, 3) AS diff, "
    "'[' || round(difference_ci_low, 3) || ', ' || round(difference_ci_high, 3) || ']' AS ci95, "
    "paired_runs AS n, round(p_adjusted, 3) AS p_adj, verdict, round(mde, 2) AS mde "
    "FROM cell_comparison WHERE dimension = 'mcp_version' AND metric = 'accuracy' "
    # Versions compare as versions (0.2.5 < 0.2.26), not as text.
    "AND tier = 'minimal' AND TRY_CAST(string_split(value_a, '.') AS INTEGER[]) "
    "< TRY_CAST(string_split(value_b, '.') AS INTEGER[]) "
    "ORDER BY TRY_CAST(string_split(value_a, '.') AS INTEGER[]), "
    "TRY_CAST(string_split(value_b, '.') AS INTEGER[]), cell_a;",
    # The regression gate against each cell's previous run (`datagouv-eval gate` exits 1 on it).
    "SELECT cell_key, passed, failed_measures, previous_experiment_id FROM regression_gate "
    "WHERE is_latest ORDER BY passed, cell_key;",
    "SELECT status, count(*) AS runs, round(avg(latency_ms)) AS avg_latency_ms "
    "FROM eval.runs GROUP BY status ORDER BY runs DESC;",
)


def stale_lines(plan: ExperimentPlan, store_root: Path) -> list[str]:
    """The plan's cells whose stored agent runs are out of date, and why (what would rerun).

    Dagster 1.13 shows a partition's staleness only on that partition's page; this lists them
    all, from the run store, as the ``cells_current`` check does.
    """
    from datagouv_eval_pipeline.pipeline.experiment import (
        AGENT_RUNS,
        AgentRunsDocument,
        RunStore,
        RunStoreError,
        stale_cells,
    )

    store = RunStore(store_root)
    documents = []
    for cell in plan.cells:
        try:
            document = store.read_document(AGENT_RUNS, cell.key, AgentRunsDocument)
        except RunStoreError:
            continue  # an unreadable document is the warehouse's to report
        if document is not None:
            documents.append((cell, document))
    stale = stale_cells(documents, {task.task_id: task.spec_hash() for task in plan.tasks})
    if not documents:
        return ["out of date: no cell of the plan has stored agent runs yet"]
    lines = [f"out of date: {len(stale)} of the {len(documents)} cell(s) with stored agent runs"]
    lines += [f"  {key}: {'; '.join(why)}" for key, why in stale.items()]
    return lines


def _print_plan(plan: ExperimentPlan, *, live: bool, rerun: bool) -> None:
    from datagouv_eval_pipeline.pipeline.experiment import current_snapshot_id, default_agent_cache

    snapshot = None if live else current_snapshot_id()
    estimates = plan.estimate(
        cache=default_agent_cache(), snapshot_id=snapshot, rerun=rerun, live=live
    )
    click.echo(
        f"{'cell':<72} {'runs':>5} {'cached':>6} {'skipped':>7} {'requests':>9} "
        f"{'tokens':>10} {'cost':>10}"
    )
    for e in estimates:
        cost = "unpriced" if e.cost is None else f"{e.cost:.4f}"
        tokens = e.input_tokens + e.output_tokens
        note = f"  ({e.cache_note})" if e.cache_note and not (live or rerun) else ""
        click.echo(
            f"{e.cell_key:<72} {e.task_runs:>5} {e.cached_runs:>6} {e.skipped_runs:>7} "
            f"{e.requests:>9} {tokens:>10} {cost:>10}{note}"
        )
    runs = sum(e.task_runs for e in estimates)
    cached = sum(e.cached_runs for e in estimates)
    skipped = sum(e.skipped_runs for e in estimates)
    requests = sum(e.requests for e in estimates)
    total = sum(e.cost or 0.0 for e in estimates)
    unpriced = [e for e in estimates if e.cost is None and e.runs_to_execute]
    currency = estimates[0].currency if estimates else ""
    source = "the live data.gouv.fr" if live else f"the twin (snapshot {snapshot})"
    why = (
        " (--rerun ignores the cache)" if rerun else " (live runs are never cached)" if live else ""
    )
    click.echo(
        f"\n{len(plan.cells)} cells × {len(plan.tasks)} tasks × {plan.repeats} repeat(s) = "
        f"{plan.task_runs} task runs against {source}: {cached} of {runs} task runs cached{why}"
    )
    priced = f"{total:.4f} {currency}" + (
        f" + {len(unpriced)} unpriced cell(s)" if unpriced else ""
    )
    click.echo(
        f"to execute: {runs - cached - skipped} task runs ({skipped} skipped before any model "
        f"request: the policy, the task or a live run excludes the cell), ~{requests} model "
        f"requests, estimated cost {priced}; no agent was run."
    )
    for line in stale_lines(plan, default_run_store()):
        click.echo(line)


@click.command("experiment")
@click.option("--dry-run", is_flag=True, help="List the cells and the cost estimate; run nothing.")
@click.option(
    "--evaluation-type",
    "evaluation_types",
    multiple=True,
    help="Only cells of this evaluation type (repeatable).",
)
@click.option(
    "--models",
    "models",
    multiple=True,
    metavar="PROVIDER/MODEL",
    help="Run these models of models.yml instead of the active ones, active or not "
    "(repeatable; a glob such as 'albert/*' names several).",
)
@click.option(
    "--cells",
    "cell_keys",
    multiple=True,
    metavar="KEY",
    help="Run only these cells (repeatable): a key from `datagouv-eval cells`, of any model "
    "or evaluation type, or a glob among the selected cells, e.g. 'offline~*__none__*'.",
)
@click.option("--tasks", "task_ids", default="", help="Comma-separated task ids (default: active).")
@click.option("--repeats", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--skip-validation", is_flag=True, help="Run quarantined tasks too.")
@click.option("--rerun", is_flag=True, help="Ignore the agent-run cache.")
@click.option("--live", is_flag=True, help="Use the live data.gouv.fr instead of the twin.")
@click.option(
    "--judge",
    "judge_choice",
    default=None,
    metavar="KIND[:PROVIDER/MODEL]",
    help="deterministic, llm:<provider>/<model> or hybrid:<provider>/<model> "
    "[default: task_specs/benchmark/judge.yml].",
)
@click.option(
    "--model-base-url",
    type=HTTP_URL,
    default=None,
    metavar="URL",
    help="Send the agents' model requests to this OpenAI-compatible URL instead (e.g. a "
    "`datagouv-eval replay serve` URL).",
)
@click.option(
    "--judge-base-url",
    type=HTTP_URL,
    default=None,
    metavar="URL",
    help="Send judge requests to this OpenAI-compatible URL (e.g. a replay server).",
)
def command(
    dry_run: bool,
    evaluation_types: tuple[str, ...],
    models: tuple[str, ...],
    cell_keys: tuple[str, ...],
    task_ids: str,
    repeats: int,
    skip_validation: bool,
    rerun: bool,
    live: bool,
    judge_choice: str | None,
    model_base_url: str | None,
    judge_base_url: str | None,
) -> None:
    """Run the default experiment (twin + offline baselines + deterministic judge)."""
    ids = [item.strip() for item in task_ids.split(",") if item.strip()]
    judge_config = _judge_config(judge_choice, judge_base_url)
    try:
        plan = plan_experiment(
            evaluation_types=evaluation_types,
            task_ids=ids,
            repeats=repeats,
            models=models,
            cells=cell_keys,
        )
    except SelectionError as error:
        raise click.UsageError(str(error)) from None
    except SpecErrors as error:
        raise click.ClickException(f"invalid specs, nothing was run:\n{error}") from None
    if dry_run:
        _print_plan(plan, live=live, rerun=rerun)
        return
    home = resolve_home(None)
    require_instance_dir(home)
    require_writable_warehouse(Path(default_duckdb_path()))
    code_cells = any(SANDBOX_CAPABILITIES & set(c.capabilities) for c in plan.cells)
    if code_cells:
        require_code_cell_dirs()
    notice = sandbox_notice() if code_cells else None
    # The default experiment is "every cell this machine can run": without bubblewrap its code
    # cells are skipped, said at the start and the end, and a fresh machine's first run still
    # succeeds. Cells chosen by name or type were asked for: scoring nothing fails the run.
    chosen = bool(evaluation_types or models or cell_keys)
    if notice and chosen:
        notice += "; the chosen code cells will score nothing, so the run will exit 1"
    if notice:
        click.echo(f"note: {notice}")
    os.environ["DAGSTER_HOME"] = str(home)
    started = time.perf_counter()
    with exclusive_run_store(default_run_store()):
        result, db_path, report, finish = _execute(
            {
                "evaluation_types": list(evaluation_types),
                "cells": plan.cell_keys if plan.chosen else [],
                "model_base_url": model_base_url or "",
                "task_ids": ids,
                "repeats": repeats,
                "skip_validation": skip_validation,
                "rerun": rerun,
            },
            live=live,
            judge=judge_config,
            cells={cell.key for cell in plan.cells},
        )
    elapsed = time.perf_counter() - started
    interrupted = last_interrupt()
    if result is None:  # stopped before the experiment job started
        click.echo(
            f"\nexperiment stopped ({interrupted}) after {elapsed:.0f} s, before any stage ran: "
            "nothing changed"
        )
        finish(exit_code(False, Summary(), interrupted=True))
    summary = summarise(result)
    run = f"Dagster run {result.run_id[:8]}, instance {home}"
    if interrupted:
        state = f"experiment stopped ({interrupted}) after {elapsed:.0f} s"
    elif not result.success:
        state = f"experiment FAILED after {elapsed:.0f} s (the failing step is named above)"
    else:
        state = f"experiment done in {elapsed:.0f} s"
    click.echo(f"\n{state}: {len(plan.cells)} cells × {len(plan.tasks)} tasks ({run})")
    if interrupted:
        click.echo(_kept(result, summary))
    for line in summary_lines(summary):
        click.echo(line)
    if notice:
        click.echo(f"note: {notice}")
    if result.success and not interrupted:
        click.echo(f"warehouse (DuckDB): {db_path}")
        from datagouv_eval_pipeline.pipeline.report import (
            BROWSER_DIR,
            REPORT_PAGE,
            default_report_dir,
        )

        pages = default_report_dir(db_path)
        click.echo(f"report: {pages / REPORT_PAGE} (Markdown for the Dagster UI: {report})")
        click.echo(f"results browser: {pages / BROWSER_DIR / 'index.html'}")
        click.echo(
            "example queries (paste into `python3 -m uv run duckdb -readonly "
            f"{db_path}`, or run them as shown):"
        )
        for query in EXAMPLE_QUERIES:
            click.echo(f'  python3 -m uv run datagouv-eval sql "{query}"')
    # The run leaves a large heap; the interpreter's final collection of it took ~8 s on two
    # cores. Nothing is left to write, so it is skipped (frozen objects are not collected).
    gc.freeze()
    finish(
        exit_code(
            result.success, summary, interrupted=bool(interrupted), sandbox_optional=not chosen
        )
    )


def _kept(result: Any, summary: Summary) -> str:
    """One line saying what an interrupted run kept."""
    # The stages that wrote something (asset checks have steps of their own, not stages).
    done = list(
        dict.fromkeys(
            event.step_key for event in result.get_asset_materialization_events() if event.step_key
        )
    )
    runs = (
        f"{summary.executed} task runs executed and {summary.reused} reused (cached), "
        if summary.executed is not None
        else "the task runs that finished (cached), "
    )
    stages = ", ".join(done) if done else "none"
    return f"kept: {runs}finished stages: {stages}; run it again to resume"


def _judge_config(choice: str | None, base_url: str | None) -> dict[str, str]:
    """The ``judge`` resource's run config, checked now so a bad option fails before the run."""
    from datagouv_eval_pipeline.core.benchmark import (
        BENCHMARK_CONFIG_DIR,
        BenchmarkConfigErrors,
        load_benchmark_config,
    )
    from datagouv_eval_pipeline.core.judges import (
        JUDGE_FILE,
        JudgeModelError,
        JudgeSpecError,
        build_judge,
        load_judge_spec,
    )
    from datagouv_eval_pipeline.world.local_models import CHECK_ONLY_URL, served_model

    try:
        spec = load_judge_spec(BENCHMARK_CONFIG_DIR / JUDGE_FILE)
        if choice is not None:
            spec = spec.with_choice(choice)
        models = load_benchmark_config().models
        # A llama_cpp judge's server starts with the run (the judge resource): checked here
        # with a stand-in URL, never sent to.
        served = spec.model is not None and served_model(spec.model, models) is not None
        build_judge(spec, models, base_url=base_url or (CHECK_ONLY_URL if served else None))
    except (JudgeSpecError, JudgeModelError, BenchmarkConfigErrors) as error:
        raise click.UsageError(str(error)) from None
    config = {"kind": spec.kind.value, "model": spec.model or ""}
    if base_url:
        config["base_url"] = base_url
    return config


def _execute(
    settings: dict[str, Any],
    *,
    live: bool,
    judge: dict[str, str] | None = None,
    cells: set[str] | None = None,
) -> tuple[Any, Path, Path, Callable[[int], NoReturn]]:
    """Run the ``experiment`` job in process, on the persistent instance.

    Returns the run's result (None when it was stopped before the job started), the warehouse,
    the report's Markdown and how to end the command (``Stoppable.exit``).

    ``cells`` (default: the active cells) become partitions of the instance if they are not
    yet (``defs/partitions.py``), and the run covers the smallest partition range holding
    them; other cells of that range (registered later, or left out by a selection) are
    named out of the run (its ``cells`` setting), so the stages leave them alone.
    """
    import warnings

    import dagster as dg

    # Dagster flags its beta parameters (backfill_policy, pool) with a warning per use.
    warnings.filterwarnings("ignore", category=dg.BetaWarning)
    warnings.filterwarnings("ignore", category=dg.PreviewWarning)

    from datagouv_eval_pipeline.definitions import build_definitions
    from datagouv_eval_pipeline.defs.partitions import (
        ACTIVE_KEYS,
        covering_range,
        range_keys,
        register_cells,
    )
    from datagouv_eval_pipeline.defs.run_origin import as_code_location_runs
    from datagouv_eval_pipeline.defs.versions import OBSERVATION_JOBS

    wanted = cells or ACTIVE_KEYS
    defs = build_definitions()
    job = defs.resolve_job_def("experiment")
    own = {RUN_PID_TAG: str(os.getpid()), RUN_HOST_TAG: socket.gethostname()}

    def run(stop: CancelToken) -> Any:
        with open_instance(resolve_home(None)) as instance, as_code_location_runs(instance):
            click.echo(describe_cleaned(clean_dead_runs(instance)))
            order = register_cells(instance, sorted(wanted))
            first, last = covering_range(wanted, order)
            if not settings["cells"] and not set(range_keys(order, first, last)) <= wanted:
                settings["cells"] = sorted(wanted)
            # The cells' and tasks' versions first: what changed since the last run shows as
            # stale, and this run's materializations record the versions they were built on.
            for observation in OBSERVATION_JOBS:
                if stop.cancelled:
                    return None
                defs.resolve_job_def(observation.name).execute_in_process(
                    run_config={"loggers": {"brief": {"config": {"log_level": "INFO"}}}},
                    instance=instance,
                    tags=own,
                    raise_on_error=False,
                )
            if stop.cancelled:
                return None
            return job.execute_in_process(
                run_config={
                    "resources": {
                        "experiment": {"config": settings},
                        "catalog": {"config": {"live": live}},
                        "judge": {"config": judge or {}},
                    },
                    "loggers": {"brief": {"config": {"log_level": "INFO"}}},
                },
                instance=instance,
                tags={
                    "dagster/asset_partition_range_start": first,
                    "dagster/asset_partition_range_end": last,
                    **own,
                },
                raise_on_error=False,
            )

    def hard_stop(why: str) -> str:
        return (
            f"\nexperiment stopped at once ({why}): finished task runs are kept (cached); "
            "run it again to resume (it cleans what this run left)"
        )

    # Ctrl-C and SIGTERM stop the run whatever stage it is in (cli/interrupts.py).
    stoppable = Stoppable(run, on_hard_stop=hard_stop)
    result = stoppable.run()
    db_path = Path(default_duckdb_path())
    return result, db_path, db_path.with_name("experiment_report.md"), stoppable.exit
