"""``datagouv-eval experiment`` survives ``kill -9`` and stops cleanly on SIGINT (real processes).

Each test runs the real command in a subprocess on a small experiment (the MCP-version cells,
two tasks) with its own Dagster instance, run store and warehouse, and interrupts it while the
``agent_runs`` step is going (after its first per-cell progress line).
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import duckdb

from tests.cli.command_env import CLI, experiment_env

SMALL = ["experiment", "--evaluation-type", "mcp_versions", "--tasks", "task_0002,task_0003"]
PROGRESS = "] cell "


def _start_and_wait_for_agents(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """Start the experiment; return once a cell of ``agent_runs`` has finished."""
    stream = log.open("wb")
    process = subprocess.Popen([CLI, *SMALL], env=env, stdout=stream, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 400
    while PROGRESS not in log.read_text(encoding="utf-8", errors="replace"):
        assert process.poll() is None, log.read_text(encoding="utf-8")
        assert time.monotonic() < deadline, "agent_runs never started"
        time.sleep(0.1)
    return process


def _cached(tmp_path: Path) -> dict[Path, int]:
    root = tmp_path / "run_store" / "cache" / "agent_runs"
    return {path: path.stat().st_mtime_ns for path in root.rglob("*.json")}


def _rerun(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLI, *SMALL], env=env, capture_output=True, text=True, timeout=900, check=False
    )


def test_kill_9_during_agent_runs_then_the_next_run_cleans_up_and_resumes(
    tmp_path: Path,
) -> None:
    env = experiment_env(tmp_path)
    process = _start_and_wait_for_agents(env, tmp_path / "first.log")
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    finished = _cached(tmp_path)
    assert finished, "the first cell's task runs were not cached as they finished"

    rerun = _rerun(env)
    output = rerun.stdout + rerun.stderr
    assert rerun.returncode == 0, output
    # The dead run held the only slot of the agent_runs pool: it was freed, and said so.
    assert "cleaned 1 dead run(s) of the local Dagster instance" in output
    assert f"(pid {process.pid})" in output or f"process {process.pid} gone" in output
    # Runs finished before the kill were reused, not redone (their cache entries untouched).
    after = _cached(tmp_path)
    assert {path: after[path] for path in finished} == finished
    assert "Traceback" not in output


def test_sigint_during_agent_runs_stops_within_10_s_and_the_rerun_completes(
    tmp_path: Path,
) -> None:
    env = experiment_env(tmp_path)
    process = _start_and_wait_for_agents(env, tmp_path / "first.log")
    sent = time.monotonic()
    process.send_signal(signal.SIGINT)
    returncode = process.wait(timeout=60)
    stopped_after = time.monotonic() - sent
    first = (tmp_path / "first.log").read_text(encoding="utf-8")
    assert stopped_after < 10, first
    assert returncode == 130, first
    assert "experiment stopped (interrupted by SIGINT)" in first
    assert "Traceback" not in first
    # The run stopped before the warehouse: nothing half-loaded.
    assert not (tmp_path / "warehouse.duckdb").exists()
    finished = _cached(tmp_path)

    rerun = _rerun(env)
    output = rerun.stdout + rerun.stderr
    assert rerun.returncode == 0, output
    assert "no dead runs in the local Dagster instance" in output
    after = _cached(tmp_path)
    assert {path: after[path] for path in finished} == finished
    with duckdb.connect(str(tmp_path / "warehouse.duckdb"), read_only=True) as conn:
        statuses = dict(
            conn.execute("SELECT status, count(*) FROM eval.runs GROUP BY 1").fetchall()
        )
        per_cell = conn.execute(
            "SELECT cell_key, count(*) FROM eval.runs GROUP BY 1 HAVING count(*) <> 2"
        ).fetchall()
    assert "cancelled" not in statuses and statuses.get("ok", 0) > 0
    assert per_cell == []  # every loaded cell has both tasks: no half-written cell
    # The console: per-cell progress, a summary, and at most 60 lines.
    lines = output.splitlines()
    assert len(lines) <= 60, output
    # The run covers the nine MCP-version cells only (their range), the 0.2.19 oneshot second.
    assert any("[2/9] cell offline~baseline-oneshot__mcp@0.2.19" in line for line in lines)
    assert any(line.startswith("experiment done in ") for line in lines)
    assert not any("DEBUG" in line or "BetaWarning" in line for line in lines)
