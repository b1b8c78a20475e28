"""Agent runs: capability toolsets, models (live, offline baselines, replay), skills, web tools."""

from __future__ import annotations

from typing import TYPE_CHECKING

from datagouv_eval_pipeline.base.faces import lazy_attributes

if TYPE_CHECKING:
    from datagouv_eval_pipeline.pipeline.agents.cancel import (
        CancelToken,
        RunCancelled,
        cancel_on_signals,
        current_token,
        last_interrupt,
        record_interrupt,
        run_token_set,
        until_cancelled,
    )
    from datagouv_eval_pipeline.pipeline.agents.capabilities import SANDBOX_CAPABILITIES
    from datagouv_eval_pipeline.pipeline.agents.limits import RunBudget
    from datagouv_eval_pipeline.pipeline.agents.models import missing_api_key
    from datagouv_eval_pipeline.pipeline.agents.runner import (
        CellRun,
        RunSettings,
        execute_cell,
        model_skip_reason,
        task_skip_reason,
    )

_MODULE_OF: dict[str, str] = {
    "CancelToken": ".cancel",
    "CellRun": ".runner",
    "RunBudget": ".limits",
    "RunCancelled": ".cancel",
    "RunSettings": ".runner",
    "SANDBOX_CAPABILITIES": ".capabilities",
    "cancel_on_signals": ".cancel",
    "current_token": ".cancel",
    "execute_cell": ".runner",
    "last_interrupt": ".cancel",
    "missing_api_key": ".models",
    "model_skip_reason": ".runner",
    "record_interrupt": ".cancel",
    "run_token_set": ".cancel",
    "task_skip_reason": ".runner",
    "until_cancelled": ".cancel",
}
"""Each public name, and the module that defines it."""

if not TYPE_CHECKING:  # hidden from mypy, which then checks each name imported from the face
    __getattr__ = lazy_attributes(__name__, _MODULE_OF)


__all__ = [
    "SANDBOX_CAPABILITIES",
    "CancelToken",
    "CellRun",
    "RunBudget",
    "RunCancelled",
    "RunSettings",
    "cancel_on_signals",
    "current_token",
    "execute_cell",
    "last_interrupt",
    "missing_api_key",
    "model_skip_reason",
    "record_interrupt",
    "run_token_set",
    "task_skip_reason",
    "until_cancelled",
]
