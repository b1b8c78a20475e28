"""``datagouv-eval twin``: serve the local data.gouv.fr twin, or rebuild its snapshot."""

from __future__ import annotations

import json
from pathlib import Path

import click

from datagouv_eval_pipeline.twin.urls import TwinUrls


@click.group(name="twin")
def command() -> None:
    """The local data.gouv.fr twin (REST v1/v2, Tabular, Metrics and crawler APIs)."""


@command.command("serve")
@click.option("--port", type=int, default=8765, show_default=True, help="TCP port (0 = free).")
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
def serve(
    port: int, snapshot_id: str | None, snapshots_dir: Path | None, tabular_page_size_max: int
) -> None:
    """Serve the twin on 127.0.0.1 until Ctrl-C, printing its base URLs."""
    from datagouv_eval_pipeline.twin.app import TwinConfig
    from datagouv_eval_pipeline.twin.catalog import CatalogStore, SnapshotError
    from datagouv_eval_pipeline.twin.server import serve_forever

    try:
        store = CatalogStore.load(snapshots_dir, snapshot_id)
    except SnapshotError as error:
        raise click.ClickException(str(error)) from error

    def ready(urls: TwinUrls) -> None:
        click.echo(f"data.gouv.fr twin — snapshot {store.snapshot_id}")
        for name, url in urls.as_dict().items():
            click.echo(f"  {name:<13} {url}")
        click.echo("Press Ctrl-C to stop.")

    serve_forever(
        store,
        port=port,
        config=TwinConfig(tabular_page_size_max=tabular_page_size_max),
        on_ready=ready,
    )


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
    """Regenerate the snapshot deterministically from twin/source/, the catalogue and generators."""
    from datagouv_eval_pipeline.twin.build_snapshot import (
        SourceError,
        default_snapshots_dir,
        write_snapshot,
    )

    try:
        entry = write_snapshot(
            snapshots_dir or default_snapshots_dir(), catalogue_export=catalogue_export
        )
    except SourceError as error:
        raise click.ClickException(str(error)) from error
    click.echo(f"wrote snapshot {entry['snapshot_id']}")
    click.echo(json.dumps(entry["counts"], indent=1))


@command.command("urls")
@click.option("--port", type=int, default=8765, show_default=True)
def urls(port: int) -> None:
    """Print the base URLs a client should use for a twin on PORT."""
    click.echo(json.dumps(TwinUrls.for_port(port).as_dict(), indent=1))
