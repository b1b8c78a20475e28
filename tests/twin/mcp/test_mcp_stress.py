"""Client disconnects and concurrent calls, as the real server's own stress test does.

100 raw HTTP/1.1 POSTs of a ``tools/call search_datasets`` (no ``initialize``: the endpoints
are stateless), at most 20 at a time, on loopback. Every even-numbered client hangs up right
after writing its request; every odd one must get a 200 with a search result. Afterwards the
server must still answer /health and ordinary MCP calls. Everything is bounded by timeouts.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import urlsplit

from mcp import Client
from mcp_types import CallToolResult

from datagouv_eval_pipeline.world.catalogue.urls import TwinUrls
from datagouv_eval_pipeline.world.mcp.client import call_tools_sync, result_text
from datagouv_eval_pipeline.world.mcp.server import mcp_url

QUERIES = ("transport", "education", "sante", "energie", "elections")
REQUESTS = 100
CONCURRENCY = 20
PATH = "/mcp/v0.2.26/mcp"


def call_many(
    urls: TwinUrls, version: str, calls: list[tuple[str, dict[str, Any]]]
) -> list[CallToolResult]:
    return call_tools_sync(mcp_url(urls.site, version), calls)


def text_of(result: CallToolResult) -> str:
    assert len(result.content) == 1
    return result_text(result)


def _request(host: str, index: int) -> bytes:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": index,
            "method": "tools/call",
            "params": {
                "name": "search_datasets",
                "arguments": {"query": QUERIES[index % len(QUERIES)], "page_size": 5},
            },
        }
    ).encode()
    head = (
        f"POST {PATH} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        "Accept: text/event-stream, application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


async def _one(host: str, port: int, index: int, gate: asyncio.Semaphore) -> str:
    async with gate:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 10)
        writer.write(_request(f"{host}:{port}", index))
        await writer.drain()
        if index % 2 == 0:
            writer.transport.abort()  # hang up abruptly, without reading
            return "disconnected"
        try:
            data = await asyncio.wait_for(reader.read(-1), 30)
        finally:
            writer.close()
        text = data[:65536].decode("utf-8", errors="replace")
        ok = text.startswith("HTTP/1.1 200 OK") and "Found " in text and '"isError":false' in text
        return "ok" if ok else f"bad: {text[:300]!r}"


async def _storm(host: str, port: int) -> list[str]:
    gate = asyncio.Semaphore(CONCURRENCY)
    jobs = [_one(host, port, i, gate) for i in range(REQUESTS)]
    return await asyncio.wait_for(asyncio.gather(*jobs), 90)


def test_disconnects_and_concurrency(live_twin: TwinUrls) -> None:
    parts = urlsplit(live_twin.site)
    assert parts.hostname == "127.0.0.1" and parts.port is not None
    outcomes = asyncio.run(_storm(parts.hostname, parts.port))
    assert outcomes.count("disconnected") == 50
    assert [o for o in outcomes if o not in ("ok", "disconnected")] == []
    assert outcomes.count("ok") == 50
    # Still healthy: the deep /health probe and a normal session with concurrent-safe state.
    health = asyncio.run(_health(parts.hostname, parts.port))
    assert health.startswith("HTTP/1.1 200 OK") and '"status":"ok"' in health
    results = call_many(
        live_twin, "0.2.26", [("get_dataset_info", {"dataset_id": "55e4129788ee386899a46ec1"})] * 3
    )
    assert [text_of(r).split("\n")[0] for r in results] == ["Dataset Information: Transports"] * 3


async def _health(host: str, port: int) -> str:
    reader, writer = await asyncio.open_connection(host, port)
    request = (
        f"GET /mcp/v0.2.26/health HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n"
    )
    writer.write(request.encode())
    await writer.drain()
    data = await asyncio.wait_for(reader.read(-1), 30)
    writer.close()
    return data.decode()


def test_concurrent_sessions_get_their_own_answers(live_twin: TwinUrls) -> None:
    """Interleaved calls of different releases and tools never mix their answers."""

    async def one(version: str, dataset_id: str) -> str:
        async with Client(f"{live_twin.site}mcp/v{version}/mcp") as client:
            result = await client.call_tool("get_dataset_info", {"dataset_id": dataset_id})
            return text_of(result).split("\n")[2]

    async def run() -> list[str]:
        ids = ["55e4129788ee386899a46ec1", "5d13a8b6634f41070a43dff3"] * 10
        versions = ["0.2.5", "0.2.19", "0.2.26", "0.2.26"] * 5
        return await asyncio.gather(*(one(v, d) for v, d in zip(versions, ids, strict=True)))

    lines = asyncio.run(asyncio.wait_for(run(), 60))
    expected = ["ID: 55e4129788ee386899a46ec1", "ID: 5d13a8b6634f41070a43dff3"] * 10
    assert lines == expected
