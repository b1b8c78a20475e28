"""``datagouv-eval sql``: query the warehouse read-only and print a table.

For analysts without the ``duckdb`` shell: the same SQL works in both. The dbt models live in
the ``main`` schema (``experiment_summary``, ``metrics_by_capability``...), the loaded tables in
``eval`` (``eval.runs``, ``eval.verdicts``...).
"""

from __future__ import annotations

from pathlib import Path

import click
import duckdb

from datagouv_eval_pipeline.warehouse.location import default_duckdb_path
from datagouv_eval_pipeline.warehouse.schema import SCHEMA

_NO_FILES: dict[str, str | bool | int | float | list[str]] = {
    "enable_external_access": False,
    "lock_configuration": True,
}
"""No file but the warehouse is read or written, and the query cannot change that."""


def _fmt(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


@click.command("sql")
@click.argument("query")
@click.option(
    "--db",
    "db_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="DuckDB file (default: $DATAGOUV_EVAL_DUCKDB or data/warehouse.duckdb).",
)
@click.option("--limit", type=click.IntRange(min=1), default=200, show_default=True)
def command(query: str, db_path: Path | None, limit: int) -> None:
    """Run QUERY against the warehouse (read-only) and print the rows."""
    path = db_path or Path(default_duckdb_path())
    if not path.exists():
        raise click.ClickException(
            f"{path}: no warehouse yet; run `./dev run` (or `datagouv-eval experiment`) first"
        )
    try:
        # read_only alone still lets COPY … TO, ATTACH or extensions touch other files.
        with duckdb.connect(str(path), read_only=True, config=_NO_FILES) as conn:
            cursor = conn.execute(query)
            names = [d[0] for d in cursor.description or []]
            rows = cursor.fetchmany(limit)
    except duckdb.Error as error:
        raise click.ClickException(f"{type(error).__name__}: {error}") from None
    table = [names] + [[_fmt(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(names))]
    for position, row in enumerate(table):
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
        if position == 0:
            click.echo("  ".join("-" * width for width in widths))
    click.echo(
        f"({len(rows)} row(s){'; limit reached' if len(rows) == limit else ''}; "
        f"tables: {SCHEMA}.* loaded, main.* dbt models)"
    )
