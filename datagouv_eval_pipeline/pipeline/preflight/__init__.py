"""The resource pre-flight: check the catalog objects tasks rely on before a run.

Pure Python (no Dagster): the future ``catalog_validation`` asset calls :func:`validate` and
stores the JSON of the returned :class:`ValidationReport`. See docs/preflight.md.

The public names are imported on first use (PEP 562): the stage documents import the report's
models without the validator's HTTP client and retries.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from datagouv_eval_pipeline.base.faces import lazy_attributes

if TYPE_CHECKING:
    from datagouv_eval_pipeline.pipeline.preflight.baselines import (
        Baseline,
        BaselineError,
        BaselineStore,
        default_baselines_dir,
    )
    from datagouv_eval_pipeline.pipeline.preflight.http import USER_AGENT
    from datagouv_eval_pipeline.pipeline.preflight.models import (
        DiffEntry,
        PreflightCheckResult,
        TaskReport,
        ValidationReport,
    )
    from datagouv_eval_pipeline.pipeline.preflight.text import render_refresh, render_report
    from datagouv_eval_pipeline.pipeline.preflight.validator import (
        BaselineChange,
        RefreshPlan,
        ValidatorConfig,
        active,
        aplan_refresh,
        avalidate,
        plan,
        plan_refresh,
        probe,
        validate,
    )

_MODULE_OF: dict[str, str] = {
    "Baseline": ".baselines",
    "BaselineChange": ".validator",
    "BaselineError": ".baselines",
    "BaselineStore": ".baselines",
    "DiffEntry": ".models",
    "PreflightCheckResult": ".models",
    "RefreshPlan": ".validator",
    "TaskReport": ".models",
    "USER_AGENT": ".http",
    "ValidationReport": ".models",
    "ValidatorConfig": ".validator",
    "active": ".validator",
    "aplan_refresh": ".validator",
    "avalidate": ".validator",
    "default_baselines_dir": ".baselines",
    "plan": ".validator",
    "plan_refresh": ".validator",
    "probe": ".validator",
    "render_refresh": ".text",
    "render_report": ".text",
    "validate": ".validator",
}
"""Each public name, and the module that defines it."""

if not TYPE_CHECKING:  # hidden from mypy, which then checks each name imported from the face
    __getattr__ = lazy_attributes(__name__, _MODULE_OF)


__all__ = [
    "USER_AGENT",
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
    "active",
    "aplan_refresh",
    "avalidate",
    "default_baselines_dir",
    "plan",
    "plan_refresh",
    "probe",
    "render_refresh",
    "render_report",
    "validate",
]
