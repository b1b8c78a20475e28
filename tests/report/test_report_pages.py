"""The written pages: every section present, every trace field shown, arbitrary text escaped."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner
from markupsafe import escape

from datagouv_eval_pipeline.cli import main
from datagouv_eval_pipeline.pipeline.report import BuiltReport
from datagouv_eval_pipeline.pipeline.report.render import slug
from tests.report.report_helpers import (
    HOSTILE,
    LONG_RESULT,
    LONG_SHOWN,
    QUARANTINED,
    FixtureWarehouse,
)
from tests.warehouse.warehouse_factories import CODE, HAND, MCP_26, cells, specs


def _page(built: BuiltReport, relative: str) -> str:
    return (built.out_dir / relative).read_text(encoding="utf-8")


def test_the_report_page_is_self_contained_with_every_section(built_report: BuiltReport) -> None:
    page = built_report.page.read_text(encoding="utf-8")
    for anchor in ("pivot", "power", "comparisons", "versions", "cost", "failures", "problems"):
        assert f'id="{anchor}"' in page
    # plots inline, nothing fetched from elsewhere
    assert page.count('src="data:image/png;base64,') == 3
    assert not re.search(r'(src|href)="(https?:)?//', page)
    assert '<strong>0.75</strong> <span class="small">[0.00, 1.00]</span>' in page
    assert "n=2/4" in page
    assert "no detectable difference" in page and "wilcoxon_signed_rank" in page
    # each side's coverage, and the gap of the hand cells (B has no judge) flagged
    assert "<th>coverage A / B</th>" in page and "runs 100% / 0%" in page
    assert "coverage differs by more than 5%: runs scored 100% in a, 0% in b" in page
    assert "no statistics tables yet" not in page.replace("\n", " ")
    assert str(escape(QUARANTINED[1])) in page
    assert "Absent: the warehouse holds no judge calibration results" in page
    # every link into the browser points at a written page
    for target in re.findall(r'href="(browser/[^"?#]+)', page):
        assert (built_report.out_dir / target).is_file(), target


def test_the_markdown_has_the_pivot_and_what_was_not_scored(built_report: BuiltReport) -> None:
    text = built_report.markdown
    assert "| model-a | none | · | · | **0.75** [0.00, 1.00] n=2/4 |" in text
    assert "| +0.00 | 2 | [+0.00, +0.00] | 1.000 | — | no detectable difference |" in text
    assert "| quarantined | task_0009 | 1 |" in text
    assert (
        "| runs 100% / 0% | coverage differs by more than 5%: runs scored 100% in a, 0% in b |"
        in (text)
    )
    assert "## Power (accuracy, minimal tier)" in text
    assert "Minimum detectable paired difference in accuracy at 80 % power" in text or (
        "No accuracy comparison has a minimum detectable difference" in text
    )
    assert (built_report.out_dir / "experiment_report.md").read_text() == text


def test_a_run_page_shows_the_whole_trace(built_report: BuiltReport) -> None:
    run_id = f"{CODE}|task_0002|0"
    page = _page(built_report, f"browser/run/{slug(run_id)}.html")
    spec = specs()["task_0002"]
    assert str(escape(spec.prompt)) in page
    assert str(escape(cells()[CODE].system_prompt_text)) in page
    assert '<td class="num">1200</td><td class="num">80</td><td class="num">640</td>' in page
    assert "Tool calls (" in page and "execute_python" in page
    assert "criterion" in page and "deterministic@" in page  # verdicts with their judge
    assert "action_f1" in page and "cost unpriced" in page
    # The deterministic judge asked no model: no question, no HTTP request.
    assert "judge 0 questions in 0 HTTP requests" in page


def test_a_run_page_shows_the_model_turns_with_their_calls_and_whole_results(
    built_report: BuiltReport,
) -> None:
    page = _page(built_report, f"browser/run/{slug(f'{CODE}|task_0002|0')}.html")
    # Three turns in order, each followed by the calls it made.
    turn_1, turn_2, turn_3 = (page.index(f"<h4>Turn {i}") for i in (1, 2, 3))
    assert turn_1 < page.index("I look for the catalogue first.") < turn_2 < turn_3
    calls = [page.index(f"<code>{i}</code> <strong>execute_python") for i in range(3)]
    assert turn_1 < calls[0] < turn_2 < calls[1] < calls[2] < turn_3
    assert "Turn 3 · final answer" in page
    # Two requests for three turns: tokens are not paired with turns (they stay in the table).
    assert "tokens in /" not in page
    # The 82,013-character result is on the page whole: what the model saw, a marker, the rest.
    shown = str(escape(LONG_RESULT[:LONG_SHOWN]))
    hidden = str(escape(LONG_RESULT[LONG_SHOWN:]))
    assert f'<pre class="result" data-part="shown">{shown}</pre>' in page
    assert f'<pre class="result" data-part="hidden">{hidden}</pre>' in page
    assert f"The model was shown the {LONG_SHOWN} characters above" in page
    assert f"({len(LONG_RESULT)} characters)" in page


def test_arbitrary_text_is_escaped_everywhere(built_report: BuiltReport) -> None:
    run_page = _page(built_report, f"browser/run/{slug(f'{CODE}|task_0002|0')}.html")
    task_page = _page(built_report, "browser/task/task_0002.html")
    for page in (run_page, task_page):
        assert HOSTILE not in page
        assert "<img src=x" not in page
        assert "&lt;script&gt;alert(" in page
    # answer, reasoning and tool result: three escaped copies on the run page
    assert run_page.count(str(escape(HOSTILE))) >= 3


def test_the_compare_page_indexes_every_run_by_cell(built_report: BuiltReport) -> None:
    page = _page(built_report, "browser/compare/index.html")
    payload = re.search(
        r'<script type="application/json" id="compare-data">(.*?)</script>', page, re.S
    )
    assert payload is not None
    data = json.loads(payload.group(1))
    assert data["runs"][HAND]["task_0001#0"] == {
        "slug": slug(f"{HAND}|task_0001|0"),
        "accuracy": 1.0,
    }
    assert set(data["runs"][MCP_26]) == {"task_0002#0", "task_0002#1", "task_0003#0", "task_0011#0"}
    for found in data["runs"].values():
        for entry in found.values():
            assert (built_report.out_dir / "browser" / "run" / f"{entry['slug']}.html").is_file()


def test_report_build_cli_writes_the_pages(
    fixture_warehouse: FixtureWarehouse, tmp_path: Path
) -> None:
    out = tmp_path / "site"
    result = CliRunner().invoke(
        main,
        [
            "report",
            "build",
            "--db",
            str(fixture_warehouse.db),
            "--run-store",
            str(fixture_warehouse.store_root),
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert f"report:          {out / 'index.html'}" in result.output
    assert (out / "browser" / "index.html").is_file()
    assert (out / "figures" / "cost_accuracy.png").read_bytes().startswith(b"\x89PNG")


def test_report_build_cli_says_what_to_run_without_a_warehouse(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["report", "build", "--db", str(tmp_path / "none.duckdb")])
    assert result.exit_code == 1
    assert "no warehouse yet; run `./dev run`" in result.output
    assert "Traceback" not in result.output
