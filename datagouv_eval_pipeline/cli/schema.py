"""``datagouv-eval schema``: regenerate (or check) the JSON schemas and the generated docs.

The generated docs: the dbt column docs, and the table of metric names in ``docs/warehouse.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from datagouv_eval_pipeline.base.project_files import DBT_PROJECT, PACKAGE_DIR
from datagouv_eval_pipeline.cli.validate import display_path
from datagouv_eval_pipeline.core.benchmark import BENCHMARK_SCHEMA_PATH, benchmark_json_schema
from datagouv_eval_pipeline.core.tasks import (
    TASK_SPEC_SCHEMA_PATH,
    render_schema,
    task_spec_json_schema,
)
from datagouv_eval_pipeline.core.traces import TRACE_SCHEMA_PATH, trace_json_schema

SCHEMAS: dict[Path, Callable[[], dict[str, Any]]] = {
    TASK_SPEC_SCHEMA_PATH: task_spec_json_schema,
    BENCHMARK_SCHEMA_PATH: benchmark_json_schema,
    TRACE_SCHEMA_PATH: trace_json_schema,
}
"""Each committed schema file and the function that generates it."""

DBT_DOCS_PROJECT = PACKAGE_DIR.parent / DBT_PROJECT
"""The dbt project whose YAML column docs are generated from the warehouse schema's docs."""


def stale_schemas() -> list[Path]:
    """Return the committed schema files and dbt YAML files that differ from their generators."""
    stale = []
    for path, generate in SCHEMAS.items():
        current = path.read_text(encoding="utf-8") if path.is_file() else None
        if current != render_schema(generate()):
            stale.append(path)
    stale += [f.path for f in _dbt_docs() if f.current != f.generated]
    metric_docs = _metric_docs()
    if metric_docs is not None and metric_docs[1] != metric_docs[2]:
        stale.append(metric_docs[0])
    return stale


def _metric_docs() -> tuple[Path, str, str] | None:
    """``docs/warehouse.md``, as committed and with its metric table regenerated (None: absent)."""
    from datagouv_eval_pipeline.pipeline.warehouse import (
        WAREHOUSE_DOCS,
        MarkersMissingError,
        with_metric_table,
    )

    if not WAREHOUSE_DOCS.is_file():
        return None  # an installed wheel carries no docs
    current = WAREHOUSE_DOCS.read_text(encoding="utf-8")
    try:
        return WAREHOUSE_DOCS, current, with_metric_table(current)
    except MarkersMissingError as error:
        raise click.ClickException(str(error)) from error


def _dbt_docs(warehouse: Path | None = None) -> list[Any]:
    if not (DBT_DOCS_PROJECT / "models").is_dir():
        return []  # an installed wheel: the project is packaged elsewhere, read-only
    import duckdb

    from datagouv_eval_pipeline.pipeline.warehouse import (
        built_columns,
        describe_open_error,
        docs_files,
    )

    try:
        built = built_columns(warehouse) if warehouse else None
    except duckdb.Error as error:
        assert warehouse is not None
        raise click.ClickException(describe_open_error(warehouse, error)) from error
    return docs_files(DBT_DOCS_PROJECT, built)


@click.command("schema")
@click.option("--check", is_flag=True, help="Only check that the committed schemas are current.")
@click.option(
    "--dbt-columns-from",
    "warehouse",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A warehouse dbt has built: list each model's columns as built there (after a model "
    "gains or loses a column).",
)
def command(check: bool, warehouse: Path | None) -> None:
    """Regenerate the JSON schemas of the task specs, the benchmark configuration and traces.

    Also the dbt column docs (``dbt_metrics/models/**/*.yml``), from the warehouse schema's,
    and the metric names of ``docs/warehouse.md``, from the metric registry.
    """
    if check:
        stale = stale_schemas()
        for path in stale:
            click.echo(f"{display_path(path)}: stale; run `datagouv-eval schema`")
        if stale:
            raise SystemExit(1)
        click.echo("OK: the schemas are current")
        return
    dbt_docs = _dbt_docs(warehouse)  # read first: a bad warehouse leaves every file as it was
    for path, generate in SCHEMAS.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render_schema(generate()), encoding="utf-8")
        click.echo(f"wrote {display_path(path)}")
    for docs in dbt_docs:
        if docs.current != docs.generated:
            docs.path.write_text(docs.generated, encoding="utf-8")
            click.echo(f"wrote {display_path(docs.path)}")
    metric_docs = _metric_docs()
    if metric_docs is not None and metric_docs[1] != metric_docs[2]:
        metric_docs[0].write_text(metric_docs[2], encoding="utf-8")
        click.echo(f"wrote {display_path(metric_docs[0])}")
