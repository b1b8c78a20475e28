"""Scripted judge models (FunctionModel) and small builders for the judge tests."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from datagouv_eval_pipeline.core.judges.config import RoleModel
from datagouv_eval_pipeline.core.judges.llm import LLMJudge
from datagouv_eval_pipeline.core.providers.retry import RetryPolicy
from datagouv_eval_pipeline.core.tasks.loader import TASK_SPECS_DIR, load_task_specs
from datagouv_eval_pipeline.core.tasks.spec import TaskSpec
from datagouv_eval_pipeline.core.traces import Trace, load_trace

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples" / "traces"

_TASKS: dict[str, TaskSpec] = {}


def real_tasks() -> dict[str, TaskSpec]:
    if not _TASKS:
        _TASKS.update({task.task_id: task for task in load_task_specs([TASK_SPECS_DIR])})
    return _TASKS


def example_trace(name: str) -> Trace:
    return load_trace(EXAMPLES / name)


def output_kind(info: AgentInfo) -> str:
    """Which question a request asks, from the output tool's schema."""
    properties = info.output_tools[0].parameters_json_schema.get("properties", {})
    if "grounded" in properties:
        return "criterion"
    if "score" in properties:
        return "trajectory"
    if "matches" in properties:
        return "arguments"
    if "HALLUCINATION" in properties:
        return "failure_modes"
    return "classification"


@dataclass
class Request:
    """One request the scripted model received."""

    kind: str
    instructions: str
    prompt: str
    settings: dict[str, Any]


@dataclass
class Grader:
    """A FunctionModel script: ``answers[kind](prompt)`` gives the output tool's arguments.

    An answer may also be an exception instance (raised), or ``"sleep"`` (never returns in time).
    """

    answers: dict[str, Callable[[str], Any]]
    input_tokens: int = 100
    output_tokens: int = 20
    requests: list[Request] = field(default_factory=list)

    async def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        kind = output_kind(info)
        prompt = next(
            part.content
            for message in reversed(messages)
            for part in getattr(message, "parts", [])
            if isinstance(part, UserPromptPart) and isinstance(part.content, str)
        )
        self.requests.append(
            Request(kind, info.instructions or "", prompt, dict(info.model_settings or {}))
        )
        answer = self.answers[kind](prompt)
        if isinstance(answer, BaseException):
            raise answer
        if answer == "sleep":
            await asyncio.sleep(30)
        return ModelResponse(
            parts=[ToolCallPart(info.output_tools[0].name, answer)],
            usage=RequestUsage(input_tokens=self.input_tokens, output_tokens=self.output_tokens),
        )

    def of(self, kind: str) -> list[Request]:
        return [request for request in self.requests if request.kind == kind]


def all_absent(_: str) -> dict[str, Any]:
    modes = [
        "HALLUCINATION",
        "MISINTERPRETATION",
        "WRONG_RESOURCE",
        "PARAMETER_ERROR",
        "TOOL_OMISSION",
        "EARLY_STOP",
        "REDUNDANT_LOOP",
        "MISSING_CAVEAT",
        "NO_FALLBACK",
    ]
    return {mode: {"present": False, "reason": "not seen"} for mode in modes}


def candidate_numbers(prompt: str) -> list[int]:
    """The candidate numbers listed in an arguments prompt."""
    block = prompt[prompt.index("<candidates>") : prompt.index("</candidates>")]
    return [int(n) for n in re.findall(r"^(\d+)\. ", block, re.MULTILINE)]


def default_answers() -> dict[str, Callable[[str], Any]]:
    return {
        "criterion": lambda _: {"passed": True, "grounded": True, "reason": "stated and grounded"},
        "trajectory": lambda _: {"score": 0.8, "reason": "all actions, one extra search"},
        "arguments": lambda prompt: {
            "matches": [
                {"candidate": n, "correct": True, "reason": "meets the condition"}
                for n in candidate_numbers(prompt)
            ]
        },
        "failure_modes": all_absent,
        "classification": lambda _: {"actions": [], "reason": "local computation"},
    }


def fast_retry(retries: int) -> RetryPolicy:
    """A retry policy that does not wait (tests of what is retried, not of the waits)."""
    return RetryPolicy(retries=retries, base_delay_s=0, min_delay_s=0, jitter_s=0)


def llm_judge(
    grader: Grader,
    *,
    model_id: str = "test/grader",
    prices: tuple[float | None, float | None] = (1.0, 4.0),
    limiter_key: str = "test",
    **options: Any,
) -> LLMJudge:
    options.setdefault("retry", fast_retry(2))
    role = RoleModel(
        FunctionModel(grader, model_name=model_id),
        model_id,
        0.0,
        prices[0],
        prices[1],
        "EUR",
        limiter_key=limiter_key,
    )
    return LLMJudge({"default": role}, **options)
