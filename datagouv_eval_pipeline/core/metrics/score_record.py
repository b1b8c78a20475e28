"""Every deterministic score of one trace, typed: what the scorer returns and the stages store.

:func:`~datagouv_eval_pipeline.core.metrics.scorer.score_trace` builds a :class:`ScoreRecord`; the
``judge_scores`` stage stores it as it is and ``datagouv-eval score`` prints it. Reading a stored
score back validates it (a wrong field is an error naming it) and gives its readers, the warehouse
rows first, attributes instead of dictionary look-ups. The leaves are the metrics' own values
(:class:`~datagouv_eval_pipeline.core.metrics.values.MetricValue`,
:class:`~datagouv_eval_pipeline.core.metrics.checks.CheckResult`,
:class:`~datagouv_eval_pipeline.core.metrics.efficiency.EfficiencyScore`). ``docs/metrics.md``
documents every field.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from datagouv_eval_pipeline.core.metrics.checks import CheckResult
from datagouv_eval_pipeline.core.metrics.efficiency import EfficiencyScore
from datagouv_eval_pipeline.core.metrics.provenance import CodeVersion
from datagouv_eval_pipeline.core.metrics.values import MetricValue
from datagouv_eval_pipeline.core.semantic import ActionInstance


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PairRecord(_Record):
    """A required action matched to an instance."""

    required_index: int
    action: str
    call_id: str
    instance_index: int
    unverified_criteria: list[str] = Field(default_factory=list)


class StepRecord(_Record):
    """A chain action and the instance it matched."""

    action: str
    chain_position: int
    instance_index: int | None
    call_id: str | None


class TierRecord(_Record):
    """Usage and trajectory metrics of one tier (counts None when the trace was not mapped)."""

    action_type_precision: MetricValue
    action_type_recall: MetricValue
    action_type_f1: MetricValue
    action_precision: MetricValue
    action_recall: MetricValue
    action_f1: MetricValue
    trajectory_adherence: MetricValue
    unverified_criteria: int | None
    required_action_types: int
    required_actions: int
    chain_actions: int
    actual_action_types: int | None
    actual_actions: int | None
    matched_action_types: int | None
    matched_actions: int | None
    matched_chain_actions: int | None
    missing_action_types: list[str]
    unmatched_required: list[int]
    pairs: list[PairRecord]
    trajectory_steps: list[StepRecord]

    def count(self, name: str) -> int | None:
        """One of the count fields by name (``required_actions``, ...)."""
        value = getattr(self, name)
        if value is not None and not isinstance(value, int):
            raise AttributeError(f"{name} is not a count of the tier block")
        return value

    def metric(self, name: str) -> MetricValue:
        """One of the metric-value fields by name (``action_f1``, ...)."""
        value = getattr(self, name)
        if not isinstance(value, MetricValue):
            raise AttributeError(f"{name} is not a metric of the tier block")
        return value


class ExpectedValueRecord(_Record):
    """One expected value of the ``value`` check, as the run evaluated it."""

    value: float
    tolerance: float | None = None
    spec_value: float | None = None
    source: str | None = None
    reference_error: str | None = None
    about: list[list[str]] | None = None
    """The entities the value had to be stated about (names of each)."""
    outcome: str | None = None
    """``stated``, ``absent``, ``negated``, ``retracted``, ``off_subject`` or ``drowned``."""
    reason: str | None = None
    candidates: list[str] | None = None
    """Other figures of the same kind the answer states (when any)."""


class ValueCheckDetails(BaseModel):
    """The evidence of the ``value`` check: what was expected, what the answer stated."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    expected: dict[str, ExpectedValueRecord] = Field(default_factory=dict)
    found: dict[str, str | None] = Field(default_factory=dict)


class MappingSummaryRecord(_Record):
    """How the trace's calls were mapped (``error`` set when mapping failed)."""

    mapped_fraction: MetricValue
    counts: dict[str, int]
    error: str | None
    registry_version: str | None
    unmapped_call_ids: list[str]
    warnings: list[str]


class ActionRecord(_Record):
    """One mapped action instance."""

    action: str
    args: dict[str, Any]
    call_id: str
    tool: str
    category: str
    confidence: float
    errored: bool
    reason: str

    @classmethod
    def of(cls, instance: ActionInstance) -> ActionRecord:
        """The stored form of one mapped instance."""
        return cls(
            action=instance.action,
            args=instance.args,
            call_id=instance.source_call_id,
            tool=instance.source_tool,
            category=instance.category.value,
            confidence=instance.confidence,
            errored=instance.errored,
            reason=instance.reason,
        )


class ScoreProvenance(_Record):
    """What a score was computed from: the task, the trace's model and toolset, the code."""

    spec_hash: str
    """``TaskSpec.spec_hash()`` of the task (the spec's, even when references were recomputed)."""
    task_version: int
    model: str
    """The trace's model id."""
    mcp_version: str | None
    capabilities: list[str]
    code_version: CodeVersion
    scorer_version: str
    """``SCORER_VERSION`` of the scorer: results of different versions are not comparable."""


class ScoreRecord(_Record):
    """Every deterministic score of one trace on one task, as stored."""

    task_id: str
    minimal: TierRecord
    optimal: TierRecord
    checks: dict[str, CheckResult]
    efficiency: EfficiencyScore
    mapping: MappingSummaryRecord
    actions: list[ActionRecord]
    provenance: ScoreProvenance

    def tier(self, tier: str) -> TierRecord:
        """The ``minimal`` or ``optimal`` block."""
        if tier == "minimal":
            return self.minimal
        if tier == "optimal":
            return self.optimal
        raise KeyError(f"unknown tier {tier!r}")

    def value_details(self) -> ValueCheckDetails:
        """The ``value`` check's evidence (empty when the check is absent or did not apply)."""
        check = self.checks.get("value")
        return ValueCheckDetails.model_validate(check.details if check is not None else {})
