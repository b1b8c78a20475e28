"""A toolset that dies mid-run ends the run as an infrastructure error, not an agent fault."""

from __future__ import annotations

from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from datagouv_eval_pipeline.core.benchmark.cells import Cell
from datagouv_eval_pipeline.core.tasks.spec import TaskSpec
from datagouv_eval_pipeline.pipeline.agents.runner import run_cell
from datagouv_eval_pipeline.world.api.server import TwinServer

from .helpers import factory, key_of, responses

DATASET = "5d13a8b6634f41070a43dff3"


def test_an_mcp_server_that_dies_mid_run_is_an_infrastructure_error(
    cells: dict[str, Cell], tasks: dict[str, TaskSpec]
) -> None:
    server = TwinServer()  # its own twin: this test stops it
    urls = server.start()

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = responses(messages)
        call = f"call_{step + 1}"
        if step == 1:
            server.stop()  # the MCP server dies between two calls
        if step < 2:
            args = {"dataset_id": DATASET}
            return ModelResponse(parts=[ToolCallPart("list_dataset_resources", args, call)])
        final = {"answer": "Terminé.", "cited_urls": [], "ids_used": []}
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, final, call)])

    try:
        (trace,) = run_cell(
            cells[key_of("baseline-thorough", "mcp@0.2.26")],
            [tasks["task_0003"]],
            twin_urls=urls,
            model_factory=factory(FunctionModel(respond, model_name="scripted")),
        )
    finally:
        server.stop()
    assert [call.error for call in trace.tool_calls] == [False, True]
    assert trace.status == "error", trace.tool_calls[1].result
    assert trace.status_reason is not None
    assert trace.status_reason.startswith(
        "infrastructure: tool 'list_dataset_resources': the toolset "
    ), trace.status_reason


def test_a_tool_error_of_a_live_server_is_still_the_agents(
    cells: dict[str, Cell], twin: TwinServer, tasks: dict[str, TaskSpec]
) -> None:
    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        call = f"call_{responses(messages) + 1}"
        if responses(messages) == 0:
            args = {"dataset_id": "does-not-exist"}
            return ModelResponse(parts=[ToolCallPart("list_dataset_resources", args, call)])
        final = {"answer": "Terminé.", "cited_urls": [], "ids_used": []}
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, final, call)])

    (trace,) = run_cell(
        cells[key_of("baseline-thorough", "mcp@0.2.26")],
        [tasks["task_0003"]],
        twin_urls=twin.urls,
        model_factory=factory(FunctionModel(respond, model_name="scripted")),
    )
    assert trace.status == "ok", trace.status_reason
