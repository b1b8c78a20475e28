"""The experiment report and the results browser, from the DuckDB warehouse (no Dagster here).

:func:`build_report` reads the warehouse (and, optionally, the run store and the prompt texts
through :func:`read_sources`) and writes a self-contained HTML page with its plots, the same
report as Markdown, and static pages of every cell, task and run.
"""

from datagouv_eval_pipeline.pipeline.report.build import (
    BuiltReport,
    build_report,
    default_report_dir,
)
from datagouv_eval_pipeline.pipeline.report.data import ReportInputError, ReportSources
from datagouv_eval_pipeline.pipeline.report.sources import read_sources

__all__ = [
    "BuiltReport",
    "ReportInputError",
    "ReportSources",
    "build_report",
    "default_report_dir",
    "read_sources",
]
