"""bench/bench_search.py's --cold step (one first call, no timed queries) does not crash."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

from datagouv_eval_pipeline.world.catalogue.urls import TwinUrls

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_search.py"


def test_the_cold_step_reports_the_first_call_only(live_twin: TwinUrls) -> None:
    spec = importlib.util.spec_from_file_location("bench_search", BENCH)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    report = asyncio.run(bench._latencies(live_twin.site, "0.2.26", []))
    assert report["calls"] == 0 and report["first_call_ms"] > 0
    assert set(report) == {"first_call_ms", "calls"}
