"""Throughput, latency, start-up time and memory of the twin's MCP servers.

The twin runs in a child process (one uvicorn worker, as ``datagouv-eval twin serve``); the
measuring clients run in this process, so on a 2-core machine server and clients each get a
core. Clients are real MCP clients (``mcp.Client`` over streamable HTTP, handshake-era
``initialize`` as against the real server), one session per concurrent worker:

* **start-up**: from spawning the child to the first answered ``initialize``, and the child's
  own figure (snapshot load + bind + healthy);
* **search_datasets calls/s**: ``--concurrency`` sessions calling ``search_datasets`` with
  rotating queries for ``--seconds`` seconds on release 0.2.26 (warm upstream cache), then for
  half as long with a distinct (query, page) per call (every upstream answer rendered anew),
  with the server's and the clients' CPU time per call;
* **get_dataset_info latency**: one session, sequential calls, p50/p95/p99;
* **memory**: the child's RSS after start-up and its peak (VmHWM) at the end.

Run: ``python3 -m uv run python bench/bench_mcp.py [--seconds 10] [--concurrency 8]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

QUERIES = ("transport", "education", "sante", "energie", "elections", "budget", "adresse")
DATASETS = ("55e4129788ee386899a46ec1", "5d13a8b6634f41070a43dff3", "53699ebba3a729239d205f4f")
VERSION = "0.2.26"
T = TypeVar("T")


def _serve() -> None:
    """Child mode: start the twin, report port and start-up time, serve until stdin closes."""
    started = time.perf_counter()
    from datagouv_eval_pipeline.twin.server import TwinServer

    imported = time.perf_counter()
    server = TwinServer()
    urls = server.start()
    ready = time.perf_counter()
    report = {
        "site": urls.site,
        "import_s": imported - started,
        "start_s": ready - imported,
        "pid": os.getpid(),
    }
    print(json.dumps(report), flush=True)
    sys.stdin.read()
    server.stop()


def _cpu_seconds(pid: int) -> float:
    """Return the user+system CPU time a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _memory_kb(pid: int) -> dict[str, int]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0])
    return fields


async def _first_initialize(url: str, deadline: float) -> None:
    from mcp import Client

    while time.perf_counter() < deadline:
        try:
            async with Client(url, mode="legacy") as client:
                await client.list_tools()
                return
        except Exception:  # not up yet
            await asyncio.sleep(0.01)
    raise RuntimeError("the twin did not answer in time")


async def _throughput(
    url: str, seconds: float, concurrency: int, distinct: bool = False
) -> tuple[int, float]:
    """Call ``search_datasets`` from ``concurrency`` sessions; return (calls, seconds).

    ``distinct`` gives every call its own (query, page) pair, so no upstream answer is reused
    from the twin's cache; otherwise a handful of queries rotate (warm cache).
    """
    from mcp import Client

    stop = time.perf_counter() + seconds
    counts = [0] * concurrency

    async def worker(index: int) -> None:
        async with Client(url, mode="legacy") as client:
            i = index
            while time.perf_counter() < stop:
                query = QUERIES[i % len(QUERIES)]
                args: dict[str, Any] = {"query": query}
                if distinct:
                    args["page"] = 1 + (i * concurrency + index) // len(QUERIES)
                result = await client.call_tool("search_datasets", args)
                assert not result.is_error
                counts[index] += 1
                i += 1

    began = time.perf_counter()
    await asyncio.gather(*(worker(i) for i in range(concurrency)))
    return sum(counts), time.perf_counter() - began


async def _latency(url: str, calls: int) -> list[float]:
    from mcp import Client

    samples = []
    async with Client(url, mode="legacy") as client:
        for i in range(calls + 20):
            began = time.perf_counter()
            result = await client.call_tool(
                "get_dataset_info", {"dataset_id": DATASETS[i % len(DATASETS)]}
            )
            elapsed = time.perf_counter() - began
            assert not result.is_error
            if i >= 20:  # warm-up
                samples.append(elapsed * 1000)
    return samples


def _runner() -> Callable[[Coroutine[Any, Any, T]], T]:
    """Return ``uvloop.run`` when available (the clients' own overhead matters), else asyncio's."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run
    return uvloop.run


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--latency-calls", type=int, default=500)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        _serve()
        return

    spawned = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdin is not None
        report: dict[str, Any] = json.loads(child.stdout.readline())
        reported = time.perf_counter() - spawned
        url = f"{report['site']}mcp/v{VERSION}/mcp"
        run = _runner()
        run(_first_initialize(url, time.perf_counter() + 30))
        first_answer = time.perf_counter() - spawned
        rss_started = _memory_kb(child.pid)
        cpu_before, own_before = _cpu_seconds(child.pid), time.process_time()
        calls, elapsed = run(_throughput(url, args.seconds, args.concurrency))
        server_cpu = _cpu_seconds(child.pid) - cpu_before
        client_cpu = time.process_time() - own_before
        cold_calls, cold_elapsed = run(
            _throughput(url, args.seconds / 2, args.concurrency, distinct=True)
        )
        latencies = run(_latency(url, args.latency_calls))
        memory = _memory_kb(child.pid)
    finally:
        if child.stdin is not None:
            child.stdin.close()
        child.wait(timeout=30)

    figures = {
        "machine": (
            f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
        ),
        "startup_spawn_to_first_initialize_s": round(first_answer, 3),
        "startup_spawn_to_child_ready_s": round(reported, 3),
        "startup_child_import_s": round(report["import_s"], 3),
        "startup_child_load_bind_healthy_s": round(report["start_s"], 3),
        "search_datasets_calls_per_s": round(calls / elapsed, 1),
        "search_datasets_calls": calls,
        "search_datasets_distinct_calls_per_s": round(cold_calls / cold_elapsed, 1),
        "concurrency": args.concurrency,
        "server_cpu_ms_per_search_call": round(server_cpu / calls * 1000, 2),
        "client_cpu_ms_per_search_call": round(client_cpu / calls * 1000, 2),
        "get_dataset_info_ms_p50": round(statistics.median(latencies), 2),
        "get_dataset_info_ms_p95": round(_percentile(latencies, 0.95), 2),
        "get_dataset_info_ms_p99": round(_percentile(latencies, 0.99), 2),
        "rss_after_start_mb": round(rss_started["VmRSS"] / 1024, 1),
        "rss_end_mb": round(memory["VmRSS"] / 1024, 1),
        "rss_peak_mb": round(memory["VmHWM"] / 1024, 1),
    }
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
