"""The report's per-language section, from hand rows of the statistics tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from datagouv_eval_pipeline.pipeline.report.data import ReportData
from datagouv_eval_pipeline.pipeline.report.markdown import render_markdown
from datagouv_eval_pipeline.pipeline.report.render import render_site
from datagouv_eval_pipeline.pipeline.report.views import build_view, language_rows
from datagouv_eval_pipeline.pipeline.warehouse.schema import TABLES_BY_NAME


def _row(table: str, **values: Any) -> dict[str, Any]:
    """A row of a warehouse table: every column, NULL unless given."""
    row: dict[str, Any] = dict.fromkeys(c.name for c in TABLES_BY_NAME[table].columns)
    row.update(values)
    return row


CELL = "hand~model-a__mcp@0.2.26__p"
CELL_ROW = _row(
    "cells",
    cell_key=CELL,
    model_name="model-a",
    model_provider="hand",
    capability_set="mcp",
    mcp_version="0.2.26",
    model_is_llm=False,
)


def _estimate(language: str, metric: str, mean: float, n: int, low: float | None) -> dict[str, Any]:
    return {
        "cell_key": CELL,
        "language": language,
        "tier": "minimal",
        "metric": metric,
        "mean": mean,
        "n": n,
        "runs": 2,
        "coverage": n / 2,
        "ci_low": low,
        "ci_high": None if low is None else 1.0,
        "reason": None if low is not None else "fewer than two tasks scored",
    }


def _data() -> ReportData:
    runs = [
        _row(
            "runs",
            run_id=f"{CELL}|{task}|0",
            cell_key=CELL,
            task_id=task,
            repeat_index=0,
            status="ok",
            answer="an answer",
            tool_call_count=0,
            total_tokens=0,
            latency_ms=10.0,
            input_tokens=0,
            output_tokens=0,
        )
        for task in ("task_0001", "task_0002", "task_0050", "task_0051")
    ]
    tasks = {
        task: _row("tasks", task_id=task, task_name=task, language=language)
        for task, language in (
            ("task_0001", "fr"),
            ("task_0002", "fr"),
            ("task_0050", "en"),
            ("task_0051", "en"),
        )
    }
    estimates = [
        _estimate("fr", "accuracy", 1.0, 2, 0.34),
        _estimate("fr", "action_f1", 0.9, 2, 0.5),
        _estimate("en", "accuracy", 0.0, 1, None),
    ]
    return ReportData(
        db_path=Path("w.duckdb"),
        cells={CELL: CELL_ROW},
        tasks=tasks,
        runs=runs,
        metrics={},
        verdicts={},
        tool_calls={},
        failure_modes={},
        summaries={},
        failure_counts=[],
        comparisons=[],
        # one cell-scope estimate: the statistics stage ran
        estimates={(CELL, "minimal", "accuracy"): {**estimates[0], "language": "all"}},
        tests=[],
        tables=frozenset(),
        language_estimates={
            (e["cell_key"], e["language"], e["tier"], e["metric"]): e for e in estimates
        },
    )


def test_each_cell_has_one_row_per_task_language() -> None:
    rows = language_rows(_data())
    assert [(r.language, r.tasks) for r in rows] == [("en", 2), ("fr", 2)]
    en, fr = rows
    assert (fr.accuracy.mean, fr.accuracy.scored, fr.accuracy.low) == (1.0, 2, 0.34)
    assert (fr.action_f1.mean, fr.action_f1.high) == (0.9, 1.0)
    # One English task scored: a mean without an interval, and the estimate's reason.
    assert (en.accuracy.mean, en.accuracy.scored, en.accuracy.low) == (0.0, 1, None)
    assert en.accuracy.note == "fewer than two tasks scored"
    # No estimate row (action F1 never scored in English): not scored, never a zero.
    assert (en.action_f1.mean, en.action_f1.scored, en.action_f1.runs) == (None, 0, 2)


def test_the_page_and_the_markdown_show_the_split() -> None:
    view = build_view(_data())
    assert view.language_tasks == {"en": 2, "fr": 2}
    markdown = render_markdown(view)
    assert "## Per task language (minimal tier)" in markdown
    assert "Tasks run per language: en 2, fr 2." in markdown
    assert "| model-a · mcp 0.2.26 | fr | 2 | **1.00** [0.34, 1.00] n=2/2 |" in markdown
    assert "| model-a · mcp 0.2.26 | en | 2 | **0.00** n=1/2 | not scored (n=0/2) |" in markdown
    page = render_site(view).pages["index.html"]
    assert 'id="languages"' in page and 'data-language="en"' in page
    assert "nothing to split" not in page


def test_without_statistics_the_section_says_so() -> None:
    data = _data()
    data.estimates.clear()
    view = build_view(data)
    assert view.languages == []
    assert "Absent: per-language means come from the statistics tables." in render_markdown(view)
