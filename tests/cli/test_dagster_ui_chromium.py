"""The Dagster UI after a small experiment, in a real headless Chromium (Debian's package).

One module-wide experiment: ``datagouv-eval experiment`` on the MCP-version cells and one task
(real process, its own instance, run store and warehouse; the baseline coder's four MCP cells
have every run skipped by the policy). Then ``datagouv-eval dagster ui`` (webserver, daemon and
the report server it starts) on free ports, and Chromium over the DevTools protocol (the
report tests' helper). The UI shows the ranking table and a report link that opens over HTTP,
the skipped cells are not shown as successes, and the command's run is in the Overview
timeline. With ``DATAGOUV_EVAL_SCREENSHOTS=<dir>`` the screenshots are also copied there (the
ones in ``docs/images/`` were taken this way).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from datagouv_eval_pipeline.pipeline.report_site import REPORT_URL_ENV
from tests.cli.command_env import CLI, experiment_env
from tests.report.report_helpers import CHROMIUM, Tab, chromium, with_tab

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="Debian's chromium is not installed (apt-get install chromium; .ci/run installs it)",
)

EXPERIMENT = ["experiment", "--evaluation-type", "mcp_versions", "--tasks", "task_0002"]
SKIPPED = [
    "offline~baseline-coder__mcp@0.2.5__data_gouv_context",
    "offline~baseline-coder__mcp@0.2.19__data_gouv_context",
    "offline~baseline-coder__mcp@0.2.26__data_gouv_context",
    "offline~baseline-coder__mcp@0.2.26+skills@0.0.1__data_gouv_context",
]
"""The cells whose runs the policy skips (the baseline coder is kept off MCP)."""


@dataclass
class Ui:
    """The running UI command.

    Attributes:
        url: The webserver's base URL.
        report_url: The report server's base URL.
        env: The environment the experiment and the UI ran with.
        shots: Where this run's screenshots go.
    """

    url: str
    report_url: str
    env: dict[str, str]
    shots: Path


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _graphql(url: str, query: str) -> dict[str, Any]:
    request = urllib.request.Request(
        url + "graphql",
        data=json.dumps({"query": query}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        body: dict[str, Any] = json.load(answer)
    assert "errors" not in body, body
    data: dict[str, Any] = body["data"]
    return data


def _wait_for_location(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    query = (
        "{ workspaceOrError { ... on Workspace { locationEntries { name loadStatus "
        "locationOrLoadError { __typename } } } } }"
    )
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        assert process.poll() is None, log.read_text(encoding="utf-8", errors="replace")[-3000:]
        try:
            entries = _graphql(url, query)["workspaceOrError"]["locationEntries"]
        except OSError:
            entries = []
        if entries and all(e["loadStatus"] == "LOADED" for e in entries):
            kinds = [e["locationOrLoadError"]["__typename"] for e in entries]
            assert kinds == ["RepositoryLocation"], kinds
            return
        time.sleep(2)
    raise AssertionError("the code location did not load in 600 s")


@pytest.fixture(scope="module")
def ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ui]:
    root = tmp_path_factory.mktemp("dagster_ui")
    port, report_port = _free_port(), _free_port()
    report_url = f"http://127.0.0.1:{report_port}/"
    # The links are written at materialization time: to where this UI will serve the report.
    env = {**experiment_env(root), REPORT_URL_ENV: report_url}
    done = subprocess.run(
        [CLI, *EXPERIMENT], env=env, capture_output=True, text=True, timeout=1800, check=False
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    log = root / "ui.log"
    with log.open("wb") as stream:
        process = subprocess.Popen(
            [CLI, "dagster", "ui", "--port", str(port), "--report-port", str(report_port)],
            env=env,
            stdout=stream,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # the UI's whole group is stopped at the end
        )
    url = f"http://127.0.0.1:{port}/"
    try:
        _wait_for_location(url, process, log)
        shots = root / "screenshots"
        shots.mkdir()
        yield Ui(url, report_url, env, shots)
    finally:
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        destination = os.environ.get("DATAGOUV_EVAL_SCREENSHOTS")
        if destination and (root / "screenshots").is_dir():
            for shot in (root / "screenshots").iterdir():
                shutil.copy(shot, Path(destination) / shot.name)


@pytest.fixture(scope="module")
def browser() -> Iterator[str]:
    with chromium() as url:
        yield url


async def _wait_for_text(tab: Tab, *texts: str, timeout: float = 120) -> str:
    """The page's text once it contains every one of ``texts`` (the UI renders late)."""
    deadline = time.monotonic() + timeout
    body = ""
    while time.monotonic() < deadline:
        body = str(await tab.evaluate("document.body ? document.body.innerText : ''"))
        if all(text in body for text in texts):
            return body
        await asyncio.sleep(1)
    missing = [text for text in texts if text not in body]
    raise AssertionError(f"not on the page after {timeout} s: {missing}\n{body[:3000]}")


async def _shot(tab: Tab, path: Path) -> None:
    # The viewport only: a full-page capture of the UI's scroll containers is mostly blank.
    await tab.call(
        "Emulation.setDeviceMetricsOverride",
        width=1400,
        height=1000,
        deviceScaleFactor=1,
        mobile=False,
    )
    await tab.screenshot(path)


def _run(browser: str, body: Any) -> Any:
    return asyncio.run(with_tab(browser, body))


_ROW = """(() => {
  const row = Array.from(document.querySelectorAll('tr'))
    .find(r => r.innerText.trim().split(/\\s/)[0] === %s);
  if (!row) return null;
  const table = row.querySelector('table');
  return {
    links: Array.from(row.querySelectorAll('a[href]')).map(a => a.href),
    headers: table ? Array.from(table.querySelectorAll('th')).map(h => h.innerText.trim()) : [],
    rows: table ? Array.from(table.querySelectorAll('tr')).filter(r => r.querySelector('td'))
      .map(r => r.innerText) : [],
    text: row.innerText,
  };
})()"""
"""A metadata row of the asset page: its links, and the table it shows inline, if any."""

_SCROLL_TO = """Array.from(document.querySelectorAll('tr'))
  .find(r => r.innerText.trim().split(/\\s/)[0] === %s).scrollIntoView()"""


async def _row(tab: Tab, key: str) -> dict[str, Any]:
    for _ in range(120):
        found = await tab.evaluate(_ROW % json.dumps(key))
        if found is not None:
            return dict(found)
        await asyncio.sleep(1)
    raise AssertionError(f"no metadata row {key}")


def test_the_report_asset_shows_the_ranking_and_a_report_link_that_opens(
    ui: Ui, browser: str
) -> None:
    async def body(tab: Tab) -> Any:
        await tab.open(ui.url + "assets/experiment_report")
        await _wait_for_text(tab, "Metadata", "report_url", "ranking", timeout=180)
        link, ranking = await _row(tab, "report_url"), await _row(tab, "ranking")
        await tab.evaluate(_SCROLL_TO % json.dumps("report_url"))
        await _shot(tab, ui.shots / "dagster-report-asset.png")
        # The link opens the report over HTTP, in the same browser.
        load = await tab.open(link["links"][0])
        title = await tab.evaluate("(document.querySelector('h1') || {}).textContent")
        return link, ranking, load, title

    link, ranking, load, title = _run(browser, body)
    assert set(link["links"]) == {ui.report_url + "index.html"}  # the URL and its open icon
    assert ranking["headers"][:4] == [
        "accuracy_rank",
        "model_name",
        "capability_set",
        "mcp_version",
    ]
    assert "accuracy" in ranking["headers"]
    assert len(ranking["rows"]) == 9  # the nine MCP-version cells, tier minimal
    assert any("baseline-thorough" in row for row in ranking["rows"])
    assert load.errors == [] and title == "Experiment report"
    with urllib.request.urlopen(ui.report_url + "browser/index.html", timeout=30) as page:
        assert page.status == 200


def test_the_dbt_ranking_and_the_questions_show_as_tables_with_row_counts(
    ui: Ui, browser: str
) -> None:
    async def body(tab: Tab) -> Any:
        await tab.open(ui.url + "assets/metrics/headline_ranking")
        text = await _wait_for_text(tab, "ranking_shown", "Row count", timeout=180)
        ranking = await _row(tab, "ranking")
        await tab.open(ui.url + "assets/eval/questions")
        await _wait_for_text(tab, "questions_shown", timeout=180)
        questions = await _row(tab, "questions")
        await _shot(tab, ui.shots / "dagster-questions.png")
        await tab.open(ui.url + "assets/metrics/question_answers")
        await _wait_for_text(tab, "answers_shown", timeout=180)
        answers = await _row(tab, "answers")
        return ranking, text, questions, answers

    ranking, text, questions, answers = _run(browser, body)
    assert re.search(r"Row count\s+18\b", text)  # dagster/row_count: 9 cells × 2 tiers
    assert len(ranking["rows"]) == 9 and "accuracy_ci_low" in ranking["headers"]
    assert "mcp_versions" in questions["text"]
    assert "Does a new version of the MCP server improve" in questions["text"]
    assert {"evaluation_type", "value_a", "value_b", "verdict"} <= set(answers["headers"])
    assert answers["rows"]


def test_cells_without_a_result_are_not_shown_as_successes(ui: Ui, browser: str) -> None:
    query = (
        '{ assetNodes(assetKeys: [{path: ["agent_runs"]}]) { assetChecksOrError { '
        "... on AssetChecks { checks { name partitionStatuses { "
        "... on AssetCheckDefaultPartitionStatuses { succeededPartitions failedPartitions } "
        "} } } } } }"
    )
    checks = _graphql(ui.url, query)["assetNodes"][0]["assetChecksOrError"]["checks"]
    statuses = next(c for c in checks if c["name"] == "cell_ok")["partitionStatuses"]
    idle = _idle_cells(ui)
    assert len(idle) == 5  # the coder's three MCP cells, oneshot and thorough on MCP 0.2.5
    assert set(idle) <= set(statuses["failedPartitions"])
    assert not set(idle) & set(statuses["succeededPartitions"])
    assert len(statuses["succeededPartitions"]) == 4

    async def body(tab: Tab) -> str:
        await tab.open(ui.url + "assets/agent_runs?view=checks")
        text = await _wait_for_text(tab, "cell_ok", timeout=180)
        await _shot(tab, ui.shots / "dagster-cell-checks.png")
        return text

    _run(browser, body)


def test_the_command_line_run_is_in_the_overview_timeline(ui: Ui, browser: str) -> None:
    query = (
        '{ runsOrError(filter: {pipelineName: "experiment"}) { ... on Runs { results { '
        "id repositoryOrigin { repositoryLocationName repositoryName } } } } }"
    )
    runs = _graphql(ui.url, query)["runsOrError"]["results"]
    assert len(runs) == 1
    assert runs[0]["repositoryOrigin"] == {
        "repositoryLocationName": "datagouv_eval_pipeline",
        "repositoryName": "__repository__",
    }

    async def body(tab: Tab) -> str:
        await tab.open(ui.url + "overview/activity/timeline")
        text = await _wait_for_text(tab, "experiment", timeout=180)
        await _shot(tab, ui.shots / "dagster-timeline.png")
        return text

    assert "experiment" in _run(browser, body)


def _idle_cells(ui: Ui) -> list[str]:
    import duckdb

    with duckdb.connect(ui.env["DATAGOUV_EVAL_DUCKDB"], read_only=True) as conn:
        rows = conn.execute(
            "SELECT cell_key FROM eval.runs GROUP BY cell_key "
            "HAVING count(*) FILTER (WHERE status = 'ok') = 0 ORDER BY cell_key"
        ).fetchall()
    return [str(row[0]) for row in rows]
