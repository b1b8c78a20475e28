"""``datagouv-eval sql``: query the warehouse read-only and print a table.

For analysts without the ``duckdb`` shell: the same SQL works in both. The dbt models live in
the ``main`` schema (``experiment_summary``, ``metrics_by_capability``...), the loaded tables in
``eval`` (``eval.runs``, ``eval.verdicts``...).
"""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path
from typing import TextIO

import click
import duckdb

from datagouv_eval_pipeline.cli.experiment_summary import EXIT_INTERRUPTED
from datagouv_eval_pipeline.pipeline.warehouse import (
    SCHEMA,
    QueryInterrupted,
    default_duckdb_path,
    run_interruptibly,
)

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


def _read_query(query: str | None, file: TextIO | None) -> str:
    """The SQL to run: the argument, the file (``-`` is standard input), or standard input."""
    if query is not None and file is not None:
        raise click.UsageError("give the query as an argument or with --file, not both")
    if query is not None:
        text = query
    elif file is not None:
        try:
            text = file.read()
        except UnicodeDecodeError as error:
            raise click.BadParameter(
                f"{file.name}: not UTF-8 text ({error})", param_hint="-f"
            ) from None
        except OSError as error:
            raise click.BadParameter(f"{file.name}: {error.strerror}", param_hint="-f") from None
    elif not sys.stdin.isatty():
        text = sys.stdin.read()
    else:
        raise click.UsageError("no query: give it as an argument, with --file FILE, or on stdin")
    if not text.strip():
        raise click.UsageError("the query is empty")
    return str(text)


# A query may start with a `--` comment: unknown "options" are taken as the query itself.
@click.command("sql", context_settings={"ignore_unknown_options": True})
@click.argument("query", required=False)
@click.option(
    "--file",
    "-f",
    "file",
    type=click.File("r", encoding="utf-8"),
    default=None,
    help="Read the SQL from FILE ('-' for standard input; stdin is read too when piped).",
)
@click.option(
    "--db",
    "db_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="DuckDB file (default: $DATAGOUV_EVAL_DUCKDB or data/warehouse.duckdb).",
)
@click.option(
    "--csv",
    "as_csv",
    is_flag=True,
    help="Write the rows as CSV (a header line, then every row) instead of a table.",
)
@click.option(
    "--out",
    "out",
    type=click.Path(path_type=Path, dir_okay=False, writable=True),
    default=None,
    help="Write the output to OUT instead of standard output.",
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=None,
    help="At most LIMIT rows (default: 200 for a table, every row for --csv).",
)
def command(
    query: str | None,
    file: TextIO | None,
    db_path: Path | None,
    as_csv: bool,
    out: Path | None,
    limit: int | None,
) -> None:
    """Run a query against the warehouse (read-only) and print the rows.

    The query is QUERY, the contents of --file, or standard input; it may hold comments and
    several statements (the rows of the last one are printed).
    """
    sql = _read_query(query, file)
    path = db_path or Path(default_duckdb_path())
    if not path.exists():
        raise click.ClickException(
            f"{path}: no warehouse yet; run `./dev run` (or `datagouv-eval experiment`) first"
        )
    cap = limit if limit is not None else (None if as_csv else _TABLE_LIMIT)

    def fetch(conn: duckdb.DuckDBPyConnection) -> tuple[list[str], list[tuple[object, ...]]]:
        cursor = conn.execute(sql)
        names = [d[0] for d in cursor.description or []]
        return names, cursor.fetchall() if cap is None else cursor.fetchmany(cap)

    try:
        # read_only alone still lets COPY … TO, ATTACH or extensions touch other files.
        with duckdb.connect(str(path), read_only=True, config=_NO_FILES) as conn:
            names, rows = run_interruptibly(conn, fetch)
    except QueryInterrupted as stopped:
        click.echo(str(stopped), err=True)
        sys.exit(EXIT_INTERRUPTED)
    except duckdb.Error as error:
        raise click.ClickException(f"{type(error).__name__}: {error}") from None
    text = _csv(names, rows) if as_csv else _table(names, rows, cap)
    if out is None:
        click.echo(text, nl=False)
        return
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as error:
        raise click.ClickException(f"{out}: cannot write the output ({error.strerror})") from None
    click.echo(f"{len(rows)} row(s) written to {out}", err=True)


_TABLE_LIMIT = 200
"""Rows a table shows unless --limit says otherwise."""


def _csv(names: list[str], rows: list[tuple[object, ...]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(names)
    writer.writerows(["" if value is None else value for value in row] for row in rows)
    return buffer.getvalue()


def _table(names: list[str], rows: list[tuple[object, ...]], cap: int | None) -> str:
    table = [names] + [[_fmt(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(names))]
    lines: list[str] = []
    for position, row in enumerate(table):
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
        if position == 0:
            lines.append("  ".join("-" * width for width in widths))
    lines.append(
        f"({len(rows)} row(s){'; limit reached' if len(rows) == cap else ''}; "
        f"tables: {SCHEMA}.* loaded, main.* dbt models)"
    )
    return "\n".join(lines) + "\n"
