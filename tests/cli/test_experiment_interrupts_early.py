"""Ctrl-C in the cell stages of ``datagouv-eval experiment`` (real processes, ``interrupt_runs``).

One instance, one run per moment: inside ``agent_runs`` once a cell has finished, at its end,
at the start of ``judge_scores``; each stops there, and each next run goes on from where the
last one stopped (it gets past the stage the last one was stopped in), the last one as far as
the warehouse. The later moments and the final complete rerun are in
``test_experiment_interrupts_late.py``: the two chains run side by side under pytest-xdist.
"""

from __future__ import annotations

from pathlib import Path

from tests.cli.command_env import experiment_env
from tests.cli.interrupt_runs import (
    END_OF_AGENT_RUNS,
    INSIDE_AGENT_RUNS,
    INSIDE_WAREHOUSE,
    START_OF_JUDGE_SCORES,
    interrupt_at_each,
)


def test_a_signal_in_the_cell_stages_stops_the_run_and_the_next_run_resumes(
    tmp_path: Path,
) -> None:
    moments = [INSIDE_AGENT_RUNS, END_OF_AGENT_RUNS, START_OF_JUDGE_SCORES]
    # The last run must get past judge_scores, where the one before it was stopped.
    interrupt_at_each(experiment_env(tmp_path), tmp_path, [*moments, INSIDE_WAREHOUSE])
