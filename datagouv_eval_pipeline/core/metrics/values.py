"""The one representation of a metric value: a number, or None with the reason it is undefined."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class MetricValue:
    """A metric's value, or ``None`` when it is undefined, with the reason.

    A zero denominator or a metric that does not apply gives ``value=None`` and a reason, never a
    silent 0. A defined value may also carry a reason when the number needs context (e.g. an F1 of
    0 because precision and recall are both 0).

    Attributes:
        value: The number, or None when undefined.
        reason: Why the value is undefined (or a note about a defined value).
    """

    value: float | None
    reason: str | None = None

    @property
    def defined(self) -> bool:
        """Whether the metric has a value."""
        return self.value is not None

    def to_json(self) -> dict[str, Any]:
        """Return ``{"value": ..., "reason": ...}``."""
        return {"value": self.value, "reason": self.reason}


# Metric values are immutable, so equal ones can be shared: building one costs several times a
# dict lookup (a frozen dataclass sets each field through object.__setattr__), and a score builds
# dozens from a few distinct (count, count) pairs. The memos are bounded (cleared when full).
_MEMO_LIMIT = 4096
_undefined_memo: dict[str, MetricValue] = {}
_ratio_memo: dict[tuple[float, float, str], MetricValue] = {}
# By identity (the entry keeps both inputs alive, so their ids cannot be reused meanwhile).
_f1_memo: dict[tuple[int, int], tuple[MetricValue, MetricValue, MetricValue]] = {}


NOT_APPLICABLE = "not applicable"
"""The reason prefix of a metric (or verdict) that cannot apply to the run: NULL, never 0."""

NO_TOOL = "no tool available (capability set none)"
"""Why action usage and trajectory do not apply to a run without any capability."""


def not_applicable(why: str) -> MetricValue:
    """An undefined metric whose reason says it does not apply (``not applicable: why``)."""
    return undefined(f"{NOT_APPLICABLE}: {why}")


def undefined(reason: str) -> MetricValue:
    """Return an undefined metric with its reason."""
    value = _undefined_memo.get(reason)
    if value is None:
        if len(_undefined_memo) >= _MEMO_LIMIT:
            _undefined_memo.clear()
        value = _undefined_memo[reason] = MetricValue(None, reason)
    return value


def ratio(numerator: float, denominator: float, empty_reason: str) -> MetricValue:
    """Return ``numerator / denominator``, or None with ``empty_reason`` for a 0 denominator."""
    memo = type(numerator) is int and type(denominator) is int  # exact keys: no 0.0 vs -0.0
    if memo:
        key = (numerator, denominator, empty_reason)
        value = _ratio_memo.get(key)
        if value is not None:
            return value
    value = undefined(empty_reason) if denominator == 0 else MetricValue(numerator / denominator)
    if memo:
        if len(_ratio_memo) >= _MEMO_LIMIT:
            _ratio_memo.clear()
        _ratio_memo[key] = value
    return value


def f1(precision: MetricValue, recall: MetricValue) -> MetricValue:
    """Return the harmonic mean ``2PR / (P + R)`` of two metric values.

    Undefined when either input is undefined, with one exception: a recall of 0 with an
    undefined precision (no action instance at all, so no precision denominator) gives an F1 of 0.
    The run was expected to act and did nothing; leaving it undefined would drop it from the F1
    mean and flatter the agent. When both are 0 the F1 is 0 (nothing matched), with a reason
    saying so rather than an undefined value: the agent did act and matched nothing.
    """
    key = (id(precision), id(recall))
    hit = _f1_memo.get(key)
    if hit is not None and hit[0] is precision and hit[1] is recall:
        return hit[2]
    value = _f1(precision, recall)
    if len(_f1_memo) >= _MEMO_LIMIT:
        _f1_memo.clear()
    _f1_memo[key] = (precision, recall, value)
    return value


def _f1(precision: MetricValue, recall: MetricValue) -> MetricValue:
    if precision.value is None and recall.value == 0.0:
        return MetricValue(0.0, "no action instance: precision is undefined and recall 0, so F1 0")
    if precision.value is None or recall.value is None:
        missing = [
            f"{name}: {value.reason}"
            for name, value in (("precision", precision), ("recall", recall))
            if value.value is None
        ]
        return MetricValue(None, "; ".join(missing))
    total = precision.value + recall.value
    if total == 0:
        return MetricValue(0.0, "precision and recall are both 0")
    return MetricValue(2 * precision.value * recall.value / total)
