"""``datagouv-eval gate``: is the latest experiment at least as good as the previous one?

Compares each cell of the latest recorded experiment (or ``--experiment``) with the previous
run of the same cell (or every cell with ``--against RUN``), paired by task, over all tasks and
per task language, on the headline metrics. Prints the verdict and the drops; exits 1 when a
cell got significantly worse, so CI can block the change, and 3 when nothing got worse but some
judge-decided score could not be compared (another judge or prompt, or a criterion coverage that
moved more than the tolerance: a judge outage is not an agent regression). Reads the warehouse only.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

import click
import duckdb

from datagouv_eval_pipeline.cli.experiment_summary import EXIT_INTERRUPTED
from datagouv_eval_pipeline.pipeline.warehouse import (
    COVERAGE_TOLERANCE,
    HEADLINE_METRICS,
    NOT_COMPARABLE,
    WORSE,
    GateError,
    GateSettings,
    QueryInterrupted,
    default_duckdb_path,
    evaluate_gate,
    run_interruptibly,
    summary_lines,
)

EXIT_CODES = {WORSE: 1, NOT_COMPARABLE: 3}
"""Exit status per gate outcome; 0 when it passed (2 stays click's usage error)."""


@click.command("gate")
@click.option(
    "--against", "against", default=None, help="Experiment id to compare every cell with."
)
@click.option(
    "--experiment", "experiment_id", default=None, help="Experiment checked (default: the latest)."
)
@click.option(
    "--metric",
    "metrics",
    multiple=True,
    default=HEADLINE_METRICS,
    show_default=True,
    help="Headline metric (repeatable).",
)
@click.option("--tier", "tiers", multiple=True, default=("minimal", "optimal"), show_default=True)
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True),
    default=0.05,
    show_default=True,
    help="Significance level of the Holm-adjusted paired test.",
)
@click.option(
    "--min-drop",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="Smallest drop that may fail the gate.",
)
@click.option(
    "--coverage-tolerance",
    type=click.FloatRange(0, 1),
    default=COVERAGE_TOLERANCE,
    show_default=True,
    help="Largest change in a tier's criterion coverage between the two runs for which the "
    "judge's scores are still compared; beyond it they are 'not comparable'.",
)
@click.option("--json", "as_json", is_flag=True, help="Print every comparison as JSON.")
@click.option(
    "--db",
    "db_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="DuckDB file (default: $DATAGOUV_EVAL_DUCKDB or data/warehouse.duckdb).",
)
def command(
    against: str | None,
    experiment_id: str | None,
    metrics: tuple[str, ...],
    tiers: tuple[str, ...],
    alpha: float,
    min_drop: float,
    coverage_tolerance: float,
    as_json: bool,
    db_path: Path | None,
) -> None:
    """Exit 1 when a cell's headline score dropped significantly since its previous run.

    Exit status: 0 passed; 1 a cell got worse; 3 nothing got worse, but a judge-decided score
    of some cell is not comparable with its previous run (the judge id or prompt hash changed,
    or the criterion coverage moved more than --coverage-tolerance), so the gate cannot vouch
    for it.
    """
    path = db_path or Path(default_duckdb_path())
    if not path.exists():
        raise click.ClickException(
            f"{path}: no warehouse yet; run `./dev run` (or `datagouv-eval experiment`) first"
        )
    settings = GateSettings(
        tuple(metrics), tuple(tiers), alpha, min_drop, coverage_tolerance=coverage_tolerance
    )
    try:
        with duckdb.connect(str(path), read_only=True) as conn:
            report = run_interruptibly(
                conn,
                lambda c: evaluate_gate(c, experiment_id, against=against, settings=settings),
            )
    except QueryInterrupted as stopped:
        click.echo(str(stopped), err=True)
        sys.exit(EXIT_INTERRUPTED)
    except GateError as error:
        raise click.ClickException(str(error)) from None
    except duckdb.Error as error:
        raise click.ClickException(
            f"{path}: {type(error).__name__}: {error} (a warehouse of an older schema? "
            "delete it and re-run the experiment)"
        ) from None
    if as_json:
        payload = {
            "experiment_id": report.experiment_id,
            "against": report.against,
            "passed": report.passed,
            "outcome": report.outcome,
            "failed_cells": report.failed_cells,
            "not_comparable_cells": report.not_comparable_cells,
            "comparisons": [asdict(c) for c in report.comparisons],
        }
        click.echo(json.dumps(payload, indent=2, default=str))
    else:
        for line in summary_lines(report):
            click.echo(line)
    sys.exit(EXIT_CODES.get(report.outcome, 0))
