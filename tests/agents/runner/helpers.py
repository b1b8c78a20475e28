"""Helpers of the agent-run tests: scripted models, a fake clock, cell variants."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from datagouv_eval_pipeline.core.benchmark.cells import Cell, CellModel
from datagouv_eval_pipeline.pipeline.agents.output import FinalAnswer

ScriptStep = tuple[str, dict[str, Any]] | FinalAnswer


def key_of(model: str, setup: str) -> str:
    return f"offline~{model}__{setup}__data_gouv_context"


def responses(messages: Sequence[ModelMessage]) -> int:
    return sum(isinstance(m, ModelResponse) for m in messages)


def scripted(steps: Sequence[ScriptStep], name: str = "scripted") -> FunctionModel:
    """A model that makes the given tool calls in order, then gives the final answer."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = steps[min(responses(messages), len(steps) - 1)]
        call_id = f"call_{responses(messages) + 1}"
        if isinstance(step, FinalAnswer):
            return ModelResponse(
                parts=[
                    ToolCallPart(info.output_tools[0].name, step.model_dump(), tool_call_id=call_id)
                ]
            )
        tool, args = step
        return ModelResponse(parts=[ToolCallPart(tool, args, tool_call_id=call_id)])

    return FunctionModel(respond, model_name=name)


def factory(model: FunctionModel) -> Callable[[CellModel], FunctionModel]:
    return lambda _cell_model: model


def last_returns(messages: Sequence[ModelMessage]) -> list[ToolReturnPart]:
    last = messages[-1]
    return [part for part in last.parts if isinstance(part, ToolReturnPart)]


def variant(cell: Cell, **changes: Any) -> Cell:
    """A copy of ``cell`` with other fields (the key is suffixed so it stays distinct)."""
    return dataclasses.replace(cell, key=cell.key + "__test", **changes)


@dataclasses.dataclass
class FakeClock:
    """Monotonic time that only moves when something sleeps."""

    now_s: float = 0.0
    slept: list[float] = dataclasses.field(default_factory=list)

    def now(self) -> float:
        return self.now_s

    async def sleep(self, seconds: float) -> None:
        if seconds > 0:
            self.slept.append(seconds)
            self.now_s += seconds
