"""Live mode (the same tools over real HTTP to other base URLs) and the server's MCP URLs."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from datagouv_eval_pipeline.world.api.app import create_app
from datagouv_eval_pipeline.world.api.front import twin_front
from datagouv_eval_pipeline.world.api.server import TwinServer
from datagouv_eval_pipeline.world.catalogue.catalog import CatalogStore
from datagouv_eval_pipeline.world.catalogue.urls import TwinUrls
from datagouv_eval_pipeline.world.mcp.client import call_tools_sync, result_text
from datagouv_eval_pipeline.world.mcp.server import mcp_url, mcp_urls, mount_mcp
from datagouv_eval_pipeline.world.mcp.upstream import Upstream

TRANSPORTS = "55e4129788ee386899a46ec1"


def call_text(urls: TwinUrls, version: str, name: str, args: dict[str, Any]) -> str:
    """Call one tool; it must not be an ``isError`` result."""
    (result,) = call_tools_sync(mcp_url(urls.site, version), [(name, args)])
    text = result_text(result)
    assert not result.is_error, text
    assert result.structured_content == {"result": text}
    return text


def _tool_text(client: TestClient, version: str, name: str, args: dict[str, Any]) -> str:
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": name, "arguments": args},
    }
    response = client.post(
        f"/mcp/v{version}/mcp",
        json=call,
        headers={"Accept": "application/json, text/event-stream"},
    )
    assert response.status_code == 200, response.text
    data = next(line for line in response.text.splitlines() if line.startswith("data: "))
    text: str = json.loads(data[len("data: ") :])["result"]["content"][0]["text"]
    return text


def test_live_mode_is_the_same_code_pointed_elsewhere(
    live_twin: TwinUrls, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An MCP app whose upstream is production: here the running twin, through the front."""
    with twin_front(live_twin, home=tmp_path) as front:
        for name, value in front.client_env().items():
            monkeypatch.setenv(name, value)
        _compare_live_and_in_process(live_twin)


def _compare_live_and_in_process(live_twin: TwinUrls) -> None:
    app = mount_mcp(Starlette(), ["0.2.26"], upstream=Upstream.live(TwinUrls.live()))
    with TestClient(app, base_url="http://127.0.0.1:9") as client:
        remote = _tool_text(client, "0.2.26", "get_dataset_info", {"dataset_id": TRANSPORTS})
        rows = _tool_text(
            client,
            "0.2.26",
            "query_resource_data",
            {"resource_id": "d8581b5b-3372-4e73-9323-036e543e2bef", "page_size": 1},
        )
    assert remote == call_text(live_twin, "0.2.26", "get_dataset_info", {"dataset_id": TRANSPORTS})
    assert "Total rows (Tabular API): 144\n" in rows


def test_create_app_serves_mcp_in_process_and_can_leave_it_out(store: CatalogStore) -> None:
    with TestClient(create_app(store), base_url="http://127.0.0.1:9") as client:
        text = _tool_text(client, "0.2.19", "get_dataset_info", {"dataset_id": TRANSPORTS})
        assert text.startswith("Dataset Information: Transports\n\nID: ")
        # Links are production URLs (the twin answers for them behind the front), whatever
        # host and port the MCP client used.
        assert "URL: https://www.data.gouv.fr/datasets/transports/" in text
    bare = TestClient(create_app(store, mcp_versions=()))
    assert bare.post("/mcp/v0.2.26/mcp", json={}).status_code == 404


def test_twin_server_lists_its_mcp_urls(store: CatalogStore) -> None:
    assert mcp_urls("http://127.0.0.1:8765/") == {
        "0.2.5": "http://127.0.0.1:8765/mcp/v0.2.5/mcp",
        "0.2.14": "http://127.0.0.1:8765/mcp/v0.2.14/mcp",
        "0.2.19": "http://127.0.0.1:8765/mcp/v0.2.19/mcp",
        "0.2.26": "http://127.0.0.1:8765/mcp/v0.2.26/mcp",
    }
    server = TwinServer(store, mcp_versions=["0.2.26"])
    with server as urls:
        assert server.mcp_urls == {"0.2.26": f"{urls.site}mcp/v0.2.26/mcp"}
        text = call_text(urls, "0.2.26", "get_dataset_info", {"dataset_id": TRANSPORTS})
        assert text.startswith("Dataset Information: Transports")
        assert httpx.post(f"{urls.site}mcp/v0.2.5/mcp", json={}).status_code == 404


def test_upstream_cache_replays_answers_and_keeps_its_budget() -> None:
    from datagouv_eval_pipeline.world.mcp.upstream import _TwinTransport

    hits: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        path = scope["path"]
        hits.append(path)
        status = 404 if path == "/missing" else 200
        body = b"x" * (200 if path == "/big" else 80)
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": body})

    async def run() -> list[int]:
        # Budget 1,600 bytes, one answer at most 100: twenty 80-byte answers fill it.
        transport = _TwinTransport(app, frozenset({"127.0.0.1"}), cache_bytes=1600)
        statuses = []
        async with httpx.AsyncClient(transport=transport) as client:
            for path in ["/a", "/a", "/missing", "/missing", "/big", "/big"]:
                statuses.append((await client.get(f"http://127.0.0.1:9{path}")).status_code)
            await client.post("http://127.0.0.1:9/a")
            for n in range(19):  # /a, /missing and 19 more: over budget, /a goes first
                await client.get(f"http://127.0.0.1:9/p{n}")
            await client.get("http://127.0.0.1:9/missing")
            await client.get("http://127.0.0.1:9/a")
        return statuses

    statuses = asyncio.run(run())
    assert statuses == [200, 200, 404, 404, 200, 200]
    # Repeated GETs (errors included) are replayed; POSTs and oversized answers are not;
    # the least recently used answer is dropped when the budget is exceeded.
    assert hits == ["/a", "/missing", "/big", "/big", "/a"] + [f"/p{n}" for n in range(19)] + ["/a"]
