"""The catalog resource starts a cell's real MCP build for the run and stops it at teardown."""

from __future__ import annotations

import asyncio

import dagster as dg
import psutil  # type: ignore[import-untyped]
from pydantic_ai.mcp import MCPToolset

from datagouv_eval_pipeline.core.benchmark.cells import expand_cells
from datagouv_eval_pipeline.core.benchmark.loader import load_benchmark_config
from datagouv_eval_pipeline.defs.resources import CatalogResource

BUILD_CELL = "offline~baseline-thorough__mcp@0.2.14~build__data_gouv_context"


def _search(url: str) -> str:
    async def call() -> str:
        async with MCPToolset(url) as toolset:
            return str(await toolset.direct_call_tool("search_datasets", {"query": "carburants"}))

    return asyncio.run(call())


def test_the_build_reads_the_twin_and_stops_with_the_run() -> None:
    cells = {c.key: c for c in expand_cells(load_benchmark_config(), ["real_mcp_server"])}
    with dg.build_resources({"catalog": CatalogResource()}) as resources:
        catalog: CatalogResource = resources.catalog
        endpoint = catalog.builds().endpoint(cells[BUILD_CELL])
        assert endpoint is not None
        (server,) = catalog.builds().servers.values()
        pid = server.pid
        assert pid is not None and psutil.pid_exists(pid)
        # Its production hostnames are answered by the twin (through the front).
        answer = _search(endpoint.url)
        assert "Prix des carburants" in answer and "https://www.data.gouv.fr/datasets/" in answer
        # Cells of the twin's emulation need no build.
        emulation = cells["offline~baseline-thorough__mcp@0.2.19__data_gouv_context"]
        assert catalog.builds().endpoint(emulation) is None
    assert not psutil.pid_exists(pid)
