"""Results as table metadata, readable in the Dagster UI without leaving it.

The ranking (dbt ``headline_ranking``), the answered questions (``eval.questions``, dbt
``question_answers``) and the paired comparisons that answer them (``eval.question_comparisons``)
are attached to their assets' materializations as ``MetadataValue.table``, with a schema, so the
asset page shows them as tables. Each preview is one slice (the headline metric, a bounded
number of rows) and says how many rows the full table has; ``datagouv-eval sql`` reads the rest.

A column the table lacks is left out rather than failing the step: the preview must not break a
materialization when a model gains or renames a column.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import dagster as dg
import duckdb

from datagouv_eval_pipeline.pipeline.warehouse import SCHEMA

MAX_ROWS = 60
"""Rows per preview: enough for every cell of the default run's headline tier."""


@dataclass(frozen=True)
class Preview:
    """One table preview.

    Attributes:
        name: The metadata entry's name.
        table: The table or model name.
        columns: Columns shown, in order (those the table lacks are skipped).
        where: SQL filter of the slice shown ("" for none).
        order: SQL ``ORDER BY`` list.
        label: What the slice is, in words (shown with the row counts).
    """

    name: str
    table: str
    columns: Sequence[str]
    where: str
    order: str
    label: str


RANKING = Preview(
    "ranking",
    "headline_ranking",
    (
        "accuracy_rank",
        "model_name",
        "capability_set",
        "mcp_version",
        "skills_version",
        "accuracy",
        "accuracy_ci_low",
        "accuracy_ci_high",
        "accuracy_n",
        "runs",
        "action_f1",
        "note",
        "cell_key",
    ),
    "tier = 'minimal'",
    "ranked DESC, accuracy_rank, accuracy DESC NULLS LAST, cell_key",
    "tier minimal, ranked cells first",
)
"""The headline ranking: which cell is best, with its 95 % interval and n."""

QUESTIONS = Preview(
    "questions",
    "questions",
    ("evaluation_type", "description", "factor", "active", "cells", "pairs", "reason"),
    "",
    "active DESC, evaluation_type",
    "every evaluation type",
)
"""The question each evaluation type asks, and whether the run could answer it."""

_COMPARISON_COLUMNS = (
    "evaluation_type",
    "setting",
    "value_a",
    "value_b",
    "tier",
    "mean_a",
    "mean_b",
    "mean_difference",
    "ci_low",
    "ci_high",
    "p_adjusted",
    "verdict",
)

QUESTION_COMPARISONS = Preview(
    "accuracy_comparisons",
    "question_comparisons",
    (*_COMPARISON_COLUMNS, "reason"),
    "metric = 'accuracy'",
    "evaluation_type, p_adjusted NULLS LAST, setting, value_a, value_b",
    "metric accuracy, most significant first",
)
"""The paired comparisons answering each question, on the headline metric."""

ANSWERS = Preview(
    "answers",
    "question_answers",
    (*_COMPARISON_COLUMNS, "answered", "reason"),
    "metric = 'accuracy'",
    "evaluation_type, answered DESC, p_adjusted NULLS LAST, setting, value_a, value_b",
    "metric accuracy, answered first, most significant first",
)
"""Each question's answer per setting, on the headline metric."""

MODEL_PREVIEWS = {preview.table: preview for preview in (RANKING, ANSWERS)}
"""Previews attached to dbt models, by model name."""
WAREHOUSE_PREVIEWS = {preview.table: preview for preview in (QUESTIONS, QUESTION_COMPARISONS)}
"""Previews attached to warehouse tables, by table name."""


def relation(conn: duckdb.DuckDBPyConnection, name: str) -> str | None:
    """The qualified name of the table or view ``name`` (the warehouse schema first)."""
    rows = conn.execute(
        "SELECT table_schema FROM information_schema.tables WHERE table_name = ? "
        "ORDER BY table_schema <> ?, table_schema",
        [name, SCHEMA],
    ).fetchall()
    return f"{rows[0][0]}.{name}" if rows else None


def row_count(conn: duckdb.DuckDBPyConnection, name: str) -> int | None:
    """Rows of the table or view ``name``; None when it does not exist."""
    qualified = relation(conn, name)
    if qualified is None:
        return None
    row = conn.execute(f"SELECT count(*) FROM {qualified}").fetchone()
    return int(row[0]) if row else 0


def _value(value: Any) -> str | int | float | bool | None:
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, Decimal):
        value = float(value)
    if isinstance(value, float):
        return None if math.isnan(value) else round(value, 3)
    return str(value)


def preview_metadata(conn: duckdb.DuckDBPyConnection, preview: Preview) -> dict[str, Any]:
    """``{name: table, name_rows: "shown of total"}`` for ``preview``; empty when no such table."""
    qualified = relation(conn, preview.table)
    if qualified is None:
        return {}
    present = {
        str(row[0]) for row in conn.execute(f"SELECT * FROM {qualified} LIMIT 0").description or []
    }
    columns = [column for column in preview.columns if column in present]
    usable_filter = bool(preview.where) and _mentions_only(preview.where, present)
    where = f"WHERE {preview.where}" if usable_filter else ""
    order_terms = [term for term in preview.order.split(",") if term.split()[0] in present]
    order = f"ORDER BY {', '.join(order_terms)}" if order_terms else ""
    if not columns:
        return {}
    select = ", ".join(f'"{column}"' for column in columns)
    cursor = conn.execute(f"SELECT {select} FROM {qualified} {where} {order} LIMIT {MAX_ROWS}")
    types = [str(d[1]) for d in cursor.description or []]
    rows = cursor.fetchall()
    total_row = conn.execute(f"SELECT count(*) FROM {qualified} {where}").fetchone()
    total = int(total_row[0]) if total_row else 0
    schema = dg.TableSchema(
        columns=[dg.TableColumn(column, kind) for column, kind in zip(columns, types, strict=True)]
    )
    records = [
        dg.TableRecord({c: _value(v) for c, v in zip(columns, row, strict=True)}) for row in rows
    ]
    label = preview.label if usable_filter else "every row"
    return {
        preview.name: dg.MetadataValue.table(records, schema=schema),
        f"{preview.name}_shown": (
            f"{len(records)} of {total} rows ({label}); all of them: "
            f'datagouv-eval sql "SELECT * FROM {qualified}"'
        ),
    }


def _mentions_only(where: str, columns: set[str]) -> bool:
    # The filters above compare one column with a literal: that column must exist.
    return where.split()[0] in columns
