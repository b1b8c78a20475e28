"""What the report tests share: a fixture warehouse built by the real loaders and dbt, its run
store, and a headless Chromium driven over the DevTools protocol."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import websockets

from datagouv_eval_pipeline.core.traces import ModelTurn, RequestUsage
from datagouv_eval_pipeline.pipeline.experiment.documents import AgentRunsDocument
from datagouv_eval_pipeline.pipeline.experiment.quarantine import DOCUMENT_KEY
from datagouv_eval_pipeline.pipeline.experiment.quarantine import STAGE as VALIDATION_STAGE
from datagouv_eval_pipeline.pipeline.experiment.stages import AGENT_RUNS, JUDGE_SCORES
from datagouv_eval_pipeline.pipeline.experiment.store import RunStore
from datagouv_eval_pipeline.pipeline.warehouse import CellLoad, load_experiment
from datagouv_eval_pipeline.pipeline.warehouse.error_bars import compute_statistics
from datagouv_eval_pipeline.pipeline.warehouse.gate import evaluate_gate, write_gate_results
from tests.dbt.dbt_helpers import DUCKDB_ENV, PROJECT
from tests.warehouse.warehouse_factories import (
    CODE,
    MCP_26,
    cell_load,
    cells,
    hand_cell,
    hand_cell_b,
    realistic_experiment,
    specs,
    trace_for,
)

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)> & "quotes"'
"""Text planted in an answer and a tool result: must show as text, never run."""

LONG_RESULT = "".join(f"row {i:05d};" + "x" * 30 + "\n" for i in range(2000)) + "END-OF-RESULT"
"""An 82,013-character tool result, far above what a model is shown."""

LONG_SHOWN = 50_000
"""How much of it the fixture's model was shown."""

QUARANTINED = ("task_0009", "dataset 'abc' is gone from the catalog")
"""The task the fixture's pre-flight quarantined, and why."""

FAILED_STAGE = (MCP_26, JUDGE_SCORES, "judge endpoint refused the connection")
"""The failed stage attempt recorded in the fixture's run store."""


def fixture_loads() -> list[CellLoad]:
    """The realistic experiment (one hostile answer), and both hand cells."""
    loads = realistic_experiment()
    cell = cells()[CODE]
    hostile = trace_for(
        cell,
        "task_0002_code.json",
        answer=HOSTILE,
        requests=[
            RequestUsage(input_tokens=1200, output_tokens=80, duration_ms=640.0),
            RequestUsage(input_tokens=2400, output_tokens=150, duration_ms=910.0),
        ],
        reasoning=[f"first I search {HOSTILE}"],
    )
    hostile.tool_calls[0] = hostile.tool_calls[0].model_copy(update={"result": HOSTILE})
    # A result longer than the model was shown: the trace keeps it whole, the page shows it all.
    hostile.tool_calls[1] = hostile.tool_calls[1].model_copy(
        update={"result": LONG_RESULT, "shown_chars": LONG_SHOWN}
    )
    hostile = hostile.model_copy(
        update={
            "turns": [
                ModelTurn(text="I look for the catalogue first.", tool_call_ids=["call_a"]),
                ModelTurn(tool_call_ids=["call_b", "call_c"]),
                ModelTurn(text="", final=True),
            ]
        }
    )
    loads[-1] = cell_load(cell, [hostile])
    return [*loads, hand_cell(), hand_cell_b()]


def _write_run_store(root: Path, loads: list[CellLoad]) -> None:
    store = RunStore(root)
    for load in loads:
        document = AgentRunsDocument.of(load.cell, [run.trace for run in load.runs])
        store.write(AGENT_RUNS, document.cell.key, document)
    cell_key, stage, reason = FAILED_STAGE
    store.record_failure(stage, cell_key, reason)
    task_id, why = QUARANTINED
    spec = specs()[task_id]
    check = {
        "fn": "dataset_exists",
        "object_type": "dataset",
        "object_id": "abc",
        "outcome": "failed",
        "reason": why,
    }
    report = {
        "urls": {},
        "source": "twin test",
        "now": datetime(2026, 11, 30, tzinfo=UTC).isoformat(),
        "baselines_dir": "baselines",
        "tasks": [
            {
                "task_id": task_id,
                "task_version": spec.version,
                "spec_hash": spec.spec_hash(),
                "status": "quarantined",
                "checks": [check],
            }
        ],
    }
    store.write(VALIDATION_STAGE, DOCUMENT_KEY, {"snapshot_id": "snap", "report": report})


@dataclass(frozen=True)
class FixtureWarehouse:
    """A warehouse with dbt marts, and the run store next to it."""

    db: Path
    store_root: Path


def build_fixture_warehouse(root: Path) -> FixtureWarehouse:
    """Load the fixture through the real loaders, build the dbt marts, write the run store."""
    db = root / "warehouse.duckdb"
    loads = fixture_loads()
    load_experiment(db, loads, tasks=specs().values())
    with duckdb.connect(str(db)) as conn:
        compute_statistics(conn)
    dbt_run(db, root)
    store_root = root / "run_store"
    _write_run_store(store_root, loads)
    return FixtureWarehouse(db, store_root)


def build_history_warehouse(root: Path) -> Path:
    """Two recorded experiments, gated as the pipeline gates them, with the dbt marts.

    e1: model-a and model-b answer 10 tasks right. e2: model-a answers all 10 wrong, model-b
    the same as before, and model-c runs for the first time.
    """
    from tests.warehouse.test_warehouse_statistics import GOOD, experiment, graded_cell

    db = root / "warehouse.duckdb"
    with duckdb.connect(str(db)) as conn:
        load_experiment(
            conn,
            [graded_cell("model-a", GOOD), graded_cell("model-b", GOOD)],
            experiment=experiment("e1", 0),
        )
        write_gate_results(conn, evaluate_gate(conn))
        load_experiment(
            conn,
            [
                graded_cell("model-a", [0.0] * 10),
                graded_cell("model-b", GOOD),
                graded_cell("model-c", GOOD),
            ],
            experiment=experiment("e2", 5),
        )
        write_gate_results(conn, evaluate_gate(conn))
        compute_statistics(conn)
    dbt_run(db, root)
    return db


def dbt_run(db: Path, root: Path) -> None:
    """Build the dbt marts into ``db`` (``dbt run``)."""
    # In a child process, as the pipeline's dbt assets run it: dbt-duckdb keeps its in-process
    # connection open, and DuckDB refuses a read-only one beside it.
    dbt = Path(sys.executable).with_name("dbt")
    completed = subprocess.run(
        [
            str(dbt),
            "run",
            "--project-dir",
            str(PROJECT),
            "--profiles-dir",
            str(PROJECT),
            "--target-path",
            str(root / "target"),
            "--log-path",
            str(root / "logs"),
            "--quiet",
        ],
        env={**os.environ, DUCKDB_ENV: str(db)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr


# ----------------------------------------------------------------------- headless Chromium

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
"""Debian's Chromium (``apt-get install chromium``), or None."""

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-port=0",
    "--window-size=1400,1800",
]


@dataclass
class PageLoad:
    """What one page did while it loaded.

    Attributes:
        errors: Console errors, uncaught exceptions and failed loads (with their text).
        dialogs: JavaScript dialogs opened (an injected ``alert`` would show here).
    """

    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)


class Tab:
    """One page target of the browser, driven over its DevTools websocket."""

    def __init__(self, socket: Any) -> None:
        self._socket = socket
        self._next = 0
        self.events: list[dict[str, Any]] = []

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one command and wait for its answer (events meanwhile are kept)."""
        self._next += 1
        ident = self._next
        await self._socket.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(await asyncio.wait_for(self._socket.recv(), 30))
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            self.events.append(message)
            if message.get("method") == "Page.javascriptDialogOpening":
                await self._socket.send(
                    json.dumps(
                        {
                            "id": 0,
                            "method": "Page.handleJavaScriptDialog",
                            "params": {"accept": True},
                        }
                    )
                )

    async def wait_event(self, method: str, timeout: float = 30) -> dict[str, Any]:
        """Wait for the next event ``method`` (or one already received since the last wait)."""
        for index, event in enumerate(self.events):
            if event.get("method") == method:
                return self.events.pop(index)
        while True:
            message: dict[str, Any] = json.loads(
                await asyncio.wait_for(self._socket.recv(), timeout)
            )
            if message.get("method") == method:
                return message
            self.events.append(message)

    async def open(self, url: str) -> PageLoad:
        """Navigate to ``url``, wait for the load event and a quiet moment, report problems."""
        self.events.clear()
        await self.call("Page.navigate", url=url)
        await self.wait_event("Page.loadEventFired")
        await self.call("Runtime.evaluate", expression="1", awaitPromise=True)
        await asyncio.sleep(0.2)
        await self.call("Runtime.evaluate", expression="1")
        load = PageLoad()
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in {"error", "assert"}:
                load.errors.append(" ".join(str(a.get("value")) for a in params.get("args", [])))
            elif method == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                thrown = details.get("exception", {}).get("description")
                load.errors.append(str(thrown or details.get("text")))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                load.errors.append(str(params["entry"].get("text")))
            elif method == "Page.javascriptDialogOpening":
                load.dialogs.append(str(params.get("message")))
        return load

    async def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page."""
        result = await self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def screenshot(self, path: Path) -> Path:
        """A full-page PNG screenshot."""
        shot = await self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path


@contextmanager
def chromium() -> Iterator[str]:
    """A headless Chromium with a fresh profile; yields its page target's websocket URL."""
    assert CHROMIUM is not None
    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    log = Path(profile) / "chromium.log"
    with log.open("w") as stream:
        process = subprocess.Popen(
            [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdout=stream,
            stderr=stream,
        )
    try:
        port = _devtools_port(process, Path(profile), log)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as answer:
            targets = json.load(answer)
        page = next(t for t in targets if t.get("type") == "page")
        yield str(page["webSocketDebuggerUrl"])
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(profile, ignore_errors=True)


def _devtools_port(process: subprocess.Popen[bytes], profile: Path, log: Path) -> int:
    # Chromium writes the port it chose to DevToolsActivePort in its profile directory.
    active = profile / "DevToolsActivePort"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"chromium exited ({process.returncode}): {log.read_text()[-2000:]}")
        lines = active.read_text().splitlines() if active.exists() else []
        if lines and lines[0].strip().isdigit():
            return int(lines[0])
        time.sleep(0.1)
    raise RuntimeError(f"chromium gave no DevTools port in 30 s: {log.read_text()[-2000:]}")


async def with_tab(url: str, body: Any) -> Any:
    """Connect to the page target, enable the domains the checks read, run ``body(tab)``."""
    async with websockets.connect(url, max_size=None) as socket:
        tab = Tab(socket)
        for domain in ("Page", "Runtime", "Log"):
            await tab.call(f"{domain}.enable")
        return await body(tab)
