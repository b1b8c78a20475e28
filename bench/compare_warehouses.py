"""Compare two warehouses table by table, leaving out what measures time.

Every table of the ``eval`` and ``main`` (dbt) schemas of warehouse A, rows sorted, loopback
ports masked, floats rounded to 9 digits, without the columns that hold timings, timestamps,
run and experiment ids, code versions, and without the rows of timing metrics
(``latency_ms``, ``time_efficiency``). Exits 1 when a table differs.

Run: ``python3 -m uv run python bench/compare_warehouses.py A.duckdb B.duckdb``.
"""

from __future__ import annotations

import re
import sys
from typing import Any

import duckdb

SKIP_COLUMNS = re.compile(
    r"(latency|_ms$|started_at|loaded_at|recorded_at|experiment_id|dagster_run_id|^run_id$|"
    r"git_|code_version)"
)
SKIP_TABLES = {"eval.experiments", "eval.schema_info"}
TIMING_METRICS = "('latency_ms', 'time_efficiency', 'effective_latency_ms')"
PORT = re.compile(r"127\.0\.0\.1:\d+")


def _rows(conn: duckdb.DuckDBPyConnection, table: str, columns: list[str]) -> list[tuple[Any, ...]]:
    where = f" WHERE metric NOT IN {TIMING_METRICS}" if "metric" in columns else ""
    out = []
    for row in conn.execute(f"SELECT {', '.join(columns)} FROM {table}{where}").fetchall():
        out.append(
            tuple(
                PORT.sub("127.0.0.1:PORT", x)
                if isinstance(x, str)
                else round(x, 9)
                if isinstance(x, float)
                else str(x)
                for x in row
            )
        )
    return sorted(out, key=repr)


def main() -> None:
    """Print one line per table and the number of tables that differ."""
    a, b = (duckdb.connect(path, read_only=True) for path in sys.argv[1:3])
    tables = a.execute(
        "SELECT table_schema || '.' || table_name FROM information_schema.tables "
        "WHERE table_schema IN ('eval', 'main') ORDER BY 1"
    ).fetchall()
    differ = 0
    for (table,) in tables:
        if table in SKIP_TABLES:
            continue
        schema, name = table.split(".")
        columns = [
            column
            for (column,) in a.execute(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position",
                [schema, name],
            ).fetchall()
            if not SKIP_COLUMNS.search(column)
        ]
        rows_a, rows_b = _rows(a, table, columns), _rows(b, table, columns)
        if rows_a == rows_b:
            print(f"same {table}: {len(rows_a)} rows")
            continue
        differ += 1
        only_a, only_b = set(rows_a) - set(rows_b), set(rows_b) - set(rows_a)
        print(f"DIFF {table}: {len(rows_a)} vs {len(rows_b)} rows, {len(only_a)} / {len(only_b)}")
    print(f"tables differing: {differ}")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
