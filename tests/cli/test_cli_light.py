"""`datagouv-eval --help` and `sql` stay light, and `sql` reads and writes as shells do.

Speed itself is measured in bench/ (README figures); these tests hold the cause of the slowness
away: the listing and the query import none of the heavy libraries, in a fresh interpreter.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import click
import duckdb
import pytest
from click.testing import CliRunner

from datagouv_eval_pipeline.cli import _COMMANDS, main
from tests.import_probe import modules_after

HEAVY = (
    "pandas",
    "dagster",
    "dagster_dbt",
    "dbt",
    "pydantic_ai",
    "openai",
    "mcp",
    "matplotlib",
    "scipy",
    "statsmodels",
    "datagouv_eval_pipeline.core.judges",
)


def _modules_after(code: str) -> set[str]:
    return modules_after(code, HEAVY)


def test_help_lists_every_command_without_importing_them() -> None:
    loaded = _modules_after(
        "from click.testing import CliRunner\n"
        "from datagouv_eval_pipeline.cli import main\n"
        "result = CliRunner().invoke(main, ['--help'])\n"
        "assert result.exit_code == 0, result.output\n"
        "assert 'experiment' in result.output and 'validate' in result.output\n"
    )
    assert loaded == set()


def test_the_listed_short_help_is_each_command_s_own() -> None:
    ctx = click.Context(main)
    for name, entry in _COMMANDS.items():
        command = main.get_command(ctx, name)
        assert command is not None, name
        assert entry.short_help == command.get_short_help_str(10_000), name
    listing = CliRunner().invoke(main, ["--help"]).output
    assert "Run a query against the warehouse (read-only) and print the..." in listing


def test_sql_imports_no_heavy_library(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    duckdb.connect(str(db)).close()
    loaded = _modules_after(
        "from click.testing import CliRunner\n"
        "from datagouv_eval_pipeline.cli import main\n"
        f"result = CliRunner().invoke(main, ['sql', '--db', {str(db)!r}, 'select 1 as one'])\n"
        "assert result.exit_code == 0, result.output\n"
    )
    assert loaded == set()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "warehouse.duckdb"
    with duckdb.connect(str(path)) as conn:
        conn.execute(
            "CREATE TABLE t AS SELECT * FROM (VALUES (1, 'a,b'), (2, NULL), (3, 'c')) AS v(x, y)"
        )
    return path


def _sql(db: Path, *args: str, stdin: str | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["sql", "--db", str(db), *args], input=stdin)
    return result.exit_code, result.output


def test_a_query_may_start_with_a_comment(db: Path) -> None:
    code, output = _sql(db, "-- the largest x\nSELECT max(x) AS top FROM t")
    assert code == 0, output
    assert output.splitlines()[:3] == ["top", "---", "3  "]


def test_csv_output_has_every_row_quoted_as_csv(db: Path) -> None:
    code, output = _sql(db, "--csv", "SELECT x, y FROM t ORDER BY x")
    assert code == 0, output
    assert list(csv.reader(io.StringIO(output))) == [
        ["x", "y"],
        ["1", "a,b"],
        ["2", ""],
        ["3", "c"],
    ]


def test_the_query_comes_from_a_file_or_stdin_and_goes_to_a_file(db: Path, tmp_path: Path) -> None:
    query = tmp_path / "q.sql"
    query.write_text("-- how many\nSELECT count(*) AS n FROM t;\n", encoding="utf-8")
    out = tmp_path / "out.csv"
    code, output = _sql(db, "-f", str(query), "--csv", "--out", str(out))
    assert code == 0, output
    assert out.read_text(encoding="utf-8") == "n\n3\n"
    assert "1 row(s) written to" in output

    code, output = _sql(db, "--csv", stdin="SELECT y FROM t WHERE x = 3")
    assert code == 0, output
    assert output == "y\nc\n"


def test_two_queries_or_none_are_usage_errors(db: Path, tmp_path: Path) -> None:
    query = tmp_path / "q.sql"
    query.write_text("SELECT 1", encoding="utf-8")
    code, output = _sql(db, "-f", str(query), "SELECT 2")
    assert code == 2
    assert "not both" in output
    code, output = _sql(db, stdin="   \n")
    assert code == 2
    assert "the query is empty" in output
    assert "Traceback" not in output
