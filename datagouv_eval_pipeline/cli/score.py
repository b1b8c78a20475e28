"""``datagouv-eval score``: score one trace against one task and print the scores as JSON."""

from __future__ import annotations

import json
from pathlib import Path

import click

from datagouv_eval_pipeline.core.tasks import TaskSpec, TaskSpecErrors, Tier, load_task_specs
from datagouv_eval_pipeline.core.traces import SCORED_STATUSES, load_trace

_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)
_UNIT = click.FloatRange(0.0, 1.0)


def _load_task(path: Path) -> TaskSpec:
    try:
        specs = load_task_specs([path])
    except TaskSpecErrors as error:
        raise click.ClickException(str(error)) from error
    if len(specs) != 1:  # pragma: no cover - one file yields one spec or an error
        raise click.ClickException(f"{path}: expected one task specification")
    return specs[0]


@click.command("score")
@click.option("--task", "task_path", type=_FILE, required=True, help="Task spec YAML file.")
@click.option("--trace", "trace_path", type=_FILE, required=True, help="Trace JSON file.")
@click.option(
    "--accuracy-minimal",
    type=_UNIT,
    default=None,
    help="Judged minimal-tier accuracy, for the efficiency ratios.",
)
@click.option(
    "--accuracy-optimal",
    type=_UNIT,
    default=None,
    help="Judged optimal-tier accuracy, for the efficiency ratios.",
)
@click.option(
    "--catalog",
    type=click.Choice(["twin", "live", "none"]),
    default="twin",
    show_default=True,
    help="Where slugs resolve to ids: the twin's current snapshot, the live API, or nowhere.",
)
@click.option("--compact", is_flag=True, help="Print the JSON on one line.")
def command(
    task_path: Path,
    trace_path: Path,
    accuracy_minimal: float | None,
    accuracy_optimal: float | None,
    catalog: str,
    compact: bool,
) -> None:
    """Score one trace against one task with the deterministic metrics (no judge, no network).

    Prints task_id, the minimal and optimal tier metrics, the answer checks, efficiency, the
    mapped action instances and provenance as JSON. Metrics that are undefined are null with a
    reason; see docs/metrics.md.
    """
    from datagouv_eval_pipeline.core.metrics import score_trace
    from datagouv_eval_pipeline.pipeline.experiment import ApiCatalogLookup, twin_catalog_lookup
    from datagouv_eval_pipeline.world.catalogue import TwinUrls

    task = _load_task(task_path)
    try:
        trace = load_trace(trace_path)
    except ValueError as error:
        raise click.ClickException(str(error)) from error
    indent = None if compact else 2
    if trace.status not in SCORED_STATUSES:
        # As in the pipeline: a run that did not finish is not scored (NULL), never zero.
        why = f"the run ended {trace.status}" + (
            f": {trace.status_reason}" if trace.status_reason else ""
        )
        unscored = {
            "task_id": trace.task_id,
            "scored": False,
            "reason": f"not scored: {why}",
            "minimal": None,
            "optimal": None,
            "checks": None,
            "efficiency": None,
        }
        click.echo(json.dumps(unscored, ensure_ascii=False, indent=indent))
        return
    accuracy: dict[Tier, float | None] = {
        "minimal": accuracy_minimal,
        "optimal": accuracy_optimal,
    }
    try:
        lookup = (
            twin_catalog_lookup()
            if catalog == "twin"
            else ApiCatalogLookup(TwinUrls.live().datagouv_api)
            if catalog == "live"
            else None
        )
        score = score_trace(task, trace, accuracy=accuracy, catalog=lookup)
    except ValueError as error:
        raise click.ClickException(f"{trace_path}: {error}") from error
    if score.mapping.error:
        click.echo(f"warning: {trace_path}: {score.mapping.error}", err=True)
    click.echo(json.dumps(score.model_dump(mode="json"), ensure_ascii=False, indent=indent))
