"""The twin with the real catalogue: start-up, memory and ``search_datasets`` latency through MCP.

The twin runs in a child process (as ``datagouv-eval twin serve``); one MCP SDK session in
this process calls ``search_datasets`` sequentially. What is measured:

* **start-up**: spawn → health answered, with the search index cache warm (the usual case:
  any earlier run built it) and, with ``--cold``, with an empty cache (the index is built on
  the first search, so the first search pays it, not the start-up);
* **first search**: the first ``search_datasets`` call after start-up (index loaded from the
  cache, catalogue columns decompressed);
* **search_datasets latency** at 0.2.26 (API v2) and 0.2.19 (API v1): p50/p95/max over
  ``--calls`` distinct real-looking queries (each query asked once, so every upstream search
  is computed anew), client-measured round trip;
* **memory**: the child's RSS after start-up, after the searches, and its peak (VmHWM).

Run: ``python3 -m uv run python bench/bench_search.py [--calls 200] [--cold]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from typing import Any

WORDS = (
    "transport",
    "population",
    "eau",
    "commune",
    "ecole",
    "route",
    "logement",
    "agriculture",
    "entreprise",
    "accident",
    "carburant",
    "qualite",
    "medecin",
    "recensement",
    "elections",
    "budget",
    "adresse",
    "energie",
    "sante",
    "velo",
)
QUALIFIERS = (
    "",
    "paris",
    "communes",
    "2024",
    "departement",
    "region",
    "france",
    "liste",
    "annuel",
    "base",
)


def _queries(count: int) -> list[str]:
    """Return ``count`` distinct queries: a topic word, optionally with a qualifier."""
    out = [f"{word} {qualifier}".strip() for qualifier in QUALIFIERS for word in WORDS]
    doubled = [f"{a} {b}" for a in WORDS for b in WORDS if a < b]
    return (out + doubled)[:count]


def _serve() -> None:
    """Child mode: start the twin, report its port and start-up split, serve until stdin closes."""
    started = time.perf_counter()
    from datagouv_eval_pipeline.world.api.server import TwinServer

    imported = time.perf_counter()
    server = TwinServer()
    urls = server.start()
    print(
        json.dumps(
            {
                "site": urls.site,
                "import_s": imported - started,
                "start_s": time.perf_counter() - imported,
                "pid": os.getpid(),
            }
        ),
        flush=True,
    )
    sys.stdin.read()
    server.stop()


def _memory_kb(pid: int) -> dict[str, int]:
    fields = {}
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                fields[key] = int(value.split()[0])
    return fields


def _spawn(env: dict[str, str]) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    spawned = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert child.stdout is not None
    report: dict[str, Any] = json.loads(child.stdout.readline())
    with urllib.request.urlopen(f"{report['site']}_twin/health", timeout=30) as answer:
        answer.read()
    report["spawn_to_health_s"] = time.perf_counter() - spawned
    return child, report


async def _latencies(site: str, version: str, queries: list[str]) -> dict[str, Any]:
    from mcp import Client

    url = f"{site}mcp/v{version}/mcp"
    async with Client(url, mode="legacy") as client:
        first = time.perf_counter()
        await client.call_tool("search_datasets", {"query": "zzz premier appel"})
        first_ms = (time.perf_counter() - first) * 1000
        times = []
        for query in queries:
            began = time.perf_counter()
            result = await client.call_tool("search_datasets", {"query": query})
            times.append((time.perf_counter() - began) * 1000)
            if result.is_error:
                raise RuntimeError(f"search_datasets({query!r}) failed: {result.content}")
    times.sort()
    if not times:  # --cold: only the first call (it builds the index)
        return {"first_call_ms": round(first_ms, 1), "calls": 0}
    return {
        "first_call_ms": round(first_ms, 1),
        "calls": len(times),
        "p50_ms": round(statistics.median(times), 1),
        "p95_ms": round(times[int(0.95 * (len(times) - 1))], 1),
        "max_ms": round(times[-1], 1),
    }


def main() -> None:
    """Run the measurements and print them as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--cold", action="store_true", help="also start once with no index cache")
    args = parser.parse_args()
    if args.serve:
        _serve()
        return
    report: dict[str, Any] = {"load_average": round(os.getloadavg()[0], 2)}
    env = dict(os.environ)
    if args.cold:
        with tempfile.TemporaryDirectory() as empty:
            cold_env = env | {"DATAGOUV_EVAL_CACHE_DIR": empty}
            child, start = _spawn(cold_env)
            began = time.perf_counter()
            asyncio.run(_latencies(start["site"], "0.2.26", []))
            report["cold"] = start | {"first_search_s": round(time.perf_counter() - began, 2)}
            child.stdin.close()  # type: ignore[union-attr]
            child.wait(timeout=30)
    child, start = _spawn(env)
    report["startup"] = {k: round(v, 3) if isinstance(v, float) else v for k, v in start.items()}
    report["memory_after_start_kb"] = _memory_kb(child.pid)
    queries = _queries(args.calls)
    report["v2_0.2.26"] = asyncio.run(_latencies(start["site"], "0.2.26", queries))
    report["v1_0.2.19"] = asyncio.run(_latencies(start["site"], "0.2.19", queries[::-1]))
    report["memory_end_kb"] = _memory_kb(child.pid)
    report["load_average_end"] = round(os.getloadavg()[0], 2)
    child.stdin.close()  # type: ignore[union-attr]
    child.wait(timeout=30)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
