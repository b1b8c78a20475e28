"""Time ``datagouv-eval judge calibrate`` for the deterministic judge on the labelled set.

Three phases, each the best of ``rounds`` (median in parentheses): loading and resolving the
calibration files, judging every item (the rules, with the catalog's slugs), and the agreement
figures with 2,000 bootstrap resamples per verdict kind. Loading the catalog itself is timed
once, apart (the CLI and the asset pay it once per run).

Run: ``python3 -m uv run python bench/bench_calibration.py [rounds]``.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from datagouv_eval_pipeline.core.judges.calibration import (
    CALIBRATION_DIR,
    agreement,
    calibrate,
    load_calibration,
)
from datagouv_eval_pipeline.core.judges.deterministic import DeterministicJudge
from datagouv_eval_pipeline.core.tasks import TASK_SPECS_DIR, load_task_specs
from datagouv_eval_pipeline.pipeline.experiment.catalog import twin_catalog_lookup


def timed(fn: Callable[[], Any], rounds: int) -> tuple[float, float, Any]:
    """Best and median seconds of ``rounds`` calls, and the last result."""
    seconds = []
    result = None
    for _ in range(rounds):
        started = time.perf_counter()
        result = fn()
        seconds.append(time.perf_counter() - started)
    return min(seconds), statistics.median(seconds), result


def main(rounds: int) -> None:
    """Print the timings."""
    tasks = {t.task_id: t for t in load_task_specs([TASK_SPECS_DIR])}
    started = time.perf_counter()
    catalog = twin_catalog_lookup()
    catalog_s = time.perf_counter() - started
    best, median, items = timed(lambda: load_calibration([CALIBRATION_DIR], tasks), rounds)
    print(f"items: {len(items)}")
    print(f"catalog load (once): {catalog_s:.2f} s")
    print(f"load and resolve: {best * 1000:.0f} ms ({median * 1000:.0f})")
    judge = DeterministicJudge()
    best, median, report = timed(
        lambda: asyncio.run(calibrate(judge, items, catalog=catalog, resamples=1)), rounds
    )
    print(f"judge every item: {best * 1000:.0f} ms ({median * 1000:.0f})")
    best, median, _ = timed(lambda: agreement(report.judge_id, report.rows), rounds)
    label = "agreement + bootstrap (2,000 resamples x 4 kinds)"
    print(f"{label}: {best * 1000:.0f} ms ({median * 1000:.0f})")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
