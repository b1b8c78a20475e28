"""A signal in the warehouse, dbt and report stages of ``datagouv-eval experiment`` (real runs).

One instance, one run per moment (``interrupt_runs``): inside the warehouse (SIGINT), inside
``dbt build`` (SIGTERM), inside the report (SIGINT); each stops there, each next run goes on
from where the last one stopped, and the last rerun completes. The moments in the cell stages
are in ``test_experiment_interrupts_early.py``: the two chains run side by side under
pytest-xdist.
"""

from __future__ import annotations

from pathlib import Path

from tests.cli.command_env import experiment_env
from tests.cli.interrupt_runs import (
    INSIDE_DBT,
    INSIDE_THE_REPORT,
    INSIDE_WAREHOUSE,
    Run,
    interrupt_at_each,
)


def test_a_signal_in_the_late_stages_stops_the_run_and_the_rerun_completes(
    tmp_path: Path,
) -> None:
    env = experiment_env(tmp_path)
    interrupt_at_each(env, tmp_path, [INSIDE_WAREHOUSE, INSIDE_DBT, INSIDE_THE_REPORT])

    rerun = Run(env, tmp_path / "rerun.log")
    assert rerun.process.wait(timeout=1200) == 0, rerun.output()
    output = rerun.output()
    assert "experiment done in " in output and "Traceback" not in output, output
    assert "no dead runs in the local Dagster instance" in output, output
