"""``datagouv-eval preflight``: check the catalog objects of every active task before a run.

By default the twin is started in-process on a free port and validated against the committed
baselines; ``--api-base`` points the same checks at another catalog (``live`` for production).
Exit status: 0 when every task may run, 1 when a task is quarantined (or a refresh failed or was
declined), 2 when the command could not run (bad options, task specs that do not load, a
snapshot or overlay that does not load).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import click

from datagouv_eval_pipeline.cli.validate import display_path, format_error
from datagouv_eval_pipeline.core.tasks import (
    TASK_SPECS_DIR,
    TaskSpec,
    TaskSpecErrors,
    load_task_specs,
    parse_when,
)
from datagouv_eval_pipeline.pipeline.preflight import ValidatorConfig, plan_refresh, validate
from datagouv_eval_pipeline.world.catalogue import TwinUrls

USAGE_ERROR = 2


def parse_api_base(values: Sequence[str]) -> TwinUrls:
    """Build base URLs from ``--api-base`` values.

    Each value is ``live``, ``demo``, a site root serving every API under the twin's prefixes
    (``http://host:port/``), or ``KEY=URL`` setting one of the five base URLs; ``KEY=URL``
    values override the base given before them, or must name all five keys when there is none.

    Raises:
        click.BadParameter: an unknown key or word, or a key set that is incomplete.
    """
    base: TwinUrls | None = None
    overrides: dict[str, str] = {}
    for value in values:
        key, sep, url = value.partition("=")
        if sep and not key.startswith("http"):
            overrides[key.strip()] = url if url.endswith("/") else url + "/"
        elif value == "live":
            base = TwinUrls.live()
        elif value == "demo":
            base = TwinUrls.demo()
        elif value.startswith(("http://", "https://")):
            base = TwinUrls.for_site(value)
        else:
            raise click.BadParameter(
                f"{value!r}: expected 'live', 'demo', a site URL or KEY=URL",
                param_hint="--api-base",
            )
    try:
        if base is None:
            return TwinUrls.from_mapping(overrides)
        unknown = sorted(set(overrides) - set(base.as_dict()))
        if unknown:
            raise ValueError(f"unknown keys {unknown}; known: {sorted(base.as_dict())}")
        return TwinUrls.from_mapping(base.as_dict() | overrides)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--api-base") from None


@contextmanager
def _catalog(
    api_base: Sequence[str], overlay: Path | None
) -> Iterator[tuple[TwinUrls, str, datetime | None, dict[str, str]]]:
    """Yield the base URLs, a source label, the catalog's clock and the client options.

    The clock is the twin's (None otherwise); the in-process twin is reached at the production
    URLs through its front (the options name the proxy and its CA bundle).
    """
    if api_base:
        if overlay is not None:
            raise click.UsageError("--overlay changes the in-process twin; drop --api-base")
        urls = parse_api_base(api_base)
        yield urls, urls.datagouv_api, None, {}
        return
    from datagouv_eval_pipeline.world.api import TwinServer, twin_front
    from datagouv_eval_pipeline.world.catalogue import (
        CatalogStore,
        DriftOverlay,
        OverlayError,
        SnapshotError,
    )

    try:
        store = CatalogStore.load()
        label = f"twin {store.snapshot_id}"
        if overlay is not None:
            drift = DriftOverlay.load(overlay)
            store = drift.apply(store)
            label += f" + overlay {drift.name}"
    except (SnapshotError, OverlayError) as error:
        click.echo(f"error: {error}", err=True)
        raise SystemExit(USAGE_ERROR) from None
    server = TwinServer(store)
    with server, twin_front(server) as front:
        assert front.authority is not None
        reach = {"proxy": front.proxy_url, "ca_bundle": str(front.authority.bundle_path)}
        yield TwinUrls.live(), label, store.now, reach


def _load(paths: Sequence[Path]) -> list[TaskSpec]:
    try:
        return load_task_specs(list(paths) or [TASK_SPECS_DIR])
    except TaskSpecErrors as errors:
        for error in errors.errors:
            click.echo(format_error(error), err=True)
        click.echo(f"{len(errors.errors)} problem(s) in the task specs", err=True)
        raise SystemExit(USAGE_ERROR) from None


def _when(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        return parse_when(value)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--now") from None


@click.command("preflight")
@click.option(
    "--tasks",
    "task_paths",
    multiple=True,
    type=click.Path(exists=True, path_type=Path),
    help="Task spec files or directories (default: task_specs/). Repeatable.",
)
@click.option(
    "--api-base",
    multiple=True,
    metavar="URL|live|KEY=URL",
    help="Validate this catalog instead of an in-process twin: 'live' (production), 'demo', a "
    "twin-like site root, or KEY=URL for one of site, datagouv_api, tabular_api, metrics_api, "
    "crawler_api. Repeatable.",
)
@click.option(
    "--refresh",
    is_flag=True,
    help="Rewrite the baselines from the catalog: show the diff, then write after confirmation.",
)
@click.option("--yes", is_flag=True, help="With --refresh: write without asking.")
@click.option("--json", "as_json", is_flag=True, help="Print the report (or refresh plan) as JSON.")
@click.option(
    "--baselines",
    "baselines_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Baselines directory (default: snapshots/baselines).",
)
@click.option(
    "--overlay",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Start the twin with this drift overlay (YAML) applied.",
)
@click.option(
    "--now",
    default=None,
    help="Clock for relative freshness windows (ISO date; default: the twin's snapshot date, or "
    "the current time with --api-base).",
)
@click.option("--concurrency", type=click.IntRange(1, 64), default=8, show_default=True)
@click.option("--timeout", type=float, default=15.0, show_default=True, help="Seconds/request.")
@click.option("-v", "--verbose", is_flag=True, help="Also list the checks that passed.")
def command(
    task_paths: tuple[Path, ...],
    api_base: tuple[str, ...],
    refresh: bool,
    yes: bool,
    as_json: bool,
    baselines_dir: Path | None,
    overlay: Path | None,
    now: str | None,
    concurrency: int,
    timeout: float,
    verbose: bool,
) -> None:
    """Check the catalog objects every active task relies on; quarantine the tasks that drifted.

    Exits 1 when a task is quarantined, 0 when every task may run.
    """
    from datagouv_eval_pipeline.pipeline.preflight import render_refresh, render_report

    specs = _load(task_paths)
    clock = _when(now)
    if api_base:
        parse_api_base(api_base)  # report a bad value before anything starts
    with _catalog(api_base, overlay) as (urls, label, twin_now, reach):
        config = ValidatorConfig(
            urls=urls,
            now=clock or twin_now,
            concurrency=concurrency,
            timeout=timeout,
            source=label,
            proxy=reach.get("proxy"),
            ca_bundle=reach.get("ca_bundle"),
        )
        if baselines_dir is not None:
            config = replace(config, baselines_dir=baselines_dir)
        if refresh:
            plan = plan_refresh(specs, config)
        else:
            report = validate(specs, config)
    if refresh:
        click.echo(
            plan.model_dump_json(indent=2, exclude={"changes": {"__all__": {"new"}}})
            if as_json
            else render_refresh(plan)
        )
        if plan.errors:
            click.echo("refresh aborted: some objects could not be read", err=True)
            raise SystemExit(1)
        if not plan.pending:
            click.echo("the baselines are up to date", err=as_json)
            return
        if not yes and (as_json or not click.confirm(f"write {len(plan.pending)} change(s)?")):
            click.echo("nothing written (confirm, or pass --yes)", err=True)
            raise SystemExit(1)
        touched = plan.apply()
        where = display_path(Path(plan.baselines_dir))
        click.echo(f"wrote {len(touched)} baseline change(s) under {where}", err=as_json)
        return
    click.echo(
        report.model_dump_json(indent=2) if as_json else render_report(report, verbose=verbose)
    )
    if report.quarantined:
        raise SystemExit(1)
