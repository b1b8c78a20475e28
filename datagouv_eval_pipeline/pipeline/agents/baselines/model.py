"""The offline models: each policy driven through pydantic-ai's ``FunctionModel``."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from datagouv_eval_pipeline.pipeline.agents.baselines.coder import CoderPolicy
from datagouv_eval_pipeline.pipeline.agents.baselines.guidance import Guidance
from datagouv_eval_pipeline.pipeline.agents.baselines.oneshot import OneShotPolicy
from datagouv_eval_pipeline.pipeline.agents.baselines.policy import (
    BaselinePolicy,
    Call,
    Parallel,
    ToolSurface,
    observations_of,
    question_of,
)
from datagouv_eval_pipeline.pipeline.agents.baselines.thorough import ThoroughPolicy

POLICIES: Mapping[str, BaselinePolicy] = {
    policy.name: policy for policy in (OneShotPolicy(), ThoroughPolicy(), CoderPolicy())
}
"""The offline models of ``models.yml`` by name."""


def get_policy(name: str) -> BaselinePolicy:
    """The policy of an offline model.

    Raises:
        KeyError: For an unknown name (the message lists the known ones).
    """
    try:
        return POLICIES[name]
    except KeyError:
        raise KeyError(f"no baseline policy is named {name!r}; known: {sorted(POLICIES)}") from None


def policy_model(policy: BaselinePolicy) -> FunctionModel:
    """A pydantic-ai model that runs ``policy`` (tool calls and the structured final answer).

    The policy gets the question, the calls made so far with their results, the tool schemas
    (``AgentInfo.function_tools``) and the advice found in the instructions the agent was given
    (``AgentInfo.instructions``: the system prompt and, with ``skills``, the skills document).
    """

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        outputs = {tool.name for tool in info.output_tools}
        seen = observations_of(messages, ignore=outputs)
        step = policy.decide(
            question_of(messages), seen, ToolSurface.of(info), Guidance.read(info.instructions)
        )
        number = len(seen) + 1
        if isinstance(step, Call | Parallel):
            calls = step.calls if isinstance(step, Parallel) else (step,)
            return ModelResponse(
                parts=[
                    ToolCallPart(call.tool, call.args, tool_call_id=f"call_{number + index}")
                    for index, call in enumerate(calls)
                ]
            )
        if not info.output_tools:  # pragma: no cover - the runner always sets the output type
            raise RuntimeError("the agent has no output tool for the final answer")
        return ModelResponse(
            parts=[
                ToolCallPart(
                    info.output_tools[0].name,
                    step.model_dump(mode="json"),
                    tool_call_id=f"call_{number}",
                )
            ]
        )

    return FunctionModel(respond, model_name=policy.name)
