"""Test helpers: a scripted upstream provider (a second replay server in ``scripted`` mode)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from datagouv_eval_pipeline.world.replay import (
    ProviderSimulation,
    ReplayConfig,
    ReplayServer,
    text_completion,
    tool_call_completion,
)

UPSTREAM_KEY = "sk-test-upstream-0123456789abcdef"


@dataclass
class PoolsScript:
    """Answers like a model with one tool: call ``lookup`` for the user's city, then report.

    * last message from the user: ``lookup(city=<last word of the question>)``;
    * last message a tool result: ``"Answer: <tool result>"``;
    * last message from the user saying ``count``: ``"answer <n>"`` with n = calls so far
      (so identical requests get different answers).
    """

    calls: int = 0
    bodies: list[dict[str, Any]] = field(default_factory=list)

    def reset(self) -> None:
        self.calls = 0
        self.bodies.clear()

    def __call__(self, body: dict[str, Any]) -> Mapping[str, Any]:
        self.calls += 1
        self.bodies.append(body)
        model = str(body["model"])
        last = body["messages"][-1]
        if last["role"] == "tool":
            return text_completion(model, f"Answer: {last['content']}")
        text = str(last.get("content") or "")
        if text.startswith("count"):
            return text_completion(model, f"answer {self.calls}")
        city = text.rstrip("?").split()[-1]
        return tool_call_completion(model, [("lookup", {"city": city})])


def scripted_server(
    script: PoolsScript, simulation: ProviderSimulation | None = None
) -> ReplayServer:
    return ReplayServer(
        ReplayConfig(
            mode="scripted", responder=script, simulation=simulation or ProviderSimulation()
        )
    )
