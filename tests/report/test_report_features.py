"""The report's "By feature" section, from hand rows of the statistics tables.

Two models, each run with MCP 0.2.19 (A) and 0.2.26 (B); three features:

* ``search.and_semantics`` (task_0001-0003): model-a's accuracy A = (0, 0, 1), B = (1, 1, 1),
  so d = (1, 1, 0): mean 2/3, s = √(1/3), SE = s / √3 = 1/3, t(0.975, 2) = 4.302653, interval
  2/3 ± 1.434218 = [-0.7676, 2.1009]; exact McNemar with 2 B-only passes: p = 2 × 2⁻² = 0.5,
  alone in its family. model-b never ran those tasks in both cells: no row.
* ``tabular.filters`` (task_0004-0009): model-b passes all six with A and none with B: d = -1
  everywhere, SE 0, interval [-1, -1], p = 2 × 2⁻⁶ = 0.03125 < 0.05: worse. model-a has a row
  without a paired task (scored in one cell only).
* ``metrics.null_values`` (task_0010): no pair exercises it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from datagouv_eval_pipeline.pipeline.report.data import ReportData
from datagouv_eval_pipeline.pipeline.report.markdown import render_markdown
from datagouv_eval_pipeline.pipeline.report.render import render_site
from datagouv_eval_pipeline.pipeline.report.views import (
    NOT_EXERCISED,
    build_view,
    feature_comparisons,
)
from datagouv_eval_pipeline.pipeline.warehouse.schema import TABLES_BY_NAME
from tests.report.report_helpers import CHROMIUM, Tab, chromium, with_tab


def _row(table: str, **values: Any) -> dict[str, Any]:
    """A row of a warehouse table: every column, NULL unless given."""
    row: dict[str, Any] = dict.fromkeys(c.name for c in TABLES_BY_NAME[table].columns)
    row.update(values)
    return row


def _key(model: str, version: str) -> str:
    return f"hand~{model}__mcp@{version}__p"


A_OLD, A_NEW = _key("model-a", "0.2.19"), _key("model-a", "0.2.26")
B_OLD, B_NEW = _key("model-b", "0.2.19"), _key("model-b", "0.2.26")
VERSIONS = {A_OLD: "0.2.19", A_NEW: "0.2.26", B_OLD: "0.2.19", B_NEW: "0.2.26"}

FEATURES = {
    "metrics.null_values": ["task_0010"],
    "search.and_semantics": ["task_0001", "task_0002", "task_0003"],
    "tabular.filters": [f"task_{i:04d}" for i in range(4, 10)],
}

T_HALF = 4.302653 / 3  # t(0.975, 2) x SE


def _cell(key: str) -> dict[str, Any]:
    return _row(
        "cells",
        cell_key=key,
        model_provider="hand",
        model_name=key.split("~")[1].split("__")[0],
        capability_set="mcp",
        mcp_version=VERSIONS[key],
        model_is_llm=False,
    )


def _both_orders(table: str, **row: Any) -> list[dict[str, Any]]:
    """The row and its mirror, as the statistics stage writes them."""
    first = _row(
        table, dimension="mcp_version", tier="minimal", metric="accuracy", family_size=1, **row
    )
    low, high, diff = first["ci_low"], first["ci_high"], first["mean_difference"]
    mirror = first | {
        "cell_a": first["cell_b"],
        "cell_b": first["cell_a"],
        "value_a": first["value_b"],
        "value_b": first["value_a"],
        "mean_difference": None if diff is None else -diff,
        "ci_low": None if high is None else -high,
        "ci_high": None if low is None else -low,
        "verdict": {"worse": "better", "better": "worse"}.get(first["verdict"], first["verdict"]),
    }
    return [first, mirror]


def _pair(table: str, a: str, b: str, **row: Any) -> list[dict[str, Any]]:
    return _both_orders(table, cell_a=a, cell_b=b, value_a=VERSIONS[a], value_b=VERSIONS[b], **row)


def _data() -> ReportData:
    tests = [
        *_pair("comparisons", A_OLD, A_NEW, tasks=10, mean_difference=0.2),
        *_pair("comparisons", B_OLD, B_NEW, tasks=10, mean_difference=-0.6),
    ]
    feature_tests = [
        *_pair(
            "feature_comparisons",
            A_OLD,
            A_NEW,
            feature="search.and_semantics",
            pairs=3,
            tasks=3,
            mean_difference=2 / 3,
            ci_low=2 / 3 - T_HALF,
            ci_high=2 / 3 + T_HALF,
            p_value=0.5,
            p_adjusted=0.5,
            verdict="no detectable difference",
        ),
        *_pair(
            "feature_comparisons",
            A_OLD,
            A_NEW,
            feature="tabular.filters",
            pairs=0,
            tasks=0,
            reason="no pair scored in both cells",
        ),
        *_pair(
            "feature_comparisons",
            B_OLD,
            B_NEW,
            feature="tabular.filters",
            pairs=6,
            tasks=6,
            mean_difference=-1.0,
            ci_low=-1.0,
            ci_high=-1.0,
            p_value=2 / 2**6,
            p_adjusted=2 / 2**6,
            verdict="worse",
        ),
    ]
    return ReportData(
        db_path=Path("w.duckdb"),
        cells={key: _cell(key) for key in sorted(VERSIONS)},
        # one run per cell, so the page's other sections have something to show
        tasks={"task_0001": _row("tasks", task_id="task_0001", task_name="t", language="fr")},
        runs=[
            _row(
                "runs",
                run_id=f"{key}|task_0001|0",
                cell_key=key,
                task_id="task_0001",
                repeat_index=0,
                status="ok",
                answer="an answer",
                tool_call_count=0,
                total_tokens=0,
                latency_ms=10.0,
                input_tokens=0,
                output_tokens=0,
            )
            for key in sorted(VERSIONS)
        ],
        metrics={},
        verdicts={},
        tool_calls={},
        failure_modes={},
        summaries={},
        failure_counts=[],
        comparisons=[],
        # one estimate: the statistics stage ran
        estimates={
            (A_OLD, "minimal", "accuracy"): _row(
                "metric_estimates", mean=0.5, n=10, runs=10, coverage=1.0
            )
        },
        tests=tests,
        tables=frozenset(),
        features=FEATURES,
        feature_tests=feature_tests,
    )


def test_each_feature_has_one_row_per_version_pair() -> None:
    rows = feature_comparisons(_data())
    summary = [(f.feature, f.model, f.version_a, f.version_b, f.exercised, f.tasks) for f in rows]
    assert summary == [
        ("metrics.null_values", "model-a · mcp", "0.2.19", "0.2.26", False, 0),
        ("metrics.null_values", "model-b · mcp", "0.2.19", "0.2.26", False, 0),
        ("search.and_semantics", "model-a · mcp", "0.2.19", "0.2.26", True, 3),
        ("search.and_semantics", "model-b · mcp", "0.2.19", "0.2.26", False, 0),
        ("tabular.filters", "model-a · mcp", "0.2.19", "0.2.26", False, 0),
        ("tabular.filters", "model-b · mcp", "0.2.19", "0.2.26", True, 6),
    ]
    search, filters = rows[2], rows[5]
    # A is the older version: the rows read 0.2.19 -> 0.2.26, never the mirrored order
    assert (search.cell_a, search.cell_b) == (A_OLD, A_NEW)
    assert search.difference == pytest.approx(2 / 3)
    assert (search.low, search.high) == pytest.approx((-0.7676, 2.1009), abs=1e-4)
    assert (search.p_adjusted, search.verdict, search.feature_tasks) == (
        0.5,
        "no detectable difference",
        3,
    )
    assert (filters.difference, filters.low, filters.high) == (-1.0, -1.0, -1.0)
    assert (filters.p_adjusted, filters.verdict) == (0.03125, "worse")
    # no row, or a row without a paired task: the note, never figures
    for f in (rows[0], rows[1], rows[3], rows[4]):
        assert (f.difference, f.verdict, f.note) == (None, None, NOT_EXERCISED)


def test_the_markdown_shows_the_comparisons_and_the_not_exercised_features() -> None:
    markdown = render_markdown(build_view(_data()))
    section = markdown.split("## By feature (accuracy, minimal tier)", 1)[1].split("\n## ", 1)[0]
    assert (
        "| search.and_semantics | 3 | model-a · mcp | 0.2.19 → 0.2.26 | +0.67 | [-0.77, +2.10] "
        "| 0.500 | no detectable difference | 3 |  |"
    ) in section
    assert (
        "| tabular.filters | 6 | model-b · mcp | 0.2.19 → 0.2.26 | -1.00 | [-1.00, -1.00] "
        "| 0.031 | worse | 6 |  |"
    ) in section
    # the significant difference first
    assert section.index("| tabular.filters | 6 | model-b") < section.index(
        "| search.and_semantics | 3 | model-a"
    )
    # the two pairs without a paired task are counted, not listed (the HTML page lists them)
    assert "| search.and_semantics | 3 | model-b" not in section
    assert "| tabular.filters | 6 | model-a" not in section
    assert (
        "Not listed (each on the HTML page): 0 feature × version pair(s) with no difference on "
        "their paired tasks, 2 in which no task of the feature is scored in both cells"
    ) in section
    # a feature no pair exercises is one sentence, not a row per pair
    assert "| metrics.null_values |" not in section
    assert (
        "No difference expected / not exercised by any version pair (no task of the feature "
        "is scored in both cells): metrics.null_values."
    ) in section


def test_without_statistics_the_section_says_so() -> None:
    data = _data()
    data.estimates.clear()
    view = build_view(data)
    assert view.features == []
    assert "Absent: needs the statistics tables" in render_markdown(view)
    assert "No by-feature comparison" in render_site(view).pages["index.html"]


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
def test_chromium_renders_the_exercised_rows_counts_the_others_and_sorts(tmp_path: Path) -> None:
    site = render_site(build_view(_data()))
    site.write(tmp_path)
    page = (tmp_path / "index.html").as_uri()

    async def body(tab: Tab) -> Any:
        load = await tab.open(page)
        rows = await tab.evaluate(
            "Array.from(document.querySelectorAll('#feature-rows tbody tr')).map(r =>"
            " Array.from(r.cells).map(c => c.textContent.trim()))"
        )
        verdict_class = await tab.evaluate(
            'document.querySelector(\'#feature-rows tr[data-feature="tabular.filters"]'
            " td:nth-child(8)').className"
        )
        counted = await tab.evaluate(
            "document.getElementById('features-unexercised').textContent.trim()"
        )
        # A click on the Δ heading sorts by Δ (numbers as numbers), a second click reverses.
        order = await tab.evaluate(
            "(() => { const th = document.querySelectorAll('#feature-rows thead th')[4];"
            " const read = () => Array.from(document.querySelectorAll('#feature-rows tbody tr'))"
            ".map(r => r.dataset.feature); th.click(); const up = read(); th.click();"
            " return [up, read(), th.getAttribute('aria-sort')]; })()"
        )
        shown = await tab.evaluate(
            "(() => { const s = document.querySelector('input[data-filter-table=feature-rows]"
            "[data-col=feature]'); s.value = 'tabular'; s.dispatchEvent(new Event('input'));"
            " return [document.getElementById('feature-rows-count').textContent,"
            " Array.from(document.querySelectorAll('#feature-rows tbody tr'))"
            ".filter(r => r.style.display !== 'none').map(r => r.dataset.feature)]; })()"
        )
        return load, rows, verdict_class, counted, order, shown

    with chromium() as url:
        load, rows, verdict_class, counted, order, shown = asyncio.run(with_tab(url, body))
    assert load.errors == [] and load.dialogs == []
    # Only the exercised pairs are listed; the 4 others of 6 are counted.
    assert len(rows) == 2
    assert rows[0] == [
        "search.and_semantics", "3", "model-a · mcp", "0.2.19 → 0.2.26", "+0.67",
        "[-0.77, +2.10]", "0.500", "no detectable difference", "3", "",
    ]  # fmt: skip
    assert rows[1][4:9] == ["-1.00", "[-1.00, -1.00]", "0.031", "worse", "6"]
    assert NOT_EXERCISED not in str(rows)
    assert counted.startswith("Not listed: 4 feature × version pair(s) of 6 in which no task")
    assert verdict_class == "bad"
    assert order == [
        ["tabular.filters", "search.and_semantics"],
        ["search.and_semantics", "tabular.filters"],
        "descending",
    ]
    assert shown == ["1 shown", ["tabular.filters"]]


def test_statistics_without_runs_render_the_page() -> None:
    # The statistics stage ran but no run is loaded (every run skipped, say): the language
    # section says there is nothing to split instead of failing on the missing first language.
    data = _data()
    data.runs.clear()
    page = render_site(build_view(data)).pages["index.html"]
    assert "Every task run is in no language: there is nothing to split." in page
