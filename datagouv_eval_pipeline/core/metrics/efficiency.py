"""Efficiency: latency net of rate-limit waits, token usage, accuracy per token and per minute."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from datagouv_eval_pipeline.core.metrics.values import MetricValue, undefined
from datagouv_eval_pipeline.core.tasks import TIERS, Tier
from datagouv_eval_pipeline.core.traces import Trace


@dataclass(frozen=True, slots=True)
class EfficiencyScore:
    """Cost of one run and, once accuracy is judged, accuracy per cost.

    Attributes:
        latency_ms: Wall time minus rate-limit waits.
        wall_latency_ms: Wall time as recorded.
        rate_limit_wait_ms: Time spent waiting on rate limits.
        input_tokens: Agent input tokens.
        output_tokens: Agent output tokens.
        total_tokens: Input plus output tokens.
        accuracy: The accuracy per tier the ratios use (None until judged).
        token_efficiency: ``accuracy / (total_tokens / 1000)`` per tier.
        time_efficiency: ``accuracy / (latency_ms / 60000)`` per tier.
    """

    latency_ms: MetricValue
    wall_latency_ms: float
    rate_limit_wait_ms: float
    input_tokens: int
    output_tokens: int
    total_tokens: int
    accuracy: dict[Tier, MetricValue]
    token_efficiency: dict[Tier, MetricValue]
    time_efficiency: dict[Tier, MetricValue]


def efficiency_score(
    trace: Trace, accuracy: Mapping[Tier, float | None] | None = None
) -> EfficiencyScore:
    """Compute the efficiency block of a trace.

    Args:
        trace: The run.
        accuracy: Result accuracy per tier in [0, 1], from the judges; a missing tier or None means
            unscored, which makes that tier's ratios None with a reason (never 0).

    Returns:
        Latency, tokens and the per-tier ratios.

    Raises:
        ValueError: When an accuracy is outside [0, 1] or a tier name is unknown.
    """
    given = dict(accuracy or {})
    unknown = set(given) - set(TIERS) if given else None
    if unknown:
        raise ValueError(f"accuracy: unknown tier(s) {sorted(unknown)}; expected {list(TIERS)}")

    if trace.latency_ms == 0:
        latency = undefined("the trace records no latency")
    elif trace.rate_limit_wait_ms > trace.latency_ms:
        latency = undefined(
            f"rate-limit wait ({trace.rate_limit_wait_ms} ms) exceeds wall latency "
            f"({trace.latency_ms} ms)"
        )
    else:
        latency = MetricValue(trace.latency_ms - trace.rate_limit_wait_ms)
    tokens = trace.usage.total_tokens

    accuracies: dict[Tier, MetricValue] = {}
    token_efficiency: dict[Tier, MetricValue] = {}
    time_efficiency: dict[Tier, MetricValue] = {}
    for tier in TIERS:
        value = given.get(tier)
        if value is None:
            # Unscored (the usual case before judging): every ratio is undefined for that reason.
            acc, per = _UNSCORED[tier]
            accuracies[tier] = acc
            token_efficiency[tier] = per
            if latency.value is None:
                time_efficiency[tier] = undefined(f"latency undefined: {latency.reason}")
            else:
                time_efficiency[tier] = per
            continue
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"accuracy[{tier!r}] = {value}: expected a value in [0, 1]")
        acc = MetricValue(float(value))
        accuracies[tier] = acc
        token_efficiency[tier] = _per(acc, tokens / 1000, "the trace records no token usage")
        if latency.value is None:
            time_efficiency[tier] = undefined(f"latency undefined: {latency.reason}")
        else:
            time_efficiency[tier] = _per(acc, latency.value / 60000, "net latency is 0 ms")
    return EfficiencyScore(
        latency_ms=latency,
        wall_latency_ms=trace.latency_ms,
        rate_limit_wait_ms=trace.rate_limit_wait_ms,
        input_tokens=trace.usage.input_tokens,
        output_tokens=trace.usage.output_tokens,
        total_tokens=tokens,
        accuracy=accuracies,
        token_efficiency=token_efficiency,
        time_efficiency=time_efficiency,
    )


def _unscored(tier: Tier) -> tuple[MetricValue, MetricValue]:
    accuracy = undefined(f"{tier} accuracy is not scored yet")
    return accuracy, undefined(f"accuracy undefined: {accuracy.reason}")


# Metric values are immutable, so these are shared by every score.
_UNSCORED: dict[Tier, tuple[MetricValue, MetricValue]] = {tier: _unscored(tier) for tier in TIERS}


def _per(accuracy: MetricValue, cost: float, zero_reason: str) -> MetricValue:
    if accuracy.value is None:
        return undefined(f"accuracy undefined: {accuracy.reason}")
    if cost == 0:
        return undefined(zero_reason)
    return MetricValue(accuracy.value / cost)
