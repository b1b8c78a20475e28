"""Standard read queries over the warehouse (what asset checks and reports ask)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb

from datagouv_eval_pipeline.pipeline.warehouse.schema import ALL_TABLES, SCHEMA

EXPERIMENT_SUMMARY_SQL = f"""
SELECT r.cell_key, m.tier, m.metric,
       count(*) AS runs,
       count(m.value) AS scored,
       count(m.value) / count(*) AS coverage,
       CASE WHEN any_value(m.aggregation) = 'avg' THEN avg(m.value) END AS mean,
       CASE WHEN any_value(m.aggregation) = 'sum' THEN sum(m.value) END AS total_value
FROM {SCHEMA}.metrics AS m JOIN {SCHEMA}.runs AS r USING (run_id)
GROUP BY ALL
ORDER BY ALL
"""
"""Per cell × tier × metric: averages of per-run values (NULLs excluded), totals, coverage."""


@dataclass(frozen=True)
class Coverage:
    """Which expected cells the warehouse holds.

    Attributes:
        expected: Expected cell keys, in order.
        present: Expected keys that have rows in ``eval.cells``.
        missing: Expected keys without rows.
        failed_loads: Keys whose load raised, with the error message.
    """

    expected: tuple[str, ...]
    present: tuple[str, ...]
    missing: tuple[str, ...]
    failed_loads: dict[str, str] = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        """Share of expected cells present; None when nothing is expected."""
        return len(self.present) / len(self.expected) if self.expected else None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (asset metadata)."""
        return {
            "expected": len(self.expected),
            "present": len(self.present),
            "ratio": self.ratio,
            "missing": list(self.missing),
            "failed_loads": dict(self.failed_loads),
        }


def cell_coverage(conn: duckdb.DuckDBPyConnection, expected: Sequence[str]) -> Coverage:
    """Compare the expected cell keys with the cells present in ``eval.cells``.

    The load reports it, and the ``cell_coverage`` asset check asks it of a read-only
    connection.
    """
    found = {row[0] for row in conn.execute(f"SELECT cell_key FROM {SCHEMA}.cells").fetchall()}
    present = tuple(key for key in expected if key in found)
    missing = tuple(key for key in expected if key not in found)
    return Coverage(tuple(expected), present, missing)


def row_counts(conn: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Rows per warehouse table."""
    counts: dict[str, int] = {}
    for table in ALL_TABLES:
        row = conn.execute(f"SELECT count(*) FROM {table.qualified}").fetchone()
        counts[table.name] = int(row[0]) if row else 0
    return counts


def runs_per_cell(conn: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Runs per cell key (compare with the partition's trace count)."""
    rows = conn.execute(
        f"SELECT cell_key, count(*) FROM {SCHEMA}.runs GROUP BY cell_key ORDER BY cell_key"
    ).fetchall()
    return {str(key): int(count) for key, count in rows}


def duplicate_runs(conn: duckdb.DuckDBPyConnection) -> list[tuple[str, str, int, int]]:
    """(cell, task, repeat, count) appearing more than once (always empty: the key is enforced)."""
    rows = conn.execute(
        f"SELECT cell_key, task_id, repeat_index, count(*) FROM {SCHEMA}.runs "
        "GROUP BY ALL HAVING count(*) > 1"
    ).fetchall()
    return [(str(c), str(t), int(r), int(n)) for c, t, r, n in rows]


def out_of_range_values(conn: duckdb.DuckDBPyConnection) -> list[tuple[str, str, float]]:
    """(table, run_id, value) of bounded metric or verdict values outside [0, 1]."""
    rows = conn.execute(
        f"""
        SELECT 'metrics', run_id, value FROM {SCHEMA}.metrics
        WHERE bounded AND (value < 0 OR value > 1)
        UNION ALL
        SELECT 'verdicts', run_id, value FROM {SCHEMA}.verdicts WHERE value < 0 OR value > 1
        """
    ).fetchall()
    return [(str(t), str(r), float(v)) for t, r, v in rows]


def judge_coverage(conn: duckdb.DuckDBPyConnection) -> float | None:
    """Scored / total over judge verdicts that apply (checks excluded); None without any."""
    row = conn.execute(
        f"SELECT count(value), count(*) FROM {SCHEMA}.verdicts "
        "WHERE kind <> 'check' AND NOT inherited AND status <> 'not_applicable'"
    ).fetchone()
    if row is None or row[1] == 0:
        return None
    return float(row[0]) / float(row[1])


def criterion_coverage(conn: duckdb.DuckDBPyConnection) -> dict[str, tuple[int, int]]:
    """Per tier: (criteria scored, criteria total) over every run's criterion verdicts.

    A tier counts the criteria that apply to it (the optimal tier includes the minimal ones,
    inherited), as the tier's accuracy does.
    """
    rows = conn.execute(
        f"SELECT tier, count(value), count(*) FROM {SCHEMA}.verdicts "
        "WHERE kind = 'criterion' GROUP BY tier ORDER BY tier"
    ).fetchall()
    return {str(tier): (int(scored), int(total)) for tier, scored, total in rows}


def experiment_summary(conn: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Rows of :data:`EXPERIMENT_SUMMARY_SQL` as dicts."""
    cursor = conn.execute(EXPERIMENT_SUMMARY_SQL)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
