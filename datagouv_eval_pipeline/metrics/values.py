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


def undefined(reason: str) -> MetricValue:
    """Return an undefined metric with its reason."""
    return MetricValue(None, reason)


def ratio(numerator: float, denominator: float, empty_reason: str) -> MetricValue:
    """Return ``numerator / denominator``, or None with ``empty_reason`` for a 0 denominator."""
    if denominator == 0:
        return MetricValue(None, empty_reason)
    return MetricValue(numerator / denominator)


def f1(precision: MetricValue, recall: MetricValue) -> MetricValue:
    """Return the harmonic mean ``2PR / (P + R)`` of two metric values.

    Undefined when either input is undefined. When both are 0 the F1 is 0 (nothing matched), with a
    reason saying so rather than an undefined value: the agent did act and matched nothing.
    """
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
