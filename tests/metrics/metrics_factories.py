"""Small builders for hand-made tasks, instances and traces used by the metric tests."""

from __future__ import annotations

from typing import Any

from datagouv_eval_pipeline.core.semantic.instances import ActionInstance, CallCategory
from datagouv_eval_pipeline.core.tasks.spec import TaskSpec
from datagouv_eval_pipeline.core.traces import Trace


class Criteria(str):
    """Marks a required argument given as a natural-language criterion instead of a value."""


def req(name: str, **args: Any) -> dict[str, Any]:
    """A required action; ``Criteria("...")`` values become criteria arguments."""
    return {
        "name": name,
        "args": [
            {"name": key, "criteria": str(value)}
            if isinstance(value, Criteria)
            else {"name": key, "strict_value": value}
            for key, value in args.items()
        ],
    }


def make_task(
    chain: str,
    required: list[dict[str, Any]],
    *,
    optimal_chain: str | None = None,
    optimal_required: list[dict[str, Any]] | None = None,
    task_id: str = "task_0900",
    **extra: Any,
) -> TaskSpec:
    data: dict[str, Any] = {
        "task_id": task_id,
        "version": 1,
        "task_name": "test task",
        "meta": {"status": "active", "source": "synthetic"},
        "prompt": "Combien de jeux de données avant 2012 ?",
        "evaluation_criteria": {"minimal": [{"criteria": "gives the number"}]},
        "action_chain": {"minimal": {"chain": chain, "required_actions": required}},
    }
    if optimal_chain is not None:
        data["action_chain"]["optimal"] = {
            "chain": optimal_chain,
            "required_actions": optimal_required or [],
        }
    data.update(extra)
    return TaskSpec.model_validate(data)


def inst(
    action: str,
    call_id: str = "",
    *,
    errored: bool = False,
    category: CallCategory = CallCategory.MCP_TOOL,
    **args: Any,
) -> ActionInstance:
    return ActionInstance(
        action=action,
        args=args,
        source_call_id=call_id or action,
        source_tool=action.replace(".", "_"),
        category=category,
        errored=errored,
    )


def make_trace(task_id: str = "task_0900", **fields: Any) -> Trace:
    return Trace.model_validate({"task_id": task_id, **fields})
