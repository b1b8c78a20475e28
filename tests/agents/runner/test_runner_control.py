"""Run control: tool errors, budgets, concurrency, rate-limit waits (scripted models)."""

from __future__ import annotations

import asyncio

from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ThinkingPart,
    ToolCallPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from datagouv_eval_pipeline.core.benchmark.cells import Cell
from datagouv_eval_pipeline.core.metrics import efficiency_score
from datagouv_eval_pipeline.core.providers.limits import RateLimit, RateLimiters
from datagouv_eval_pipeline.core.tasks.spec import TaskSpec
from datagouv_eval_pipeline.core.traces import ModelTurn
from datagouv_eval_pipeline.pipeline.agents.limits import RunBudget
from datagouv_eval_pipeline.pipeline.agents.output import FinalAnswer
from datagouv_eval_pipeline.pipeline.agents.runner import RunSettings, run_cell
from datagouv_eval_pipeline.world.api.server import TwinServer

from .helpers import FakeClock, factory, key_of, last_returns, responses, scripted, variant

DONE = FinalAnswer(answer="Terminé.", cited_urls=[], ids_used=[])


def web_cell(cells: dict[str, Cell]) -> Cell:
    base = cells[key_of("baseline-thorough", "mcp@0.2.26+web_search")]
    return variant(base, capabilities=("web_search",), mcp_version=None, mcp_url=None)


def test_tool_errors_are_shown_to_the_model_and_the_run_goes_on(
    cells: dict[str, Cell], twin: TwinServer, tasks: dict[str, TaskSpec]
) -> None:
    model = scripted(
        [
            ("http_fetch", {"url": "file:///etc/passwd"}),
            ("http_fetch", {"url": "http://10.1.2.3/admin"}),
            ("http_fetch", {"url": "https://example.org/"}),
            ("web_search", {"query": "catalogue"}),
            DONE,
        ]
    )
    (trace,) = run_cell(
        web_cell(cells), [tasks["task_0003"]], twin_urls=twin.urls, model_factory=factory(model)
    )
    assert trace.status == "ok", trace.status_reason
    assert trace.answer == "Terminé."
    assert [call.error for call in trace.tool_calls] == [True, True, True, False]
    assert "only http and https URLs" in trace.tool_calls[0].result
    assert "non-public address (10.1.2.3)" in trace.tool_calls[1].result
    assert "offline mode" in trace.tool_calls[2].result
    assert "Catalogue des données de data.gouv.fr" in trace.tool_calls[3].result


def test_mcp_tool_errors_do_not_abort_the_run(
    cells: dict[str, Cell], twin: TwinServer, tasks: dict[str, TaskSpec]
) -> None:
    model = scripted(
        [
            ("get_dataset_info", {"dataset_id": "does-not-exist"}),
            ("get_resource_info", {}),  # missing required argument: a validation retry
            ("list_dataset_resources", {"dataset_id": "5d13a8b6634f41070a43dff3"}),
            DONE,
        ]
    )
    cell = cells[key_of("baseline-thorough", "mcp@0.2.26")]
    (trace,) = run_cell(
        cell, [tasks["task_0003"]], twin_urls=twin.urls, model_factory=factory(model)
    )
    assert trace.status == "ok", trace.status_reason
    names = [call.name for call in trace.tool_calls]
    assert names == ["get_dataset_info", "get_resource_info", "list_dataset_resources"]
    # The MCP server reports an unknown id as text (as the real one does), not as an exception.
    assert trace.tool_calls[0].result.startswith("Error: Dataset with ID")
    assert trace.tool_calls[1].error is True  # arguments failed validation
    assert trace.tool_calls[2].error is False


def test_request_budget_ends_the_run_with_a_reason(
    cells: dict[str, Cell], twin: TwinServer, tasks: dict[str, TaskSpec]
) -> None:
    settings = RunSettings(budget=RunBudget(max_requests=3))
    (trace,) = run_cell(
        cells[key_of("baseline-thorough", "mcp@0.2.26")],
        [tasks["task_0005"]],
        twin_urls=twin.urls,
        settings=settings,
    )
    assert trace.status == "budget_exceeded"
    assert "request_limit of 3" in (trace.status_reason or "")
    # The three requests that were made are recorded, with their tool calls and results
    # (the second asks for the dataset info and its resources together).
    assert trace.usage.requests == 3
    assert [call.name for call in trace.tool_calls] == [
        "search_datasets",
        "get_dataset_info",
        "list_dataset_resources",
        "get_resource_info",
    ]
    assert trace.answer == "" and trace.declined is None


def test_wall_clock_budget_ends_a_stuck_run(
    cells: dict[str, Cell], twin: TwinServer, tasks: dict[str, TaskSpec]
) -> None:
    async def stuck(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if responses(messages) == 0:
            return ModelResponse(
                parts=[ToolCallPart("search_datasets", {"query": "catalogue"}, tool_call_id="c1")]
            )
        await asyncio.sleep(30)
        raise AssertionError("the budget should have stopped the run")

    settings = RunSettings(budget=RunBudget(wall_timeout_s=0.5))
    (trace,) = run_cell(
        cells[key_of("baseline-thorough", "mcp@0.2.26")],
        [tasks["task_0003"]],
        twin_urls=twin.urls,
        settings=settings,
        model_factory=factory(FunctionModel(stuck)),
    )
    assert trace.status == "budget_exceeded"
    assert trace.status_reason == "wall-clock budget of 0.5 s exceeded"
    assert [call.name for call in trace.tool_calls] == ["search_datasets"]


def test_task_runs_are_concurrent_and_capped(
    cells: dict[str, Cell], twin: TwinServer, tasks: dict[str, TaskSpec]
) -> None:
    in_flight = 0
    peak = 0
    gate = asyncio.Event()

    async def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        if peak == 2:
            gate.set()
        # Without concurrency nobody would ever open the gate: the run would hit its budget.
        await asyncio.wait_for(gate.wait(), timeout=10)
        in_flight -= 1
        answer = FinalAnswer(answer="ok")
        return ModelResponse(
            parts=[ToolCallPart(info.output_tools[0].name, answer.model_dump(), tool_call_id="a")]
        )

    traces = run_cell(
        cells[key_of("baseline-thorough", "mcp@0.2.26")],
        [tasks["task_0003"], tasks["task_0010"]],
        twin_urls=twin.urls,
        repeats=2,
        settings=RunSettings(max_concurrency=2),
        model_factory=factory(FunctionModel(model)),
    )
    assert [t.status for t in traces] == ["ok"] * 4
    assert peak == 2  # two at once, never more than the cap


def test_rate_limit_waits_are_recorded_and_excluded_from_net_latency(
    cells: dict[str, Cell], twin: TwinServer, tasks: dict[str, TaskSpec]
) -> None:
    clock = FakeClock()
    # 60 requests per minute: requests are spaced one second apart.
    limiters = RateLimiters({"offline": RateLimit(requests_per_minute=60)}, clock=clock)
    (trace,) = run_cell(
        cells[key_of("baseline-oneshot", "mcp@0.2.26")],
        [tasks["task_0003"]],
        twin_urls=twin.urls,
        rate_limiters=limiters,
        clock=clock,
    )
    assert trace.status == "ok"
    # One request per search (an empty search is retried with a word fewer), then the
    # answer: each request after the first waits exactly 1 s for its slot. The fake clock
    # only moves while waiting, so the whole wall latency is those waits.
    requests = len(trace.tool_calls) + 1
    assert trace.usage.requests == requests and 2 <= requests <= 7
    assert clock.slept == [1.0] * (requests - 1)
    waited = 1000.0 * (requests - 1)
    assert trace.rate_limit_wait_ms == waited
    assert trace.latency_ms == waited
    efficiency = efficiency_score(trace)
    assert efficiency.wall_latency_ms == waited
    assert efficiency.latency_ms.value == 0.0


def test_reasoning_parts_are_kept(
    cells: dict[str, Cell], twin: TwinServer, tasks: dict[str, TaskSpec]
) -> None:
    def thinking(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        answer = FinalAnswer(answer="ok")
        return ModelResponse(
            parts=[
                ThinkingPart("Je cherche d'abord le catalogue."),
                ToolCallPart(info.output_tools[0].name, answer.model_dump(), tool_call_id="a"),
            ]
        )

    (trace,) = run_cell(
        cells[key_of("baseline-thorough", "mcp@0.2.26")],
        [tasks["task_0003"]],
        twin_urls=twin.urls,
        model_factory=factory(FunctionModel(thinking)),
    )
    assert trace.status == "ok"
    assert trace.reasoning == ["Je cherche d'abord le catalogue."]
    assert trace.tool_calls == []  # the final answer is not a tool call of the trace


def test_live_web_search_without_ddgs_skips_the_cell(
    cells: dict[str, Cell], tasks: dict[str, TaskSpec]
) -> None:
    (trace,) = run_cell(web_cell(cells), [tasks["task_0003"]], twin_urls=None)
    assert trace.status == "skipped"
    assert "needs the 'ddgs' package" in (trace.status_reason or "")
    assert trace.provenance.snapshot_id is None


def test_traces_keep_whole_results_and_the_turns_that_made_the_calls(
    cells: dict[str, Cell], twin: TwinServer, tasks: dict[str, TaskSpec]
) -> None:
    seen: list[str] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if responses(messages) == 0:
            return ModelResponse(
                parts=[
                    TextPart("I search the catalogue."),
                    ToolCallPart("search_datasets", {"query": "catalogue"}, tool_call_id="s1"),
                ]
            )
        seen.extend(str(part.content) for part in last_returns(messages))
        answer = FinalAnswer(answer="ok")
        return ModelResponse(
            parts=[ToolCallPart(info.output_tools[0].name, answer.model_dump(), tool_call_id="f")]
        )

    (trace,) = run_cell(
        cells[key_of("baseline-thorough", "mcp@0.2.26")],
        [tasks["task_0002"]],
        twin_urls=twin.urls,
        model_factory=factory(FunctionModel(respond)),
        settings=RunSettings(model_result_chars=200),
    )
    assert trace.status == "ok", trace.status_reason
    (call,) = trace.tool_calls
    # The model saw 200 characters and a marker; the trace keeps the whole result.
    assert seen[0].startswith(call.result[:200]) and "truncated" in seen[0][200:]
    assert len(call.result) > 200 and call.result_chars is None
    assert call.shown_chars == 200
    assert trace.turns == [
        ModelTurn(text="I search the catalogue.", tool_call_ids=["s1"]),
        ModelTurn(final=True),
    ]
