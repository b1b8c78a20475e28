"""Deterministic metrics: pure functions over traces, action instances and task specs.

The entry point is :func:`score_trace`; the individual metrics are importable for reuse.
Definitions with worked examples: ``docs/metrics.md``.
"""

from datagouv_eval_pipeline.core.metrics.checks import CHECK_NAMES, CheckResult, answer_checks
from datagouv_eval_pipeline.core.metrics.efficiency import EfficiencyScore, efficiency_score
from datagouv_eval_pipeline.core.metrics.numbers import NumberReading, find_value, read_numbers
from datagouv_eval_pipeline.core.metrics.score_record import ScoreRecord, TierRecord
from datagouv_eval_pipeline.core.metrics.scorer import (
    SCORER_VERSION,
    TIER_METRICS,
    score_tier,
    score_trace,
)
from datagouv_eval_pipeline.core.metrics.trajectory import TrajectoryScore, trajectory_adherence
from datagouv_eval_pipeline.core.metrics.usage import (
    ActionInstanceScore,
    ActionTypeScore,
    action_instance_score,
    action_type_score,
    normalise_value,
)
from datagouv_eval_pipeline.core.metrics.values import MetricValue, f1, ratio

__all__ = [
    "CHECK_NAMES",
    "SCORER_VERSION",
    "TIER_METRICS",
    "ActionInstanceScore",
    "ActionTypeScore",
    "CheckResult",
    "EfficiencyScore",
    "MetricValue",
    "NumberReading",
    "ScoreRecord",
    "TierRecord",
    "TrajectoryScore",
    "action_instance_score",
    "action_type_score",
    "answer_checks",
    "efficiency_score",
    "f1",
    "find_value",
    "normalise_value",
    "ratio",
    "read_numbers",
    "score_tier",
    "score_trace",
    "trajectory_adherence",
]
