"""Shared by the ``test_experiment_interrupts*`` files: the real command, followed in its log.

The real command runs in a subprocess on a small experiment (the MCP-version cells, one task)
with its own Dagster instance, run store and warehouse. A test follows the run in the
instance's event log and sends the signal to the command's whole process group, as a terminal's
Ctrl-C does (Dagster's log-mirroring helpers and dbt get it too), at a stage boundary or inside
a stage. Each time the command says "stopped" and exits 130, prints no traceback, and no stage
that started after the signal ran (the stage in progress may finish; the test sees the run's
progress a little late, so "the next stage" is the one that started after the signal).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import dagster as dg

from tests.cli.command_env import CLI

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

Moment = tuple[str, str, dg.DagsterEventType, float, signal.Signals]
"""The moment's name, the step and event the signal follows, seconds after it, the signal."""


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
SEEN_WITHIN = 1.0


def assert_stopped(run: Run, returncode: int, signum: signal.Signals) -> None:
    """The command said "stopped", exited 130, printed no traceback; no stage started after."""
    output = run.output()
    assert returncode == 130, output
    assert f"experiment stopped (interrupted by {signum.name})" in output, output
    assert "kept: " in output and "run it again to resume" in output, output
    assert "Traceback" not in output and "KeyboardInterrupt" not in output, output
    assert "FAILED" not in output, output
    # The stage in progress may finish; one that started after the signal does not.
    started = run.step_times(STARTED)
    late = {s for s, at in started.items() if s in STAGES and at > run.sent + SEEN_WITHIN}
    succeeded = set(run.steps(SUCCEEDED))
    assert not late & succeeded, (late & succeeded, output)
    if "experiment_report" not in succeeded:
        assert run.status() == dg.DagsterRunStatus.CANCELED, output


def interrupt_at_each(env: dict[str, str], tmp_path: Path, moments: list[Moment]) -> None:
    """One run per moment, in order on the same instance: each stopped there, as it should."""
    for name, step, event, delay, signum in moments:
        run = Run(env, tmp_path / f"{name.replace(' ', '_')}.log")
        run.wait_for(step, event)
        if step == "agent_runs" and event == STARTED:  # once a cell has finished
            deadline = time.monotonic() + 600
            while "] cell " not in run.output():
                assert run.process.poll() is None and time.monotonic() < deadline, run.output()
                time.sleep(0.1)
        time.sleep(delay)
        assert_stopped(run, run.interrupt(signum), signum)


INSIDE_AGENT_RUNS: Moment = ("inside agent_runs", "agent_runs", STARTED, 0.0, signal.SIGINT)
END_OF_AGENT_RUNS: Moment = ("end of agent_runs", "agent_runs", SUCCEEDED, 0.0, signal.SIGINT)
START_OF_JUDGE_SCORES: Moment = (
    "start of judge_scores",
    "judge_scores",
    STARTED,
    0.0,
    signal.SIGINT,
)
INSIDE_WAREHOUSE: Moment = ("inside warehouse", "warehouse", STARTED, 0.5, signal.SIGINT)
INSIDE_DBT: Moment = ("inside dbt", "dbt_metrics_assets", STARTED, 3.0, signal.SIGTERM)
INSIDE_THE_REPORT: Moment = ("inside the report", "experiment_report", STARTED, 0.0, signal.SIGINT)
