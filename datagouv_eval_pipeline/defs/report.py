"""The ``experiment_report`` asset: the report page, its Markdown and the results browser.

The pure :mod:`datagouv_eval_pipeline.pipeline.report` package builds everything into ``report/``
next to
the DuckDB file (``index.html`` and ``browser/``). ``experiment_report.md`` next to the DuckDB
file holds its Markdown followed by the table of every cell × tier of the dbt model
``experiment_summary`` (:func:`render_summary_table`).

The asset's metadata shows the headline ranking as a table, the plots, and links to the report
page and the results browser over HTTP (the UI cannot open ``file://`` links): under
``$DATAGOUV_EVAL_REPORT_URL``, by default where ``datagouv-eval dagster ui`` serves the report
directory (``pipeline/report_site.py``).
"""

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import dagster as dg

from datagouv_eval_pipeline.core.tasks import TASK_SPECS_DIR, load_task_specs
from datagouv_eval_pipeline.defs.interrupts import (
    raise_stopped,
    stop_if_requested,
    stopped_if_query_interrupted,
)
from datagouv_eval_pipeline.defs.partitions import CELLS
from datagouv_eval_pipeline.defs.resources import RunStoreResource, WarehouseResource
from datagouv_eval_pipeline.defs.result_tables import RANKING, preview_metadata
from datagouv_eval_pipeline.pipeline.agents import RunCancelled, current_token
from datagouv_eval_pipeline.pipeline.report import (
    BuiltReport,
    build_report,
    default_report_dir,
    read_sources,
)
from datagouv_eval_pipeline.pipeline.report_site import report_base_url
from datagouv_eval_pipeline.pipeline.warehouse import (
    JUDGE_CALIBRATION,
    SCHEMA,
    STATISTICS_TABLES,
    TASK_FEATURES,
    connect,
)

SUMMARY_MODEL = "experiment_summary"
_COLUMNS = (
    ("cell_key", "cell"),
    ("tier", "tier"),
    ("runs", "runs"),
    ("runs_ok", "ok"),
    ("runs_skipped", "skipped"),
    ("accuracy", "accuracy"),
    ("criterion_coverage", "criteria decided"),
    ("action_f1", "action F1"),
)


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def render_summary_table(rows: Sequence[dict[str, Any]], db_path: Path) -> str:
    """The report as Markdown (``—`` marks a value that is not scored, never a zero).

    "criteria decided" is criterion coverage: decided criteria / criteria asked, per tier.
    """
    header = "| " + " | ".join(label for _, label in _COLUMNS) + " |"
    rule = "|" + "---|" * len(_COLUMNS)
    lines = [
        "## Every cell and tier",
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


def report_links(built: BuiltReport, base_url: str) -> dict[str, str]:
    """The HTTP addresses of the report page, the browser and each plot under ``base_url``."""

    def under(path: Path) -> str:
        return base_url + path.relative_to(built.out_dir).as_posix()

    links = {"report": under(built.page), "browser": under(built.browser)}
    for name, _plot in built.figures.items():
        links[f"plot_{name}"] = under(built.out_dir / "figures" / f"{name}.png")
    return links


def _metadata(
    built: BuiltReport, markdown_path: Path, text: str, ranking: dict[str, Any]
) -> dict[str, Any]:
    links = report_links(built, report_base_url())
    # The image is embedded (it shows without the report server); the links need the server.
    plots = {
        f"plot_{name}": dg.MetadataValue.md(
            f"![{name}]({plot.data_uri})\n\n"
            f"[the report]({links['report']}) · [this plot]({links[f'plot_{name}']})"
        )
        for name, plot in built.figures.items()
    }
    return {
        "report_url": dg.MetadataValue.url(links["report"]),
        "browser_url": dg.MetadataValue.url(links["browser"]),
        **ranking,
        "cells": len(built.view.data.cells),
        "runs": len(built.view.data.runs),
        "pages": built.pages,
        **plots,
        "report": dg.MetadataValue.md(text),
        "path": dg.MetadataValue.path(str(markdown_path)),
        "report_page": dg.MetadataValue.path(str(built.page)),
    }


def experiment_report_asset(deps: Sequence[dg.AssetKey]) -> dg.AssetsDefinition:
    """Build the report asset downstream of ``deps`` (the dbt models)."""

    @dg.asset(
        name="experiment_report",
        deps=list(deps),
        group_name="report",
        kinds={"html", "markdown"},
        automation_condition=dg.AutomationCondition.eager(),
    )
    def experiment_report(
        context: dg.AssetExecutionContext,
        warehouse: WarehouseResource,
        run_store: RunStoreResource,
    ) -> dg.MaterializeResult[None]:
        """Write the report page, the results browser and the Markdown next to the warehouse."""
        stop_if_requested(context)
        db = warehouse.db_path()
        sources = read_sources(
            store_root=run_store.store().root,
            specs=load_task_specs([TASK_SPECS_DIR]),
            cells=CELLS,
        )
        try:
            with stopped_if_query_interrupted(context, "report not written"):
                built = build_report(db, default_report_dir(db), sources, cancel=current_token())
                rows = summary_rows(db)
        except RunCancelled as stop:
            raise_stopped(context, f"report not written ({stop.reason})")
        text = built.markdown + "\n" + render_summary_table(rows, db)
        path = db.with_name("experiment_report.md")
        path.write_text(text, encoding="utf-8")
        context.log.info("report written to %s (results browser: %s)", built.page, built.browser)
        with connect(db, read_only=True) as conn:
            ranking = preview_metadata(conn, RANKING)
        return dg.MaterializeResult(metadata=_metadata(built, path, text, ranking))

    return experiment_report


REPORT_DEPS = [
    dg.AssetKey(["metrics", SUMMARY_MODEL]),
    *(dg.AssetKey([SCHEMA, table.name]) for table in STATISTICS_TABLES),
    dg.AssetKey([SCHEMA, JUDGE_CALIBRATION.name]),
    dg.AssetKey([SCHEMA, TASK_FEATURES.name]),
]
"""What the report reads: the dbt models (their last one), the statistics tables, the judge's
calibration and the tasks' features (the by-feature section)."""
