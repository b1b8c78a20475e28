"""``datagouv-eval twin``: serve the local data.gouv.fr twin, or rebuild its snapshot."""

from __future__ import annotations

import json
from pathlib import Path

import click

from datagouv_eval_pipeline.base.writable import writable_dir_problem
from datagouv_eval_pipeline.cli.ports import PORT, require_free_port
from datagouv_eval_pipeline.world.catalogue import TwinUrls


@click.group(name="twin")
def command() -> None:
    """The local data.gouv.fr twin (REST v1/v2, Tabular, Metrics and crawler APIs)."""


@command.command("serve")
@click.option("--port", type=PORT, default=8765, show_default=True, help="TCP port (0 = free).")
@click.option(
    "--snapshot",
    "snapshot_id",
    default=None,
    help="Snapshot id under the snapshots directory (default: the manifest's current one).",
)
@click.option(
    "--snapshots-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The snapshots directory (default: $DATAGOUV_EVAL_SNAPSHOTS or ./snapshots).",
)
@click.option(
    "--tabular-page-size-max",
    type=int,
    default=50,
    show_default=True,
    help="Tabular API maximum page_size (api-tabular's default config says 50).",
)
@click.option(
    "--front-port",
    type=int,
    default=8766,
    show_default=True,
    help="TCP port of the hostname front (HTTPS proxy for the production host names; 0 = free).",
)
@click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The twin home holding the front's CA (default: $DATAGOUV_EVAL_TWIN_HOME or ./.twin).",
)
def serve(
    port: int,
    snapshot_id: str | None,
    snapshots_dir: Path | None,
    tabular_page_size_max: int,
    front_port: int,
    home: Path | None,
) -> None:
    """Serve the twin and its hostname front on 127.0.0.1 until Ctrl-C.

    Clients reach the production URLs (https://www.data.gouv.fr/api/1/..., the Tabular,
    Metrics and crawler hosts) through the front: run `eval "$(datagouv-eval twin env)"` in
    another shell.
    """
    from datagouv_eval_pipeline.world.api import (
        TwinConfig,
        forget_running,
        record_running,
        serve_forever,
        served_by,
        served_hosts,
    )
    from datagouv_eval_pipeline.world.catalogue import CatalogStore, SnapshotError
    from datagouv_eval_pipeline.world.front import Front, TwinHomeError, require_twin_home

    require_free_port(port)
    try:
        require_twin_home(home)
    except TwinHomeError as error:
        raise click.ClickException(str(error)) from None
    try:
        store = CatalogStore.load(snapshots_dir, snapshot_id)
    except SnapshotError as error:
        raise click.ClickException(str(error)) from error
    fronts: list[Front] = []

    def ready(urls: TwinUrls) -> None:
        served = served_by(urls, home=home, hosts=served_hosts(store))
        try:
            front = served.front(port=front_port).start()
        except OSError as error:
            raise click.ClickException(
                f"the hostname front cannot listen on 127.0.0.1:{front_port}: {error} "
                "(choose another --front-port)"
            ) from error
        fronts.append(front)
        record_running(front, urls, home=home)
        click.echo(f"data.gouv.fr twin — snapshot {store.snapshot_id}")
        for name, url in urls.as_dict().items():
            click.echo(f"  {name:<13} {url}")
        click.echo(f"  front         {front.proxy_url} (HTTPS proxy for the production URLs)")
        click.echo(f"  CA bundle     {served.authority.bundle_path}")
        click.echo('In another shell: eval "$(datagouv-eval twin env)"')
        click.echo("Press Ctrl-C to stop.")

    try:
        serve_forever(
            store,
            port=port,
            config=TwinConfig(tabular_page_size_max=tabular_page_size_max),
            on_ready=ready,
        )
    finally:
        for front in fronts:
            front.stop()
            forget_running(front, home=home)


@command.command("env")
@click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The twin home of the running `twin serve` (default: $DATAGOUV_EVAL_TWIN_HOME, ./.twin).",
)
def env(home: Path | None) -> None:
    """Print the shell `export` lines that send clients through the running twin's front.

    Use it as `eval "$(datagouv-eval twin env)"` against a running `datagouv-eval twin serve`:
    then curl, httpx, requests, urllib and the datagouv client reach the twin at the
    production URLs, unmodified.
    """
    from datagouv_eval_pipeline.world.api import FrontNotRunningError, running_env
    from datagouv_eval_pipeline.world.front import export_lines

    try:
        variables = running_env(home=home)
    except FrontNotRunningError as error:
        raise click.ClickException(str(error)) from error
    click.echo(export_lines(variables), nl=False)


@command.command("build-snapshot")
@click.option(
    "--out",
    "snapshots_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The snapshots directory to write into (default: the repository's snapshots/).",
)
@click.option(
    "--catalogue-facts",
    "catalogue_export",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help=(
        "data.gouv.fr's catalogue export (facts csv.gz; default: $DATAGOUV_EVAL_CATALOGUE_FACTS, "
        "else the snapshot's own catalogue file)."
    ),
)
def build_snapshot(snapshots_dir: Path | None, catalogue_export: Path | None) -> None:
    """Regenerate the snapshot deterministically from its source files, catalogue and generators."""
    from datagouv_eval_pipeline.base import project_files
    from datagouv_eval_pipeline.world.snapshot_builder import SourceError, write_snapshot

    target = snapshots_dir or project_files.snapshots_dir()
    # Checked before the build: it takes minutes, then writes.
    if (problem := writable_dir_problem(target)) is not None:
        raise click.ClickException(f"{target}: {problem}")
    try:
        entry = write_snapshot(target, catalogue_export=catalogue_export)
    except SourceError as error:
        raise click.ClickException(str(error)) from error
    click.echo(f"wrote snapshot {entry['snapshot_id']}")
    click.echo(json.dumps(entry["counts"], indent=1))


@command.command("urls")
@click.option("--port", type=PORT, default=8765, show_default=True)
def urls(port: int) -> None:
    """Print the base URLs a client should use for a twin on PORT."""
    click.echo(json.dumps(TwinUrls.for_port(port).as_dict(), indent=1))
