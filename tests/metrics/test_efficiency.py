from __future__ import annotations

import pytest

from datagouv_eval_pipeline.core.metrics.efficiency import efficiency_score
from tests.metrics.metrics_factories import make_trace


def test_latency_is_net_of_rate_limit_waits_and_ratios_use_it() -> None:
    trace = make_trace(
        latency_ms=150_000,
        rate_limit_wait_ms=30_000,
        usage={"input_tokens": 3_000, "output_tokens": 1_000},
    )
    score = efficiency_score(trace, {"minimal": 1.0, "optimal": 0.5})
    # net latency = 150 000 - 30 000 = 120 000 ms = 2 minutes; tokens = 4 000
    assert score.latency_ms.value == 120_000
    assert score.total_tokens == 4_000
    # token efficiency = accuracy / (4000 / 1000): 1.0 / 4 = 0.25 and 0.5 / 4 = 0.125
    assert score.token_efficiency["minimal"].value == pytest.approx(0.25)
    assert score.token_efficiency["optimal"].value == pytest.approx(0.125)
    # time efficiency = accuracy / (120 000 / 60 000): 1.0 / 2 = 0.5 and 0.5 / 2 = 0.25
    assert score.time_efficiency["minimal"].value == pytest.approx(0.5)
    assert score.time_efficiency["optimal"].value == pytest.approx(0.25)


def test_unscored_accuracy_gives_undefined_ratios_with_reason() -> None:
    trace = make_trace(latency_ms=1000, usage={"input_tokens": 10})
    score = efficiency_score(trace)
    for tier in ("minimal", "optimal"):
        assert score.accuracy[tier].value is None
        assert score.token_efficiency[tier].value is None
        reason = score.token_efficiency[tier].reason
        assert reason is not None and "not scored" in reason
        assert score.time_efficiency[tier].value is None


def test_one_tier_scored_only() -> None:
    trace = make_trace(latency_ms=60_000, usage={"output_tokens": 500})
    score = efficiency_score(trace, {"minimal": 0.75})
    # 0.75 / (500 / 1000) = 1.5 ; 0.75 / (60 000 / 60 000) = 0.75
    assert score.token_efficiency["minimal"].value == pytest.approx(1.5)
    assert score.time_efficiency["minimal"].value == pytest.approx(0.75)
    assert score.token_efficiency["optimal"].value is None


def test_zero_tokens_and_zero_latency_are_undefined_not_zero() -> None:
    score = efficiency_score(make_trace(), {"minimal": 1.0, "optimal": 1.0})
    assert score.latency_ms.value is None
    assert score.token_efficiency["minimal"].value is None
    assert score.token_efficiency["minimal"].reason == "the trace records no token usage"
    assert score.time_efficiency["minimal"].value is None


def test_wait_longer_than_latency_is_undefined() -> None:
    score = efficiency_score(make_trace(latency_ms=10, rate_limit_wait_ms=20))
    assert score.latency_ms.value is None
    assert score.latency_ms.reason is not None and "exceeds" in score.latency_ms.reason


@pytest.mark.parametrize("accuracy", [{"minimal": 1.5}, {"minimal": -0.1}, {"best": 1.0}])
def test_bad_accuracy_is_rejected(accuracy: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="accuracy"):
        efficiency_score(make_trace(), accuracy)  # type: ignore[arg-type]
