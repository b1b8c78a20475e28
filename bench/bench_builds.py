"""Time to install and start a real build of the MCP server, cold and cached.

The build is the real 0.2.14 server (``iflow-mcp-datagouv-datagouv-mcp==0.2.14``, as in
``mcp_versions.yml``). Each round uses a fresh builds directory (temporary):

* ``install, cold``: an empty uv cache too (``UV_CACHE_DIR`` temporary), so every wheel is
  downloaded from the package index: a first run on a clean machine;
* ``install, uv cache warm``: a new environment from uv's cache (a second build, or a
  checkout whose dependency files changed);
* ``install, cached``: the build found in the builds directory (every later run);
* ``start, first``: spawn to the port listening, right after the install (bytecode compiled on
  the way), then ``start, cached``: the same for a later start;
* ``tools/list``: the first MCP session's ``initialize`` + ``tools/list`` after start-up.

Run: ``python3 -m uv run python bench/bench_builds.py [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

from pydantic_ai.mcp import MCPToolset

from datagouv_eval_pipeline.core.benchmark.config import McpBuild
from datagouv_eval_pipeline.world.mcp_builds import BuildServer, install_build

BUILD = McpBuild(package="iflow-mcp-datagouv-datagouv-mcp==0.2.14")


def _tools_list(url: str) -> float:
    async def listed() -> float:
        started = time.perf_counter()
        async with MCPToolset(url) as toolset:
            await toolset.list_tools()
        return time.perf_counter() - started

    return asyncio.run(listed())


def _round(cold_uv: bool) -> dict[str, float]:
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as builds, tempfile.TemporaryDirectory() as uv_cache:
        saved = os.environ.get("UV_CACHE_DIR")
        if cold_uv:
            os.environ["UV_CACHE_DIR"] = uv_cache
        try:
            started = time.perf_counter()
            installed = install_build(BUILD, Path(builds))
            label = "install, cold" if cold_uv else "install, uv cache warm"
            figures[label] = time.perf_counter() - started
        finally:
            if saved is None:
                os.environ.pop("UV_CACHE_DIR", None)
            else:
                os.environ["UV_CACHE_DIR"] = saved
        started = time.perf_counter()
        installed = install_build(BUILD, Path(builds))
        figures["install, cached"] = time.perf_counter() - started
        assert not installed.installed
        for label in ("start, first", "start, cached"):
            with BuildServer(installed, {}) as server:
                figures[label] = server.seconds
                if label == "start, cached":
                    figures["tools/list"] = _tools_list(server.url)
    return figures


def main() -> None:
    """Run the rounds and print the best and the median of each figure."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"python {platform.python_version()}, {os.cpu_count()} CPUs, load {os.getloadavg()}")
    results: dict[str, list[float]] = {}
    for index in range(args.rounds):
        for cold in (True, False):
            for label, seconds in _round(cold).items():
                results.setdefault(label, []).append(seconds)
        print(f"round {index + 1} done, load {os.getloadavg()[0]:.1f}")
    order = [
        "install, cold",
        "install, uv cache warm",
        "install, cached",
        "start, first",
        "start, cached",
        "tools/list",
    ]
    for label in order:
        values = results[label]
        best, median = min(values), statistics.median(values)
        print(f"{label:24s} best {best * 1000:9.1f} ms   median {median * 1000:9.1f} ms")


if __name__ == "__main__":
    main()
