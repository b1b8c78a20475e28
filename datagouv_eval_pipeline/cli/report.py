"""``datagouv-eval report``: build the report and the results browser, or serve them locally.

``build`` does what the ``experiment_report`` asset does, without Dagster: it reads the warehouse
(and the run store and task specs for the traces' prompts and details) and writes the pages.
``serve`` serves that directory on 127.0.0.1 (the pages also work opened as files).
"""

from __future__ import annotations

from pathlib import Path

import click
import duckdb

from datagouv_eval_pipeline.cli.ports import require_free_port
from datagouv_eval_pipeline.pipeline.experiment import default_run_store
from datagouv_eval_pipeline.pipeline.report_site import DEFAULT_REPORT_PORT, report_server
from datagouv_eval_pipeline.pipeline.warehouse import default_duckdb_path, describe_open_error

_DB = click.option(
    "--db",
    "db_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="DuckDB file (default: $DATAGOUV_EVAL_DUCKDB or data/warehouse.duckdb).",
)
_OUT = click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Output directory (default: report/ next to the DuckDB file).",
)
_STORE = click.option(
    "--run-store",
    "store_root",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Run store (default: $DATAGOUV_EVAL_RUN_STORE or data/run_store).",
)


def _build(db_path: Path | None, out_dir: Path | None, store_root: Path | None) -> Path:
    from datagouv_eval_pipeline.core.benchmark import expand_cells, load_benchmark_config
    from datagouv_eval_pipeline.core.tasks import TASK_SPECS_DIR, load_task_specs
    from datagouv_eval_pipeline.pipeline.report import ReportInputError, build_report, read_sources

    db = db_path or Path(default_duckdb_path())
    sources = read_sources(
        store_root=store_root or default_run_store(),
        specs=load_task_specs([TASK_SPECS_DIR]),
        cells=expand_cells(load_benchmark_config()),
    )
    try:
        built = build_report(db, out_dir, sources)
    except ReportInputError as error:
        raise click.ClickException(str(error)) from None
    except duckdb.Error as error:
        raise click.ClickException(describe_open_error(db, error)) from None
    click.echo(f"report:          {built.page}")
    click.echo(f"results browser: {built.browser} ({built.pages} pages)")
    return built.out_dir


@click.group("report")
def command() -> None:
    """The experiment report page and the results browser."""


@command.command("build")
@_DB
@_OUT
@_STORE
def build(db_path: Path | None, out_dir: Path | None, store_root: Path | None) -> None:
    """Write the report page, its Markdown and the results browser from the warehouse."""
    _build(db_path, out_dir, store_root)


@command.command("serve")
@_DB
@_OUT
@_STORE
@click.option(
    "--port", type=click.IntRange(0, 65535), default=DEFAULT_REPORT_PORT, show_default=True
)
@click.option(
    "--build/--no-build",
    "rebuild",
    default=True,
    show_default=True,
    help="Rebuild the pages before serving.",
)
def serve(
    db_path: Path | None, out_dir: Path | None, store_root: Path | None, port: int, rebuild: bool
) -> None:
    """Serve the report and the results browser on 127.0.0.1 (Ctrl-C stops)."""
    from datagouv_eval_pipeline.pipeline.report import default_report_dir

    require_free_port(port)
    if rebuild:
        directory = _build(db_path, out_dir, store_root)
    else:
        directory = out_dir or default_report_dir(db_path or Path(default_duckdb_path()))
        if not (directory / "index.html").exists():
            raise click.ClickException(
                f"{directory}: no report yet; run `datagouv-eval report build`"
            )
    with report_server(directory, port) as server:
        click.echo(
            f"serving {directory} on http://127.0.0.1:{server.server_address[1]}/", err=False
        )
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            click.echo("stopped")
