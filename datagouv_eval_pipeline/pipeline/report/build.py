"""Build the whole report: read the warehouse, choose the views, render and write the files.

Layout under the output directory: ``index.html`` (the self-contained report page, plots inline),
``experiment_report.md``, ``figures/*.png`` and ``browser/`` (the results browser).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from datagouv_eval_pipeline.pipeline.agents import CancelToken, RunCancelled
from datagouv_eval_pipeline.pipeline.report.data import ReportSources, load_report_data
from datagouv_eval_pipeline.pipeline.report.markdown import render_markdown
from datagouv_eval_pipeline.pipeline.report.render import (
    BROWSER_DIR,
    REPORT_PAGE,
    Figures,
    render_site,
)
from datagouv_eval_pipeline.pipeline.report.views import ReportView, build_view

MARKDOWN_NAME = "experiment_report.md"


@dataclass(frozen=True)
class BuiltReport:
    """What :func:`build_report` wrote.

    Attributes:
        out_dir: The output directory.
        page: The report page.
        browser: The results browser's index page.
        markdown: The Markdown text (also written as ``experiment_report.md``).
        figures: The plots.
        pages: How many HTML pages were written.
        view: The values the pages show.
    """

    out_dir: Path
    page: Path
    browser: Path
    markdown: str
    figures: Figures
    pages: int
    view: ReportView


def _stop_if(cancel: CancelToken | None) -> None:
    if cancel is not None and cancel.cancelled:
        raise RunCancelled(cancel.reason)


def default_report_dir(db_path: Path) -> Path:
    """Where the report goes by default: ``report/`` next to the warehouse file."""
    return db_path.with_name("report")


def build_report(
    db_path: Path,
    out_dir: Path | None = None,
    sources: ReportSources | None = None,
    *,
    generated: datetime | None = None,
    cancel: CancelToken | None = None,
) -> BuiltReport:
    """Read ``db_path`` and write the report page, its Markdown and the results browser.

    Args:
        db_path: The warehouse.
        out_dir: Where the pages go (default: ``report/`` next to the warehouse).
        sources: The run store's documents the pages link to.
        generated: The time the pages say they were made (default: now).
        cancel: Set by Ctrl-C or SIGTERM: the build stops before it writes anything.

    Raises:
        ReportInputError: The warehouse or its dbt models are missing.
        RunCancelled: ``cancel`` was set.
    """
    out = out_dir or default_report_dir(db_path)
    view = build_view(load_report_data(db_path, sources))
    _stop_if(cancel)
    site = render_site(view, generated=generated)
    _stop_if(cancel)
    page = out / REPORT_PAGE
    markdown = render_markdown(view, html_path=str(page))
    site.pages[MARKDOWN_NAME] = markdown
    for name, plot in site.figures.items():
        site.binaries[f"figures/{name}.png"] = plot.png
    _stop_if(cancel)
    written = site.write(out)
    return BuiltReport(
        out_dir=out,
        page=page,
        browser=out / BROWSER_DIR / "index.html",
        markdown=markdown,
        figures=site.figures,
        pages=sum(1 for p in written if p.suffix == ".html"),
        view=view,
    )
