"""``datagouv-eval demo``: the main command until the full pipeline lands.

It validates every task spec and the benchmark configuration, then scores the example traces in
``docs/examples/traces/`` against their tasks with the deterministic scorer, writes the scores to
a results directory and prints where they are.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import click

from datagouv_eval_pipeline.base import project_files
from datagouv_eval_pipeline.base.writable import writable_dir_problem
from datagouv_eval_pipeline.core.benchmark import expand_cells, load_benchmark_config
from datagouv_eval_pipeline.core.metrics import MetricValue, score_trace
from datagouv_eval_pipeline.core.tasks import (
    TASK_SPECS_DIR,
    SpecErrors,
    TaskStatus,
    load_task_specs,
)
from datagouv_eval_pipeline.core.traces import load_trace

EXAMPLE_TRACES_DIR = project_files.example_traces_dir()
DEFAULT_RESULTS_DIR = project_files.data_dir() / "demo"


def _fmt(metric: MetricValue) -> str:
    return "null" if metric.value is None else f"{metric.value:.2f}"


def _check(passed: bool | None) -> str:
    return {True: "pass", False: "FAIL", None: "n/a"}[passed]


@click.command("demo")
@click.option(
    "--traces",
    "traces_dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=EXAMPLE_TRACES_DIR,
    show_default=True,
    help="Directory of trace JSON files to score.",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_RESULTS_DIR,
    show_default=True,
    help="Where to write the scores.",
)
def command(traces_dir: Path, out_dir: Path) -> None:
    """Validate the specs, score the example traces and print where the results are."""
    # Checked before any work: a bad --out must not be found after every trace was scored.
    if (problem := writable_dir_problem(out_dir)) is not None:
        raise click.ClickException(f"{out_dir}: {problem}")
    try:
        specs = load_task_specs([TASK_SPECS_DIR])
        cells = expand_cells(load_benchmark_config())
    except SpecErrors as errors:
        for error in errors.errors:
            click.echo(str(error), err=True)
        raise SystemExit(1) from errors
    active = sum(spec.meta.status == TaskStatus.ACTIVE for spec in specs)
    click.echo(f"task specs: {len(specs)} valid ({active} active); benchmark: {len(cells)} cells")

    by_id = {spec.task_id: spec for spec in specs}
    trace_paths = sorted(traces_dir.glob("*.json"))
    if not trace_paths:
        raise click.ClickException(f"{traces_dir}: no *.json trace to score")

    rows = []
    header = f"{'trace':<28} {'tier':<8} {'type F1':>7} {'inst F1':>7} {'traj':>5}  checks"
    click.echo(header)
    for path in trace_paths:
        trace = load_trace(path)
        task = by_id.get(trace.task_id)
        if task is None:
            raise click.ClickException(f"{path}: task_id {trace.task_id!r} is not in task_specs/")
        score = score_trace(task, trace)
        rows.append({"trace": path.name, **score.model_dump(mode="json")})
        checks = " ".join(f"{name}={_check(c.passed)}" for name, c in score.checks.items())
        for tier_name, tier in (("minimal", score.minimal), ("optimal", score.optimal)):
            click.echo(
                f"{path.stem:<28} {tier_name:<8} {_fmt(tier.action_type_f1):>7} "
                f"{_fmt(tier.action_f1):>7} {_fmt(tier.trajectory_adherence):>5}  "
                + (checks if tier_name == "minimal" else "")
            )

    run_dir = out_dir / datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    run_dir.mkdir(parents=True, exist_ok=True)
    # Written whole then renamed, so a crash never leaves a half-written result file.
    target = run_dir / "scores.json"
    partial = target.with_suffix(".json.partial")
    partial.write_text(json.dumps(rows, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    partial.replace(target)
    click.echo(f"\nscored {len(rows)} traces; results: {target}")
