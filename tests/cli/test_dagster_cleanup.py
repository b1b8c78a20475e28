"""``datagouv-eval dagster cleanup``: dead runs of a real instance are failed, their slots freed."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from pathlib import Path

import dagster as dg
from click.testing import CliRunner
from dagster._core.instance.ref import InstanceRef
from dagster._core.storage.dagster_run import DagsterRun

from datagouv_eval_pipeline.cli import main
from datagouv_eval_pipeline.cli.dagster_home import DEFAULT_HOME, RUN_HOST_TAG, RUN_PID_TAG


def _started_run(instance: dg.DagsterInstance, pid: int) -> str:
    run = DagsterRun(
        job_name="experiment",
        status=dg.DagsterRunStatus.STARTED,
        tags={RUN_PID_TAG: str(pid), RUN_HOST_TAG: socket.gethostname()},
    )
    instance.add_run(run)
    return run.run_id


def test_cleanup_fails_the_dead_run_frees_its_slot_and_leaves_the_live_one(
    tmp_path: Path,
) -> None:
    shutil.copy(DEFAULT_HOME / "dagster.yaml", tmp_path / "dagster.yaml")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(tmp_path))) as instance:
            storage = instance.event_log_storage
            storage.set_concurrency_slots("agent_runs", 1)
            dead_run = _started_run(instance, dead.pid)
            live_run = _started_run(instance, alive.pid)
            assert storage.claim_concurrency_slot("agent_runs", dead_run, "agent_runs").is_claimed

        result = CliRunner().invoke(main, ["dagster", "cleanup", "--home", str(tmp_path)])
        assert result.exit_code == 0, result.output
        assert result.output.startswith("cleaned 1 dead run(s) of the local Dagster instance")
        assert f"process {dead.pid} gone: marked failed" in result.output

        with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(tmp_path))) as instance:
            dead_status = instance.get_run_by_id(dead_run)
            live_status = instance.get_run_by_id(live_run)
            assert dead_status is not None and live_status is not None
            assert dead_status.status == dg.DagsterRunStatus.FAILURE
            assert live_status.status == dg.DagsterRunStatus.STARTED
            info = instance.event_log_storage.get_concurrency_info("agent_runs")
            assert info.claimed_slots == []
            # The slot is free again: a new run gets it at once.
            claim = instance.event_log_storage.claim_concurrency_slot(
                "agent_runs", "next-run", "agent_runs"
            )
            assert claim.is_claimed
            instance.event_log_storage.free_concurrency_slots_for_run("next-run")

        again = CliRunner().invoke(main, ["dagster", "cleanup", "--home", str(tmp_path)])
        assert again.output.strip() == "no dead runs in the local Dagster instance"
    finally:
        alive.kill()
        alive.wait()
