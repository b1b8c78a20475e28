"""Deterministic metrics: pure functions over traces, action instances and task specs.

The entry point is :func:`score_trace`; the individual metrics are importable for reuse.
Definitions with worked examples: ``docs/metrics.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from datagouv_eval_pipeline.base.faces import lazy_attributes

if TYPE_CHECKING:
    from datagouv_eval_pipeline.core.metrics.catalog import (
        CatalogLookup,
        CatalogObject,
        ObjectKind,
        resolve_mapping_slugs,
        with_catalog_slugs,
    )
    from datagouv_eval_pipeline.core.metrics.checks import (
        CHECK_NAMES,
        CheckResult,
        answer_checks,
        citation_check,
        detect_decline,
        extract_urls,
        grounded_ids_check,
    )
    from datagouv_eval_pipeline.core.metrics.efficiency import EfficiencyScore, efficiency_score
    from datagouv_eval_pipeline.core.metrics.numbers import (
        NumberReading,
        find_value,
        iter_numbers,
        read_numbers,
    )
    from datagouv_eval_pipeline.core.metrics.passk import pass_at_k, pass_hat_k
    from datagouv_eval_pipeline.core.metrics.provenance import code_version, working_tree_dirty
    from datagouv_eval_pipeline.core.metrics.references import with_references
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
        PairCache,
        action_instance_score,
        action_type_score,
        arguments_match,
        normalise_value,
    )
    from datagouv_eval_pipeline.core.metrics.values import (
        NO_TOOL,
        NOT_APPLICABLE,
        MetricValue,
        f1,
        not_applicable,
        ratio,
    )

_MODULE_OF: dict[str, str] = {
    "ActionInstanceScore": ".usage",
    "ActionTypeScore": ".usage",
    "CHECK_NAMES": ".checks",
    "CatalogLookup": ".catalog",
    "CatalogObject": ".catalog",
    "CheckResult": ".checks",
    "EfficiencyScore": ".efficiency",
    "MetricValue": ".values",
    "NOT_APPLICABLE": ".values",
    "NO_TOOL": ".values",
    "NumberReading": ".numbers",
    "ObjectKind": ".catalog",
    "PairCache": ".usage",
    "SCORER_VERSION": ".scorer",
    "ScoreRecord": ".score_record",
    "TIER_METRICS": ".scorer",
    "TierRecord": ".score_record",
    "TrajectoryScore": ".trajectory",
    "action_instance_score": ".usage",
    "action_type_score": ".usage",
    "answer_checks": ".checks",
    "arguments_match": ".usage",
    "citation_check": ".checks",
    "code_version": ".provenance",
    "detect_decline": ".checks",
    "efficiency_score": ".efficiency",
    "extract_urls": ".checks",
    "f1": ".values",
    "find_value": ".numbers",
    "grounded_ids_check": ".checks",
    "iter_numbers": ".numbers",
    "normalise_value": ".usage",
    "not_applicable": ".values",
    "pass_at_k": ".passk",
    "pass_hat_k": ".passk",
    "ratio": ".values",
    "read_numbers": ".numbers",
    "resolve_mapping_slugs": ".catalog",
    "score_tier": ".scorer",
    "score_trace": ".scorer",
    "trajectory_adherence": ".trajectory",
    "with_catalog_slugs": ".catalog",
    "with_references": ".references",
    "working_tree_dirty": ".provenance",
}
"""Each public name, and the module that defines it."""

if not TYPE_CHECKING:  # hidden from mypy, which then checks each name imported from the face
    __getattr__ = lazy_attributes(__name__, _MODULE_OF)


__all__ = [
    "CHECK_NAMES",
    "NOT_APPLICABLE",
    "NO_TOOL",
    "SCORER_VERSION",
    "TIER_METRICS",
    "ActionInstanceScore",
    "ActionTypeScore",
    "CatalogLookup",
    "CatalogObject",
    "CheckResult",
    "EfficiencyScore",
    "MetricValue",
    "NumberReading",
    "ObjectKind",
    "PairCache",
    "ScoreRecord",
    "TierRecord",
    "TrajectoryScore",
    "action_instance_score",
    "action_type_score",
    "answer_checks",
    "arguments_match",
    "citation_check",
    "code_version",
    "detect_decline",
    "efficiency_score",
    "extract_urls",
    "f1",
    "find_value",
    "grounded_ids_check",
    "iter_numbers",
    "normalise_value",
    "not_applicable",
    "pass_at_k",
    "pass_hat_k",
    "ratio",
    "read_numbers",
    "resolve_mapping_slugs",
    "score_tier",
    "score_trace",
    "trajectory_adherence",
    "with_catalog_slugs",
    "with_references",
    "working_tree_dirty",
]
