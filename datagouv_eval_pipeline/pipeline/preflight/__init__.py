"""The resource pre-flight: check the catalog objects tasks rely on before a run.

Pure Python (no Dagster): the future ``catalog_validation`` asset calls :func:`validate` and
stores the JSON of the returned :class:`ValidationReport`. See docs/preflight.md.
"""

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
