"""The agent stage alone, with and without worker lanes, alternated in the same minutes.

Starts the twin once (in this process, as the Dagster step does), then runs every cell of the
default experiment over the active tasks (no cache) through ``experiment.lanes``: once with the
offline provider on one lane in this process (``worker_processes: 0``, the code path before
lanes), once on the lanes its slots allow (two on two cores: one here, one in a worker
process). The rounds alternate so both modes see the same load. Prints wall time, task runs
and the CPU time of this process and of its children.

Run: ``python3 -m uv run python bench/bench_lanes.py [--rounds 2] [--tasks task_0001,...]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from typing import Any

from datagouv_eval_pipeline.core.benchmark.cells import Cell
from datagouv_eval_pipeline.core.benchmark.loader import load_benchmark_config
from datagouv_eval_pipeline.core.tasks import TASK_SPECS_DIR, load_task_specs
from datagouv_eval_pipeline.defs.partitions import CELLS
from datagouv_eval_pipeline.pipeline.agents.cancel import CancelToken
from datagouv_eval_pipeline.pipeline.agents.runner import RunSettings
from datagouv_eval_pipeline.pipeline.experiment.lanes import (
    plan_lanes,
    provider_slots,
    running_lanes,
)
from datagouv_eval_pipeline.pipeline.experiment.plan import select_tasks
from datagouv_eval_pipeline.pipeline.experiment.stages import AgentStageResult, run_agents
from datagouv_eval_pipeline.world.api.server import TwinServer


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def main() -> None:
    """Alternate the two modes and print one line per round."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--tasks", default="", help="comma-separated task ids (default: active)")
    args = parser.parse_args()
    specs = load_task_specs([TASK_SPECS_DIR])
    tasks = select_tasks(specs, [t for t in args.tasks.split(",") if t])
    slots = provider_slots(load_benchmark_config())
    server = TwinServer()
    urls = server.start()
    snapshot = server.store.snapshot_id
    try:
        for round_index in range(args.rounds):
            for workers in (0, None):
                plans = {
                    name: plan_lanes(name, n, max_per_cell=8, offline=True, max_workers=workers)
                    for name, n in slots.items()
                }
                arguments: dict[str, Any] = {
                    "tasks": tasks,
                    "twin_urls": urls,
                    "snapshot_id": snapshot,
                }

                def here(
                    cell: Cell,
                    settings: RunSettings,
                    cancel: CancelToken | None,
                    given: dict[str, Any] = arguments,
                ) -> AgentStageResult:
                    return run_agents(cell, settings=settings, cancel=cancel, **given)

                def shipped(_cell: Cell, given: dict[str, Any] = arguments) -> dict[str, Any]:
                    return given

                started, (own, children) = time.perf_counter(), _cpu()
                runs = 0
                with running_lanes(
                    CELLS,
                    plans,
                    here,
                    shipped,
                    needs_parent=lambda cell: cell.mcp_build is not None,
                ) as futures:
                    for future in futures.values():
                        runs += future.result().executed
                wall = time.perf_counter() - started
                own2, children2 = _cpu()
                label = "1 lane, in process" if workers == 0 else f"{plans['offline'].lanes} lanes"
                print(
                    f"round {round_index + 1}, {label:18s}: {wall:6.1f} s wall, {runs} task runs, "
                    f"CPU here {own2 - own:5.1f} s + children {children2 - children:5.1f} s, "
                    f"load {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
    finally:
        server.stop()


if __name__ == "__main__":
    main()
