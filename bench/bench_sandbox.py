"""Benchmark of the local code sandbox: one call's cost, and a whole offline coder cell.

    python3 -m uv run python bench/bench_sandbox.py calls [--repeat 10]
    python3 -m uv run python bench/bench_sandbox.py cell [--cell KEY]

``calls`` times single calls (a Python no-op, one ``httpx.get`` through the allow-listing proxy
to a local server, the ``datagouv`` command) in warm mode (one zygote per backend, a forked
process per call) and in per-call mode (``warm=False``: ``bwrap`` and a new interpreter each
time). ``cell`` runs the offline coder cell against the in-process twin and times
``execute_cell`` alone (not the CLI's imports), in both modes. Call wall times are medians.
The cell's ``cpu`` is this process's own CPU time plus that of the children it reaped (the
zygote's share only once it has stopped), so it is indicative.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import datagouv_eval_pipeline
from datagouv_eval_pipeline.pipeline.agents.capabilities import CLI_MODULE
from datagouv_eval_pipeline.world.sandbox.local import LocalSandbox


def _sandbox(warm: bool) -> LocalSandbox:
    package = Path(datagouv_eval_pipeline.__file__).resolve().parent
    return LocalSandbox(python_packages=[package], commands={"datagouv": CLI_MODULE}, warm=warm)


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@contextmanager
def _server() -> Iterator[int]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b'{"data": []}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield httpd.server_address[1]
    finally:
        httpd.shutdown()
        httpd.server_close()


async def _time_calls(warm: bool, port: int, repeat: int) -> dict[str, float]:
    sandbox = _sandbox(warm)
    started = time.perf_counter()
    session = await sandbox.open_session(allowed_hosts=[f"127.0.0.1:{port}"])
    opened = (time.perf_counter() - started) * 1000
    get = f"import httpx\nprint(httpx.get('http://127.0.0.1:{port}/api/1/datasets/').status_code)"
    probes: dict[str, Any] = {
        "python: pass": ("python", "pass"),
        "python: httpx.get": ("python", get),
        "datagouv --help": ("command", ["datagouv", "--help"]),
    }
    results: dict[str, float] = {"open_session": opened}
    try:
        await session.run_python("pass")  # the zygote's start-up is not a call's cost
        for name, (kind, payload) in probes.items():
            walls = []
            for _ in range(repeat):
                began = time.perf_counter()
                if kind == "python":
                    result = await session.run_python(payload)
                else:
                    result = await session.run_command(payload)
                walls.append((time.perf_counter() - began) * 1000)
                if not result.ok:
                    raise RuntimeError(f"{name} failed: {result.reason} {result.stderr[-500:]}")
            results[name] = statistics.median(walls)
    finally:
        await session.close()
    return results


def bench_calls(repeat: int) -> None:
    """Print the median wall time of each kind of call, in both modes."""
    with _server() as port:
        for warm in (True, False):
            label = "warm (zygote)" if warm else "per-call bwrap"
            print(f"## {label}, {repeat} calls each")
            for name, wall in asyncio.run(_time_calls(warm, port, repeat)).items():
                print(f"  {name:20} {wall:7.0f} ms")


def bench_cell(cell_key: str) -> None:
    """Run the cell against the twin in both modes and print execute_cell's wall time."""
    from datagouv_eval_pipeline.cli.run_cell import _cell, _tasks
    from datagouv_eval_pipeline.core.benchmark.loader import BENCHMARK_CONFIG_DIR
    from datagouv_eval_pipeline.core.tasks.loader import TASK_SPECS_DIR
    from datagouv_eval_pipeline.pipeline.agents.runner import RunSettings, execute_cell
    from datagouv_eval_pipeline.world.api.server import TwinServer

    cell = _cell(BENCHMARK_CONFIG_DIR, cell_key)
    tasks = _tasks(TASK_SPECS_DIR, None)
    for warm in (True, False):
        server = TwinServer()
        with server as urls:
            began, cpu_before = time.perf_counter(), _cpu()
            run = execute_cell(
                cell,
                tasks,
                twin_urls=urls,
                snapshot_id=server.store.snapshot_id,
                settings=RunSettings(),
                sandbox=_sandbox(warm),
            )
            wall, cpu = time.perf_counter() - began, _cpu() - cpu_before
        calls = sum(len(trace.tool_calls) for trace in run.traces)
        ok = sum(trace.status == "ok" for trace in run.traces)
        label = "warm (zygote)" if warm else "per-call bwrap"
        print(
            f"{label:15} {cell_key}: {len(run.traces)} runs ({ok} ok), {calls} tool calls, "
            f"execute_cell {wall:5.1f} s wall, {cpu:5.1f} s cpu"
        )


def main() -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    calls = sub.add_parser("calls")
    calls.add_argument("--repeat", type=int, default=10)
    cell = sub.add_parser("cell")
    cell.add_argument("--cell", default="offline~baseline-coder__code__data_gouv_context")
    args = parser.parse_args()
    if args.what == "calls":
        bench_calls(args.repeat)
    else:
        bench_cell(args.cell)


if __name__ == "__main__":
    main()
