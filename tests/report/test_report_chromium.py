"""The report page and the results browser in a real headless Chromium (Debian's package).

Pages are served by ``datagouv-eval report serve`` on 127.0.0.1 and also opened as files: each
must render, with no console error, no uncaught exception and no dialog (the fixture plants an
``alert`` in an answer and a tool result). Skipped only where Chromium is not installed.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from datagouv_eval_pipeline.pipeline.report import BuiltReport
from datagouv_eval_pipeline.pipeline.report.render import slug
from tests.report.report_helpers import (
    CHROMIUM,
    HOSTILE,
    LONG_RESULT,
    Tab,
    chromium,
    with_tab,
)
from tests.warehouse.warehouse_factories import CODE, HAND, MCP_19, MCP_26

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="Debian's chromium is not installed (apt-get install chromium; .ci/run installs it)",
)


@pytest.fixture(scope="module")
def served(built_report: BuiltReport) -> Iterator[str]:
    """``datagouv-eval report serve`` on a free port; yields its base URL."""
    process = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("datagouv-eval")),
            "report",
            "serve",
            "--no-build",
            "--out",
            str(built_report.out_dir),
            "--db",
            str(built_report.view.data.db_path),
            "--port",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert " on http://127.0.0.1:" in line, line
        yield line.rsplit(" on ", 1)[1].strip()
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def browser() -> Iterator[str]:
    with chromium() as url:
        yield url


def _run(browser: str, body: Any) -> Any:
    return asyncio.run(with_tab(browser, body))


def test_the_report_page_renders_without_errors(
    served: str, browser: str, built_report: BuiltReport, tmp_path: Path
) -> None:
    async def body(tab: Tab) -> dict[str, Any]:
        load = await tab.open(served + "index.html")
        facts = await tab.evaluate(
            "({title: document.querySelector('h1').textContent,"
            " images: Array.from(document.images).map(i => i.complete && i.naturalWidth > 0),"
            " pivotRows: document.querySelectorAll('table.pivot tbody tr').length,"
            " comparisons: document.querySelectorAll('#cmp tbody tr').length,"
            " shownComparisons: Array.from(document.querySelectorAll('#cmp tbody tr'))"
            ".filter(r => r.style.display !== 'none').map(r => r.dataset.metric),"
            " height: document.body.scrollHeight})"
        )
        shot = await tab.screenshot(tmp_path / "report.png")
        return {"load": load, "facts": facts, "shot": shot}

    result = _run(browser, body)
    assert result["load"].errors == [] and result["load"].dialogs == []
    facts = result["facts"]
    assert facts["title"] == "Experiment report"
    assert facts["images"] == [True, True, True]
    assert facts["pivotRows"] == 2 * len(built_report.view.pivots[0].rows)
    assert facts["comparisons"] == len(built_report.view.comparisons)
    # by default only accuracy, on pairs with tasks scored in both cells (MCP 0.2.19 / 0.2.26)
    assert facts["shownComparisons"] == ["accuracy"]
    assert result["shot"].read_bytes().startswith(b"\x89PNG")


def test_the_report_page_works_opened_as_a_file(browser: str, built_report: BuiltReport) -> None:
    async def body(tab: Tab) -> Any:
        load = await tab.open(built_report.page.as_uri())
        images = await tab.evaluate("Array.from(document.images).every(i => i.naturalWidth > 0)")
        return load, images

    load, images = _run(browser, body)
    assert load.errors == [] and images is True


def test_the_browser_filters_cells(served: str, browser: str) -> None:
    async def body(tab: Tab) -> Any:
        load = await tab.open(served + "browser/index.html")
        before = await tab.evaluate("document.getElementById('cells-count').textContent")
        shown = await tab.evaluate(
            "(() => { const s = document.querySelector('select[data-filter-table=cells]"
            "[data-col=model]'); s.value = 'model-a'; s.dispatchEvent(new Event('input'));"
            " return [document.getElementById('cells-count').textContent,"
            " Array.from(document.querySelectorAll('#cells tbody tr'))"
            ".filter(r => r.style.display !== 'none').map(r => r.dataset.key)]; })()"
        )
        return load, before, shown

    load, before, shown = _run(browser, body)
    assert load.errors == []
    assert before == "5 shown"  # no filter chosen yet
    assert shown == ["1 shown", [HAND]]


def test_a_hostile_trace_shows_as_text(served: str, browser: str) -> None:
    page = f"browser/run/{slug(f'{CODE}|task_0002|0')}.html"

    async def body(tab: Tab) -> Any:
        load = await tab.open(served + page)
        facts = await tab.evaluate(
            "({scripts: document.scripts.length,"
            " injected: document.querySelectorAll('main img, main script').length,"
            " texts: Array.from(document.querySelectorAll('pre')).map(p => p.textContent)})"
        )
        return load, facts

    load, facts = _run(browser, body)
    assert load.errors == [] and load.dialogs == []
    assert facts["scripts"] == 1  # the page's own filter script only
    assert facts["injected"] == 0
    assert HOSTILE in facts["texts"]  # the answer, verbatim
    assert f"first I search {HOSTILE}" in facts["texts"]  # the reasoning part


def test_a_long_tool_result_is_shown_whole(served: str, browser: str) -> None:
    page = f"browser/run/{slug(f'{CODE}|task_0002|0')}.html"

    async def body(tab: Tab) -> Any:
        load = await tab.open(served + page)
        facts = await tab.evaluate(
            "({parts: Array.from(document.querySelectorAll('pre.result[data-part]'))"
            ".map(p => p.textContent),"
            " turns: Array.from(document.querySelectorAll('.turn h4')).map(h => h.textContent),"
            " scrollable: Array.from(document.querySelectorAll('pre.result[data-part]'))"
            ".every(p => getComputedStyle(p).overflowY === 'auto')})"
        )
        return load, facts

    load, facts = _run(browser, body)
    assert load.errors == []
    # What the model saw and what it did not, together, are the tool's whole result.
    assert "".join(facts["parts"]) == LONG_RESULT
    assert facts["parts"][1].endswith("END-OF-RESULT")
    assert facts["scrollable"]  # long results scroll inside their box, nothing is clipped
    assert [t.split(" ·")[0].strip() for t in facts["turns"]] == ["Turn 1", "Turn 2", "Turn 3"]


def test_side_by_side_loads_both_runs(served: str, browser: str) -> None:
    # The deep link as written by hand: the repeat is the fragment, not part of the parameter.
    query = f"?a={quote(MCP_19)}&b={quote(MCP_26)}&task=task_0002#1"

    async def body(tab: Tab) -> Any:
        load = await tab.open(served + "browser/compare/index.html" + query)
        for _ in range(50):
            facts = await tab.evaluate(
                "['a', 'b'].map(s => { const f = document.getElementById('frame-' + s);"
                " const d = f.contentDocument; return d && d.readyState === 'complete'"
                " && d.querySelector('h1') ? d.querySelector('h1').textContent : null; })"
            )
            if all(facts):
                break
            await asyncio.sleep(0.1)
        rows = await tab.evaluate("document.querySelectorAll('#pairs tbody tr').length")
        return load, facts, rows

    load, facts, rows = _run(browser, body)
    assert load.errors == []
    assert rows == 4  # task_0002 #0 and #1, task_0003 #0 (only in 0.2.26), task_0011 #0
    assert [h.split(" · ")[0] for h in facts] == ["task_0002", "task_0002"]
    assert "mcp 0.2.19" in facts[0] and "mcp 0.2.26" in facts[1]
    assert all("repeat 1" in h for h in facts)


def test_the_compare_page_sums_up_and_shows_the_changed_runs_only(
    served: str, browser: str
) -> None:
    # CODE against MCP 0.2.26: task_0002#0 is scored in both (0 → 1); task_0002#1 and
    # task_0011#0 only in B; task_0003#0 in neither (MCP 0.2.26's run errored).
    query = f"?a={quote(CODE)}&b={quote(MCP_26)}"
    read = (
        "({rows: Array.from(document.querySelectorAll('#pairs tbody tr')).map(r => r.dataset.run),"
        " summary: Array.from(document.getElementById('pairs-summary').cells)"
        ".map(c => c.textContent), url: window.location.search + window.location.hash})"
    )

    async def body(tab: Tab) -> Any:
        load = await tab.open(served + "browser/compare/index.html" + query)
        every = await tab.evaluate(read)
        await tab.evaluate(
            "(() => { const c = document.getElementById('changed-only'); c.checked = true;"
            " c.dispatchEvent(new Event('change')); })()"
        )
        return load, every, await tab.evaluate(read)

    load, every, changed = _run(browser, body)
    assert load.errors == []
    assert every["rows"] == ["task_0002#0", "task_0002#1", "task_0003#0", "task_0011#0"]
    assert every["summary"] == [
        "1 paired run(s)", "0.00", "1.00", "+1.00", "1 changed: 1 better in B, 0 worse",
    ]  # fmt: skip
    # Nothing scored on either side is no change; scored on one side only is.
    assert changed["rows"] == ["task_0002#0", "task_0002#1", "task_0011#0"]
    assert changed["summary"] == every["summary"]  # the summary is of every paired run
    # The address follows what is shown, so it can be shared.
    assert changed["url"].endswith("&changed=1&task=task_0002#0")


def test_the_devtools_helper_reports_console_errors(browser: str, tmp_path: Path) -> None:
    broken = tmp_path / "broken.html"
    broken.write_text(
        "<!doctype html><title>x</title><script>console.error('planted');"
        "undefinedFunction();</script>",
        encoding="utf-8",
    )

    async def body(tab: Tab) -> Any:
        return await tab.open(broken.as_uri())

    load = _run(browser, body)
    assert "planted" in load.errors[0]
    assert "ReferenceError: undefinedFunction is not defined" in load.errors[1]
