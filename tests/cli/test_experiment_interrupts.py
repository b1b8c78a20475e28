"""Ctrl-C and SIGTERM stop ``datagouv-eval experiment`` whatever stage it is in (real processes).

The real command runs in a subprocess on a small experiment (the MCP-version cells, one task)
with its own Dagster instance, run store and warehouse. The test follows the run in the
instance's event log and sends the signal to the command's whole process group, as a terminal's
Ctrl-C does (Dagster's log-mirroring helpers and dbt get it too), at a stage boundary or inside
a stage. Each time the command says "stopped" and exits 130, prints no traceback, and no stage
that started after the signal ran (the stage in progress may finish; the test sees the run's
progress a little late, so "the next stage" is the one that started after the signal); the runs
go on from where the last one stopped, and the last rerun completes.
"""

from __future__ import annotations

import http.server
import os
import shutil
import signal
import socketserver
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

from datagouv_eval_pipeline.cli.dagster_home import DEFAULT_HOME

CLI = str(Path(sys.executable).parent / "datagouv-eval")
SMALL = ["experiment", "--evaluation-type", "mcp_versions", "--tasks", "task_0003"]
STAGES = (
    "task_specs",
    "catalog_validation",
    "agent_runs",
    "action_mappings",
    "judge_scores",
    "warehouse",
    "dbt_metrics_assets",
    "experiment_report",
)
STARTED, SUCCEEDED = dg.DagsterEventType.STEP_START, dg.DagsterEventType.STEP_SUCCESS


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    home = tmp_path / "dagster_home"
    home.mkdir(exist_ok=True)
    shutil.copy(DEFAULT_HOME / "dagster.yaml", home / "dagster.yaml")
    return {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "DATAGOUV_EVAL_RUN_STORE": str(tmp_path / "run_store"),
        "DATAGOUV_EVAL_DUCKDB": str(tmp_path / "warehouse.duckdb"),
        **extra,
    }


class Run:
    """One ``experiment`` command, followed in its instance's event log."""

    def __init__(self, env: dict[str, str], log: Path, *args: str) -> None:
        self.log = log
        self.instance = dg.DagsterInstance.from_config(env["DAGSTER_HOME"])
        self.before = {r.dagster_run.run_id for r in self.instance.get_run_records()}
        self.sent = 0.0
        with log.open("wb") as stream:
            self.process = subprocess.Popen(
                [CLI, *SMALL, *args],
                env=env,
                stdout=stream,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, as a terminal's job
            )

    def run_id(self) -> str | None:
        records = self.instance.get_run_records(dg.RunsFilter(job_name="experiment"))
        new = [r.dagster_run.run_id for r in records if r.dagster_run.run_id not in self.before]
        return new[0] if new else None

    def steps(self, event: dg.DagsterEventType) -> list[str]:
        return list(self.step_times(event))

    def step_times(self, event: dg.DagsterEventType) -> dict[str, float]:
        """Step key → when ``event`` happened to it (wall clock)."""
        run_id = self.run_id()
        if run_id is None:
            return {}
        records = self.instance.get_records_for_run(run_id, of_type=event).records
        return {r.event_log_entry.step_key or "": r.event_log_entry.timestamp for r in records}

    def wait_for(self, step: str, event: dg.DagsterEventType) -> None:
        deadline = time.monotonic() + 900
        while step not in self.steps(event):
            assert self.process.poll() is None, self.output()
            assert time.monotonic() < deadline, f"{step} never reached {event}"
            time.sleep(0.2)

    def interrupt(self, signum: signal.Signals = signal.SIGINT) -> int:
        self.sent = time.time()
        os.killpg(self.process.pid, signum)
        return self.process.wait(timeout=120)

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def status(self) -> dg.DagsterRunStatus:
        run_id = self.run_id()
        assert run_id is not None
        run = self.instance.get_run_by_id(run_id)
        assert run is not None
        return run.status


# How long the command may take to see a signal (its main thread waits in 0.2 s slices).
_SEEN_WITHIN = 1.0


def _assert_stopped(run: Run, returncode: int, signum: signal.Signals) -> None:
    """The command said "stopped", exited 130, printed no traceback; no stage started after."""
    output = run.output()
    assert returncode == 130, output
    assert f"experiment stopped (interrupted by {signum.name})" in output, output
    assert "kept: " in output and "run it again to resume" in output, output
    assert "Traceback" not in output and "KeyboardInterrupt" not in output, output
    assert "FAILED" not in output, output
    # The stage in progress may finish; one that started after the signal does not.
    started = run.step_times(STARTED)
    late = {s for s, at in started.items() if s in STAGES and at > run.sent + _SEEN_WITHIN}
    succeeded = set(run.steps(SUCCEEDED))
    assert not late & succeeded, (late & succeeded, output)
    if "experiment_report" not in succeeded:
        assert run.status() == dg.DagsterRunStatus.CANCELED, output


# (the moment, the step and event the signal follows, seconds after it, the signal)
MOMENTS = [
    ("inside agent_runs", "agent_runs", STARTED, 0.0, signal.SIGINT),
    ("end of agent_runs", "agent_runs", SUCCEEDED, 0.0, signal.SIGINT),
    ("start of judge_scores", "judge_scores", STARTED, 0.0, signal.SIGINT),
    ("inside warehouse", "warehouse", STARTED, 0.5, signal.SIGINT),
    ("inside dbt", "dbt_metrics_assets", STARTED, 3.0, signal.SIGTERM),
    ("inside the report", "experiment_report", STARTED, 0.0, signal.SIGINT),
]


def test_a_signal_at_each_stage_stops_the_run_and_the_rerun_resumes(tmp_path: Path) -> None:
    env = _env(tmp_path)
    for name, step, event, delay, signum in MOMENTS:
        run = Run(env, tmp_path / f"{name.replace(' ', '_')}.log")
        run.wait_for(step, event)
        if step == "agent_runs" and event == STARTED:  # once a cell has finished
            deadline = time.monotonic() + 600
            while "] cell " not in run.output():
                assert run.process.poll() is None and time.monotonic() < deadline, run.output()
                time.sleep(0.1)
        time.sleep(delay)
        _assert_stopped(run, run.interrupt(signum), signum)

    rerun = Run(env, tmp_path / "rerun.log")
    assert rerun.process.wait(timeout=1200) == 0, rerun.output()
    output = rerun.output()
    assert "experiment done in " in output and "Traceback" not in output, output
    assert "no dead runs in the local Dagster instance" in output, output


class _HangingJudge(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint that takes every question and never answers."""

    asked = threading.Event()

    def do_POST(self) -> None:
        _HangingJudge.asked.set()
        time.sleep(600)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def hanging_judge() -> Iterator[str]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _HangingJudge)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_a_signal_while_an_llm_judge_waits_on_its_model_stops_the_run(
    tmp_path: Path, hanging_judge: str
) -> None:
    env = _env(tmp_path, MISTRAL_API_KEY="test-key")
    judge = ["--judge", "llm:mistral/mistral-small-2603", "--judge-base-url", hanging_judge]
    run = Run(env, tmp_path / "llm.log", *judge)
    deadline = time.monotonic() + 900
    while not _HangingJudge.asked.is_set():
        assert run.process.poll() is None and time.monotonic() < deadline, run.output()
        time.sleep(0.2)
    # The question went to the model, which does not answer: the stage is waiting on it.
    _assert_stopped(run, run.interrupt(), signal.SIGINT)
    assert "judge_scores" not in run.steps(SUCCEEDED), run.output()


def test_a_signal_before_the_first_stage_stops_before_the_experiment_job(tmp_path: Path) -> None:
    run = Run(_env(tmp_path), tmp_path / "early.log")
    deadline = time.monotonic() + 600
    # The versions' observation jobs run first, then the experiment job.
    while "no dead runs in the local Dagster instance" not in run.output():
        assert run.process.poll() is None and time.monotonic() < deadline, run.output()
        time.sleep(0.05)
    returncode = run.interrupt(signal.SIGTERM)
    output = run.output()
    assert returncode == 130, output
    assert "Traceback" not in output, output
    if run.run_id() is None:  # stopped before the experiment job
        assert "experiment stopped (interrupted by SIGTERM)" in output, output
        assert "before any stage ran: nothing changed" in output, output
    else:  # the job had just started: it stopped at its first stage
        _assert_stopped(run, returncode, signal.SIGTERM)
