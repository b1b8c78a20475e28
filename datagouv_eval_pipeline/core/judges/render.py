"""How judge inputs are written into prompts: tool results, actions, required actions.

Tool results can be long (CSV extracts, OpenAPI specs). Each result keeps its head and its tail
within a per-call budget, and calls past the total budget are listed without their result, so
the judge always sees which calls were made. The budgets are part of the rendered text, hence of
the cache key.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from datagouv_eval_pipeline.core.judges.prompts import neutralise
from datagouv_eval_pipeline.core.judges.protocol import ToolEvidence
from datagouv_eval_pipeline.core.semantic import ActionInstance
from datagouv_eval_pipeline.core.tasks import RequiredAction


@dataclass(frozen=True, slots=True)
class EvidenceBudget:
    """Characters of tool results shown to a judge.

    Attributes:
        per_call: Characters of one result (head and tail kept).
        total: Characters of all results together.
    """

    per_call: int = 2000
    total: int = 16000


CRITERION_BUDGET = EvidenceBudget()
FAILURE_MODE_BUDGET = EvidenceBudget(per_call=600, total=8000)


def clip(text: str, limit: int) -> str:
    """Keep the head (3/4) and tail (1/4) of a text longer than ``limit``, marking the cut."""
    if len(text) <= limit:
        return text
    head = (limit * 3) // 4
    tail = limit - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... {cut} characters cut ...]\n{text[len(text) - tail :]}"


def _arguments(arguments: Mapping[str, Any], limit: int = 600) -> str:
    text = json.dumps(dict(arguments), ensure_ascii=False, sort_keys=True, default=str)
    return clip(text, limit)


def render_evidence(evidence: Sequence[ToolEvidence], budget: EvidenceBudget) -> str:
    """Tool calls with their (clipped) results, in call order."""
    if not evidence:
        return "(no tool calls)"
    lines: list[str] = []
    left = budget.total
    for item in evidence:
        status = " ERROR" if item.errored else ""
        lines.append(f"[{item.call_id}] {item.tool}({_arguments(item.arguments)}){status}")
        if left <= 0:
            lines.append("(result not shown: evidence budget exhausted)")
            continue
        shown = clip(item.result, min(budget.per_call, left))
        left -= len(shown)
        lines.append(neutralise(shown) if shown else "(empty result)")
        lines.append("")
    return neutralise("\n".join(lines).rstrip())


def render_required(required: Sequence[RequiredAction]) -> str:
    """Required actions with their argument conditions, one per line."""
    if not required:
        return "(none)"
    lines = []
    for action in required:
        conditions = []
        for arg in action.args:
            if arg.strict_value is not None:
                conditions.append(f"{arg.name} = {arg.strict_value!r}")
            else:
                conditions.append(f"{arg.name}: {arg.criteria}")
        suffix = f" [{'; '.join(conditions)}]" if conditions else ""
        lines.append(f"- {action.name}{suffix}")
    return "\n".join(lines)


def render_instances(instances: Sequence[ActionInstance], max_args: int = 3) -> str:
    """The actual semantic action sequence, numbered, with up to ``max_args`` arguments each."""
    if not instances:
        return "(no actions)"
    lines = []
    for index, instance in enumerate(instances, start=1):
        shown = dict(list(instance.args.items())[:max_args])
        status = " ERROR" if instance.errored else ""
        lines.append(f"{index}. {instance.action} {_arguments(shown, 300)}{status}")
    return neutralise("\n".join(lines))
