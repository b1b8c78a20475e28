"""A server whose tools answer with ``structuredContent``: the trace keeps what the model read.

pydantic-ai gives the model a result's ``structuredContent`` when its content blocks are all
text, and an MCP App tool's result comes back wrapped in a ``ToolReturn``. The trace's
``result`` must be what the model received, with the wire text beside it when it differs.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

from datagouv_eval_pipeline.base.serving import BackgroundUvicorn
from datagouv_eval_pipeline.core.benchmark.cells import Cell
from datagouv_eval_pipeline.core.tasks.spec import TaskSpec
from datagouv_eval_pipeline.pipeline.agents.baselines.policy import observations_of
from datagouv_eval_pipeline.pipeline.agents.runner import run_cell
from datagouv_eval_pipeline.world.api.server import TwinServer

from .helpers import factory, key_of, responses

MARKDOWN = "# Transports\n\n3 ressources."
PREFAB = {"$prefab": {"type": "Column", "children": [{"type": "Markdown", "text": MARKDOWN}]}}


def _server() -> MCPServer:
    server = MCPServer("structured")

    @server.tool(structured_output=True)
    def dataset_facts(dataset_id: str) -> dict[str, Any]:
        """Facts of a dataset as an object (structuredContent plus its JSON as text)."""
        return {"id": dataset_id, "resources": 3}

    @server.tool(meta={"ui": {"resourceUri": "ui://prefab/dataset"}})
    def show_dataset(dataset_id: str) -> CallToolResult:
        """An MCP App tool: markdown on the wire, a UI tree as structuredContent."""
        return CallToolResult(
            content=[TextContent(type="text", text=MARKDOWN)], structured_content=PREFAB
        )

    @server.tool()
    def plain(dataset_id: str) -> str:
        """Text only: the model reads the wire text."""
        return f"Dataset {dataset_id}"

    return server


@pytest.fixture(scope="module")
def structured_url() -> Iterator[str]:
    mcp_app = _server().streamable_http_app(stateless_http=True)

    async def health(_request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with mcp_app.router.lifespan_context(mcp_app):
            yield

    app = Starlette(routes=[Route("/health", health), Mount("/", app=mcp_app)], lifespan=lifespan)
    runner = BackgroundUvicorn(
        "structured MCP",
        lambda port: uvicorn.Config(app, port=port, log_level="warning"),
        "/health",
    )
    port = runner.start(host="127.0.0.1", port=0)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        runner.stop()


def test_the_trace_records_what_the_model_received(
    structured_url: str, cells: dict[str, Cell], twin: TwinServer, tasks: dict[str, TaskSpec]
) -> None:
    seen: dict[str, str] = {}
    calls = [("dataset_facts", "c1"), ("show_dataset", "c2"), ("plain", "c3")]

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        for message in messages:
            for part in message.parts:
                if isinstance(part, ToolReturnPart):
                    assert isinstance(part.content, str)
                    seen[part.tool_call_id] = part.content
        step = responses(messages)
        if step < len(calls):
            tool, call_id = calls[step]
            return ModelResponse(parts=[ToolCallPart(tool, {"dataset_id": "d1"}, call_id)])
        observed = {o.tool: o.text for o in observations_of(messages)}
        assert observed == {tool: seen[call_id] for tool, call_id in calls}
        final = {"answer": "Trois.", "cited_urls": [], "ids_used": []}
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, final, "c4")])

    (trace,) = run_cell(
        cells[key_of("baseline-thorough", "mcp@0.2.26")],
        [tasks["task_0003"]],
        twin_urls=twin.urls,
        mcp_url=structured_url,
        model_factory=factory(FunctionModel(respond, model_name="scripted")),
    )
    assert trace.status == "ok", trace.status_reason
    by_name = {call.name: call for call in trace.tool_calls}
    # Every recorded result is exactly what the model was given.
    assert {call.id: call.result for call in trace.tool_calls} == seen
    facts = by_name["dataset_facts"]
    assert json.loads(facts.result) == {"id": "d1", "resources": 3}
    assert facts.wire_result is not None
    assert json.loads(facts.wire_result) == {"id": "d1", "resources": 3}
    # The App tool: the model got the structured UI tree, not the wrapper's repr.
    shown = by_name["show_dataset"]
    assert json.loads(shown.result) == PREFAB
    assert "ToolReturn" not in shown.result
    assert shown.wire_result == MARKDOWN
    # Text only: nothing differs, nothing is kept twice.
    assert by_name["plain"].result == "Dataset d1"
    assert by_name["plain"].wire_result is None
