"""The resource pre-flight: check the catalog objects tasks rely on before a run.

Pure Python (no Dagster): the future ``catalog_validation`` asset calls :func:`validate` and
stores the JSON of the returned :class:`ValidationReport`. See docs/preflight.md.

The public names are imported on first use (PEP 562): the stage documents import the report's
models without the validator's HTTP client and retries.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from datagouv_eval_pipeline.pipeline.preflight.baselines import (
        Baseline,
        BaselineError,
        BaselineStore,
        default_baselines_dir,
    )
    from datagouv_eval_pipeline.pipeline.preflight.models import (
        DiffEntry,
        PreflightCheckResult,
        TaskReport,
        ValidationReport,
    )
    from datagouv_eval_pipeline.pipeline.preflight.validator import (
        BaselineChange,
        RefreshPlan,
        ValidatorConfig,
        aplan_refresh,
        avalidate,
        plan,
        plan_refresh,
        validate,
    )

_MODULE_OF: dict[str, str] = {
    "aplan_refresh": "validator",
    "avalidate": "validator",
    "Baseline": "baselines",
    "BaselineChange": "validator",
    "BaselineError": "baselines",
    "BaselineStore": "baselines",
    "default_baselines_dir": "baselines",
    "DiffEntry": "models",
    "plan": "validator",
    "plan_refresh": "validator",
    "PreflightCheckResult": "models",
    "RefreshPlan": "validator",
    "TaskReport": "models",
    "validate": "validator",
    "ValidationReport": "models",
    "ValidatorConfig": "validator",
}
"""Each public name, and the module of this package that defines it."""


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "Baseline",
    "BaselineChange",
    "BaselineError",
    "BaselineStore",
    "DiffEntry",
    "PreflightCheckResult",
    "RefreshPlan",
    "TaskReport",
    "ValidationReport",
    "ValidatorConfig",
    "aplan_refresh",
    "avalidate",
    "default_baselines_dir",
    "plan",
    "plan_refresh",
    "validate",
]
