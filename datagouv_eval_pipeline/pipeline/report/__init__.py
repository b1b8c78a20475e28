"""The experiment report and the results browser, from the DuckDB warehouse (no Dagster here).

:func:`build_report` reads the warehouse (and, optionally, the run store and the prompt texts
through :func:`read_sources`) and writes a self-contained HTML page with its plots, the same
report as Markdown, and static pages of every cell, task and run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from datagouv_eval_pipeline.base.faces import lazy_attributes

if TYPE_CHECKING:
    from datagouv_eval_pipeline.pipeline.report.build import (
        BuiltReport,
        build_report,
        default_report_dir,
    )
    from datagouv_eval_pipeline.pipeline.report.data import ReportInputError, ReportSources
    from datagouv_eval_pipeline.pipeline.report.render import BROWSER_DIR, REPORT_PAGE
    from datagouv_eval_pipeline.pipeline.report.sources import read_sources

_MODULE_OF: dict[str, str] = {
    "BROWSER_DIR": ".render",
    "BuiltReport": ".build",
    "REPORT_PAGE": ".render",
    "ReportInputError": ".data",
    "ReportSources": ".data",
    "build_report": ".build",
    "default_report_dir": ".build",
    "read_sources": ".sources",
}
"""Each public name, and the module that defines it."""

if not TYPE_CHECKING:  # hidden from mypy, which then checks each name imported from the face
    __getattr__ = lazy_attributes(__name__, _MODULE_OF)


__all__ = [
    "BROWSER_DIR",
    "REPORT_PAGE",
    "BuiltReport",
    "ReportInputError",
    "ReportSources",
    "build_report",
    "default_report_dir",
    "read_sources",
]
