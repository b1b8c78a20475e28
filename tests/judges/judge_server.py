"""A local OpenAI-compatible *judge* server: valid verdicts, garbage, or errors, counted.

:func:`grading` answers every judge question with a valid structured output (the output tool
the request offers, arguments matching its schema): criteria pass, failure modes are absent,
trajectories score 0.5, argument candidates are accepted, calls classify to no action. The
other scripts answer garbage or errors. Served by :class:`~tests.providers.scripted_server.
ScriptedServer` on 127.0.0.1 and reached through the real OpenAI client (``resolve_model``).
"""

from __future__ import annotations

import re
from typing import Any

from datagouv_eval_pipeline.world.replay import tool_call_completion
from tests.providers.scripted_server import Reply, Script

PROMPT_TOKENS = 200
COMPLETION_TOKENS = 20
_CANDIDATE = re.compile(r"^(\d+)\. ", re.MULTILINE)


def _arguments(properties: dict[str, Any], prompt: str) -> dict[str, Any]:
    if "passed" in properties:
        return {"passed": True, "grounded": True, "reason": "the answer states it"}
    if "score" in properties:
        return {"score": 0.5, "reason": "half of the chain"}
    if "matches" in properties:
        block = prompt.split("<candidates>")[-1]
        numbers = sorted({int(n) for n in _CANDIDATE.findall(block)})
        return {"matches": [{"candidate": n, "correct": True, "reason": "ok"} for n in numbers]}
    if "actions" in properties:
        return {"actions": [], "reason": "local computation"}
    return {mode: {"present": False, "reason": "not seen"} for mode in properties}


def grading(body: dict[str, Any]) -> Reply:
    """A valid verdict for whatever question the request asks."""
    tool = body["tools"][0]["function"]
    prompt = str(body["messages"][-1]["content"])
    arguments = _arguments(tool["parameters"]["properties"], prompt)
    completion = tool_call_completion(
        str(body["model"]),
        [(tool["name"], arguments)],
        prompt_tokens=PROMPT_TOKENS,
        completion_tokens=COMPLETION_TOKENS,
    )
    return Reply(200, completion)


def garbage(_body: dict[str, Any]) -> Reply:
    """A 200 whose body is not JSON at all."""
    return Reply(200, raw=b"<html>upstream proxy says hello</html>")


GRADING: Script = grading
GARBAGE: Script = garbage
