"""Throughput, latency, start-up time and memory of the twin's MCP servers, through real clients.

The twin runs in a child process (one uvicorn worker, as ``datagouv-eval twin serve``). The
measuring clients run in separate worker processes (``--client-procs``, default 2: one Python
client process tops out near one core), so the figures are those of a server and its clients
sharing the machine's cores. Three real MCP
clients can drive it (``--clients``):

* ``sdk``: the ``mcp`` SDK's ``Client`` (``ClientSession`` over streamable HTTP, with the
  handshake-era ``initialize`` the real server speaks);
* ``session``: the SDK's bare ``ClientSession`` over ``streamable_http_client``;
* ``pydantic-ai``: pydantic-ai's ``MCPToolset`` (the agents' client; fastmcp underneath),
  calling ``direct_call_tool``.

What is measured:

* **wire check**: before anything else, the twin's fast stateless path is compared byte for
  byte with the SDK's own path (``twin.mcp.wirecheck``); the script exits 1 on a difference;
* **start-up**: two children are spawned with a private bytecode cache: the first compiles
  every module (as in an environment with ``PYTHONDONTWRITEBYTECODE``), the second reads the
  bytecode the first wrote. For each: spawn → first answered ``initialize``, and the child's
  own split (imports; snapshot load + app + bind + ``/_twin/health``);
* **search_datasets calls/s** on release 0.2.26, per client kind and round: ``--concurrency``
  sessions calling with 7 rotating queries for ``--seconds`` (warm: upstream answers cached);
  with the ``sdk`` client, also half as long with a distinct (query, page_size) per call (every
  upstream answer fetched and rendered anew). The server's and the clients' CPU time per call
  and the load average are reported with each round, and two figures derived from them (not
  measured rates): ``cpu_bound_calls_per_s``, the rate those costs allow when the bench has
  every core to itself, and ``server_calls_per_cpu_s``, the calls one core of server CPU serves;
* **get_dataset_info latency**: one ``sdk`` session, sequential calls after 20 warm-up calls,
  p50/p95/p99 in ms, client-measured round trip, per round;
* **memory**: the child's RSS after start-up, at the end, and its peak (VmHWM).

Run: ``python3 -m uv run python bench/bench_mcp.py [--seconds 10] [--concurrency 8]
[--rounds 3] [--clients sdk,session,pydantic-ai] [--client-procs 2]``.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

QUERIES = ("transport", "education", "sante", "energie", "elections", "budget", "adresse")
# Queries with at least one result in the snapshot, for the distinct-call measurement.
WORDS = (
    *QUERIES,
    "eau",
    "population",
    "commune",
    "ecole",
    "route",
    "train",
    "logement",
    "agriculture",
    "entreprise",
    "accident",
    "immobilier",
    "carburant",
    "qualite",
    "medecin",
    "recensement",
    "vote",
)
DATASETS = ("55e4129788ee386899a46ec1", "5d13a8b6634f41070a43dff3", "53699ebba3a729239d205f4f")
VERSION = "0.2.26"
CLIENT_KINDS = ("sdk", "session", "pydantic-ai")
T = TypeVar("T")
Call = Callable[[str, dict[str, Any]], Awaitable[None]]


# --------------------------------------------------------------------------- child: the twin


def _serve() -> None:
    """Child mode: start the twin, report port and start-up time, serve until stdin closes."""
    started = time.perf_counter()
    from datagouv_eval_pipeline.world.api.server import TwinServer

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


# ------------------------------------------------------------------------- worker: clients


@asynccontextmanager
async def _client(kind: str, url: str) -> AsyncIterator[Call]:
    """Open one session of a client kind; yield a ``call(tool, arguments)`` function."""
    if kind == "sdk":
        from mcp import Client

        async with Client(url, mode="legacy") as client:

            async def call_sdk(name: str, arguments: dict[str, Any]) -> None:
                result = await client.call_tool(name, arguments)
                if result.is_error:
                    raise RuntimeError(f"{name} failed: {result.content}")

            yield call_sdk
    elif kind == "session":
        from mcp.client.session import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        async with (
            streamable_http_client(url) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()

            async def call_session(name: str, arguments: dict[str, Any]) -> None:
                result = await session.call_tool(name, arguments)
                if result.is_error:
                    raise RuntimeError(f"{name} failed: {result.content}")

            yield call_session
    elif kind == "pydantic-ai":
        from pydantic_ai.mcp import MCPToolset

        toolset: Any = MCPToolset(url)
        async with toolset:

            async def call_toolset(name: str, arguments: dict[str, Any]) -> None:
                await toolset.direct_call_tool(name, arguments)  # raises on a tool error

            yield call_toolset
    else:
        raise ValueError(f"unknown client kind {kind!r} (expected one of {CLIENT_KINDS})")


def _arguments(index: int, distinct: bool) -> dict[str, Any]:
    """Arguments of call ``index``: rotating queries, or a (query, page_size) never repeated."""
    if not distinct:
        return {"query": QUERIES[index % len(QUERIES)]}
    return {"query": WORDS[index % len(WORDS)], "page_size": 1 + index // len(WORDS) % 100}


async def _throughput_worker(args: argparse.Namespace) -> dict[str, Any]:
    """Open the sessions, warm up, say ready; on ``go`` call until the deadline."""
    async with AsyncExitStack() as stack:
        calls = [
            await stack.enter_async_context(_client(args.worker, args.url))
            for _ in range(args.sessions)
        ]
        for call in calls:
            await call("search_datasets", {"query": "transport"})
        print("ready", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        counts = [0] * len(calls)
        began_cpu, began = time.process_time(), time.perf_counter()
        stop = began + args.seconds
        # Distinct calls: each gets a global index no other session or process uses.
        stride = args.total_sessions

        async def run(slot: int, call: Call) -> None:
            index = args.offset + slot
            while time.perf_counter() < stop:
                await call("search_datasets", _arguments(index, args.distinct))
                counts[slot] += 1
                index += stride

        await asyncio.gather(*(run(slot, call) for slot, call in enumerate(calls)))
        ended, ended_cpu = time.perf_counter(), time.process_time()
    return {"calls": sum(counts), "elapsed_s": ended - began, "cpu_s": ended_cpu - began_cpu}


async def _latency_worker(args: argparse.Namespace) -> dict[str, Any]:
    samples: list[float] = []
    async with _client("sdk", args.url) as call:
        for i in range(args.latency_calls + 20):
            began = time.perf_counter()
            await call("get_dataset_info", {"dataset_id": DATASETS[i % len(DATASETS)]})
            if i >= 20:  # warm-up
                samples.append((time.perf_counter() - began) * 1000)
    return {"samples_ms": samples}


def _run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run on uvloop when available (the clients' own overhead matters), else asyncio."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coroutine)
    return uvloop.run(coroutine)


# ----------------------------------------------------------------------- parent: measuring


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


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def _initialize_answered(site: str) -> bool:
    """POST one ``initialize`` (raw HTTP, no client import in the parent); True on an answer."""
    host, _, port = site.split("//", 1)[1].rstrip("/").partition(":")
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            },
        }
    )
    connection = http.client.HTTPConnection(host, int(port), timeout=5)
    try:
        connection.request(
            "POST",
            f"/mcp/v{VERSION}/mcp",
            body,
            {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
        )
        response = connection.getresponse()
        return response.status == 200 and b'"result"' in response.read()
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


def _spawn_twin(env: dict[str, str]) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    """Spawn a twin child; return it and its start-up figures (spawn → first initialize)."""
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
    reported = time.perf_counter() - spawned
    deadline = time.perf_counter() + 30
    while not _initialize_answered(report["site"]):
        if time.perf_counter() > deadline:
            raise RuntimeError("the twin did not answer initialize in time")
        time.sleep(0.005)
    report["spawn_to_ready_s"] = reported
    report["spawn_to_first_initialize_s"] = time.perf_counter() - spawned
    return child, report


def _stop(child: subprocess.Popen[str]) -> None:
    if child.stdin is not None:
        child.stdin.close()
    child.wait(timeout=30)


def _worker_command(url: str, kind: str, *extra: str) -> list[str]:
    return [sys.executable, __file__, "--worker", kind, "--url", url, *extra]


def _throughput_round(
    args: argparse.Namespace,
    env: dict[str, str],
    url: str,
    kind: str,
    server_pid: int,
    seconds: float,
    distinct: bool,
) -> dict[str, Any]:
    """One measured round: ``--client-procs`` workers sharing ``--concurrency`` sessions."""
    procs = max(1, min(args.client_procs, args.concurrency))
    shares = [args.concurrency // procs + (i < args.concurrency % procs) for i in range(procs)]
    workers = []
    offset = 0
    for share in shares:
        command = _worker_command(
            url,
            kind,
            "--sessions",
            str(share),
            "--total-sessions",
            str(args.concurrency),
            "--offset",
            str(offset),
            "--seconds",
            str(seconds),
            *(["--distinct"] if distinct else []),
        )
        workers.append(
            subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
            )
        )
        offset += share
    try:
        for worker in workers:
            assert worker.stdout is not None
            line = worker.stdout.readline().strip()
            if line != "ready":
                raise RuntimeError(f"a {kind} worker failed to start ({line!r})")
        load_before = _load()
        server_before = _cpu_seconds(server_pid)
        for worker in workers:
            assert worker.stdin is not None
            worker.stdin.write("go\n")
            worker.stdin.flush()
        results = []
        for worker in workers:
            assert worker.stdout is not None
            results.append(json.loads(worker.stdout.readline()))
        server_cpu = _cpu_seconds(server_pid) - server_before
    finally:
        for worker in workers:
            if worker.stdin is not None:
                worker.stdin.close()
            worker.wait(timeout=60)
    calls = sum(r["calls"] for r in results)
    elapsed = max(r["elapsed_s"] for r in results)
    server_ms = server_cpu / calls * 1000
    client_ms = sum(r["cpu_s"] for r in results) / calls * 1000
    return {
        "calls_per_s": round(calls / elapsed, 1),
        "calls": calls,
        "server_cpu_ms_per_call": round(server_ms, 2),
        "client_cpu_ms_per_call": round(client_ms, 2),
        # Derived, not measured: the rate these CPU costs allow if the bench had every core
        # to itself (server and clients share them), and what one core of server CPU serves.
        "cpu_bound_calls_per_s": round((os.cpu_count() or 1) * 1000 / (server_ms + client_ms)),
        "server_calls_per_cpu_s": round(1000 / server_ms),
        "load": [load_before, _load()],
    }


def _latency_round(args: argparse.Namespace, env: dict[str, str], url: str) -> dict[str, Any]:
    command = _worker_command(url, "latency", "--latency-calls", str(args.latency_calls))
    output = subprocess.run(command, capture_output=True, text=True, check=True, env=env).stdout
    samples: list[float] = json.loads(output.strip().splitlines()[-1])["samples_ms"]
    ordered = sorted(samples)

    def percentile(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)

    return {
        "p50_ms": round(statistics.median(samples), 2),
        "p95_ms": percentile(0.95),
        "p99_ms": percentile(0.99),
        "load": _load(),
    }


def _best(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    rates = [r["calls_per_s"] for r in rounds]
    best = max(rounds, key=lambda r: r["calls_per_s"])
    return {
        "best": best,
        "median_calls_per_s": statistics.median(rates),
        "rounds": rates,
        "cpu_bound_rounds": [r["cpu_bound_calls_per_s"] for r in rounds],
        "load_rounds": [r["load"][0] for r in rounds],
    }


def _wire_check() -> int:
    from datagouv_eval_pipeline.world.api.wirecheck import (
        compare_streaming,
        compare_wire,
        wire_cases,
    )

    mismatches = compare_wire() + compare_streaming()
    for mismatch in mismatches:
        print("WIRE MISMATCH", mismatch.describe(), file=sys.stderr)
    print(
        f"wire check: {len(wire_cases()) + 2} requests, {len(mismatches)} differences",
        file=sys.stderr,
    )
    return len(mismatches)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--latency-calls", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", default=",".join(CLIENT_KINDS))
    parser.add_argument("--client-procs", type=int, default=2)
    parser.add_argument("--skip-wire-check", action="store_true")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--sessions", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--total-sessions", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--offset", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--distinct", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        _serve()
        return
    if args.worker == "latency":
        print(json.dumps(_run(_latency_worker(args))), flush=True)
        return
    if args.worker:
        print(json.dumps(_run(_throughput_worker(args))), flush=True)
        return

    kinds = [k for k in args.clients.split(",") if k]
    if not args.skip_wire_check and _wire_check():
        sys.exit(1)

    cache = tempfile.mkdtemp(prefix="bench-mcp-pycache-")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = cache
    try:
        load_at_start = _load()
        first, cold = _spawn_twin(env)  # compiles every module, writes the cache
        _stop(first)
        child, warm = _spawn_twin(env)  # reads the bytecode the first child wrote
        try:
            url = f"{warm['site']}mcp/v{VERSION}/mcp"
            rss_started = _memory_kb(warm["pid"])
            throughput: dict[str, Any] = {}
            distinct_rounds = []
            latency_rounds = []
            for _ in range(args.rounds):
                for kind in kinds:
                    result = _throughput_round(
                        args, env, url, kind, warm["pid"], args.seconds, False
                    )
                    throughput.setdefault(kind, []).append(result)
                    print(f"{kind}: {json.dumps(result)}", file=sys.stderr)
                if "sdk" in kinds:
                    result = _throughput_round(
                        args, env, url, "sdk", warm["pid"], args.seconds / 2, True
                    )
                    distinct_rounds.append(result)
                    print(f"sdk, distinct: {json.dumps(result)}", file=sys.stderr)
                latency = _latency_round(args, env, url)
                latency_rounds.append(latency)
                print(f"get_dataset_info: {json.dumps(latency)}", file=sys.stderr)
            memory = _memory_kb(warm["pid"])
        finally:
            _stop(child)
    finally:
        shutil.rmtree(cache, ignore_errors=True)

    best_latency = min(latency_rounds, key=lambda r: r["p95_ms"])
    figures = {
        "machine": (
            f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
        ),
        "load_average_at_start": load_at_start,
        "concurrency": args.concurrency,
        "client_procs": args.client_procs,
        "startup_compiling_bytecode": {
            "spawn_to_first_initialize_s": round(cold["spawn_to_first_initialize_s"], 3),
            "child_import_s": round(cold["import_s"], 3),
            "child_load_app_bind_healthy_s": round(cold["start_s"], 3),
        },
        "startup_warm_bytecode": {
            "spawn_to_first_initialize_s": round(warm["spawn_to_first_initialize_s"], 3),
            "child_import_s": round(warm["import_s"], 3),
            "child_load_app_bind_healthy_s": round(warm["start_s"], 3),
        },
        "search_datasets": {kind: _best(rounds) for kind, rounds in throughput.items()},
        "search_datasets_distinct_sdk": _best(distinct_rounds) if distinct_rounds else None,
        "get_dataset_info_latency": {
            "best_p95": best_latency,
            "p95_ms_rounds": [r["p95_ms"] for r in latency_rounds],
        },
        "rss_after_start_mb": round(rss_started["VmRSS"] / 1024, 1),
        "rss_end_mb": round(memory["VmRSS"] / 1024, 1),
        "rss_peak_mb": round(memory["VmHWM"] / 1024, 1),
    }
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
