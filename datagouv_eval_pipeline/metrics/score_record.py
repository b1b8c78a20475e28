"""The stored form of a :class:`~datagouv_eval_pipeline.metrics.scorer.TraceScore`, typed.

``TraceScore.to_json()`` is what the ``judge_scores`` stage writes per trace and what
``datagouv-eval score`` prints; :class:`ScoreRecord` is that document's schema. It validates a
stored score when it is read back (a wrong field is an error naming it) and gives its readers,
the warehouse rows first, attributes instead of dictionary look-ups. ``docs/metrics.md``
documents every field.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ValueRecord(_Record):
    """A ``MetricValue``: a number, or None with the reason it is undefined."""

    value: float | None
    reason: str | None = None


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

    action_type_precision: ValueRecord
    action_type_recall: ValueRecord
    action_type_f1: ValueRecord
    action_precision: ValueRecord
    action_recall: ValueRecord
    action_f1: ValueRecord
    trajectory_adherence: ValueRecord
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

    def metric(self, name: str) -> ValueRecord:
        """One of the metric-value fields by name (``action_f1``, ...)."""
        value = getattr(self, name)
        if not isinstance(value, ValueRecord):
            raise AttributeError(f"{name} is not a metric of the tier block")
        return value


class CheckRecord(_Record):
    """An answer check: passed, failed or not applicable (None), with its reason."""

    passed: bool | None
    reason: str
    details: dict[str, Any] = Field(default_factory=dict)


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


class EfficiencyRecord(_Record):
    """Latency, tokens, and the accuracy ratios per tier."""

    latency_ms: ValueRecord
    wall_latency_ms: float
    rate_limit_wait_ms: float
    input_tokens: int
    output_tokens: int
    total_tokens: int
    accuracy: dict[str, ValueRecord]
    token_efficiency: dict[str, ValueRecord]
    time_efficiency: dict[str, ValueRecord]


class MappingSummaryRecord(_Record):
    """How the trace's calls were mapped (``error`` set when mapping failed)."""

    mapped_fraction: ValueRecord
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


class CodeVersionRecord(_Record):
    """Package version and git commit of the code that scored."""

    package: str | None
    git_sha: str | None


class ProvenanceRecord(_Record):
    """What a score was computed from."""

    spec_hash: str
    task_version: int
    model: str
    mcp_version: str | None
    capabilities: list[str]
    code_version: CodeVersionRecord
    scorer_version: str


class ScoreRecord(_Record):
    """Every deterministic score of one trace on one task, as stored."""

    task_id: str
    minimal: TierRecord
    optimal: TierRecord
    checks: dict[str, CheckRecord]
    efficiency: EfficiencyRecord
    mapping: MappingSummaryRecord
    actions: list[ActionRecord]
    provenance: ProvenanceRecord

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
