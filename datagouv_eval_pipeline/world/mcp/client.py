"""A small MCP client for the twin's endpoints (tests, benchmarks, smoke checks).

It is the SDK's own client (``mcp.Client`` over streamable HTTP) with the handshake-era
``initialize`` the real server speaks, wrapped for one-off use from synchronous code::

    url = mcp_url(urls.site, "0.2.26")
    (result,) = call_tools_sync(url, [("get_dataset_info", {"dataset_id": "…"})])
    print(result_text(result))
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from mcp import Client
from mcp_types import CallToolResult, TextContent

ToolCall = tuple[str, dict[str, Any]]


async def call_tools(url: str, calls: Sequence[ToolCall]) -> list[CallToolResult]:
    """Open one MCP session on ``url`` and make the calls in order."""
    async with Client(url, mode="legacy") as client:
        results = []
        for name, arguments in calls:
            result = await client.call_tool(name, arguments)
            if not isinstance(result, CallToolResult):
                raise TypeError(f"{name}: expected a CallToolResult, got {type(result).__name__}")
            results.append(result)
        return results


def call_tools_sync(url: str, calls: Sequence[ToolCall]) -> list[CallToolResult]:
    """Run :func:`call_tools` in a fresh event loop (not from inside a running loop)."""
    return asyncio.run(call_tools(url, calls))


async def list_tools(url: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Return ``tools/list`` as wire JSON and the ``serverInfo`` of ``initialize``."""
    async with Client(url, mode="legacy") as client:
        listed = await client.list_tools()
        init = client.session.initialize_result
        info = init.server_info.model_dump(mode="json", exclude_none=True) if init else {}
        tools = [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in listed.tools]
        return tools, info


def result_text(result: CallToolResult) -> str:
    """Return the text of a tool result (its text blocks joined by newlines)."""
    return "\n".join(b.text for b in result.content if isinstance(b, TextContent))
