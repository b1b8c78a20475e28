"""The ``experiment_report`` asset: the headline table of the experiment, as Markdown.

It reads the dbt model ``experiment_summary`` (one row per cell × tier) and writes
``experiment_report.md`` next to the DuckDB file; the same table shows in the asset's metadata.
"""

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import dagster as dg

from datagouv_eval_pipeline.defs.resources import WarehouseResource
from datagouv_eval_pipeline.warehouse.loader import connect

SUMMARY_MODEL = "experiment_summary"
_COLUMNS = (
    ("cell_key", "cell"),
    ("tier", "tier"),
    ("runs", "runs"),
    ("runs_ok", "ok"),
    ("runs_skipped", "skipped"),
    ("avg_accuracy", "accuracy"),
    ("criterion_coverage", "criteria decided"),
    ("avg_action_f1", "action F1"),
)


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def render_report(rows: Sequence[dict[str, Any]], db_path: Path) -> str:
    """The report as Markdown (``—`` marks a value that is not scored, never a zero).

    "criteria decided" is criterion coverage: decided criteria / criteria asked, per tier.
    """
    header = "| " + " | ".join(label for _, label in _COLUMNS) + " |"
    rule = "|" + "---|" * len(_COLUMNS)
    lines = [
        "# Experiment report",
        "",
        f"Warehouse: `{db_path}` (dbt model `{SUMMARY_MODEL}`).",
        "",
        header,
        rule,
    ]
    for row in rows:
        lines.append("| " + " | ".join(_cell(row.get(name)) for name, _ in _COLUMNS) + " |")
    return "\n".join(lines) + "\n"


def summary_rows(db_path: Path) -> list[dict[str, Any]]:
    """Rows of the dbt ``experiment_summary`` model, wherever dbt put its schema.

    Raises:
        LookupError: The model has not been built yet.
    """
    with connect(db_path, read_only=True) as conn:
        found = conn.execute(
            "SELECT table_schema FROM information_schema.tables WHERE table_name = ?",
            [SUMMARY_MODEL],
        ).fetchall()
        if not found:
            raise LookupError(f"{db_path}: no {SUMMARY_MODEL} model; run the dbt assets first")
        cursor = conn.execute(
            f'SELECT * FROM "{found[0][0]}"."{SUMMARY_MODEL}" ORDER BY cell_key, tier'
        )
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def experiment_report_asset(deps: Sequence[dg.AssetKey]) -> dg.AssetsDefinition:
    """Build the report asset downstream of ``deps`` (the dbt models)."""

    @dg.asset(
        name="experiment_report",
        deps=list(deps),
        group_name="report",
        kinds={"markdown"},
        automation_condition=dg.AutomationCondition.eager(),
    )
    def experiment_report(
        context: dg.AssetExecutionContext, warehouse: WarehouseResource
    ) -> dg.MaterializeResult[None]:
        """Write the experiment's headline table next to the warehouse file."""
        db = warehouse.db_path()
        rows = summary_rows(db)
        text = render_report(rows, db)
        path = db.with_name("experiment_report.md")
        path.write_text(text, encoding="utf-8")
        context.log.info("report written to %s", path)
        return dg.MaterializeResult(
            metadata={"path": str(path), "rows": len(rows), "report": dg.MetadataValue.md(text)}
        )

    return experiment_report


REPORT_DEPS = [dg.AssetKey(["metrics", SUMMARY_MODEL])]
"""The dbt model the report reads."""
