"""Rate limiter, retry policy and Retry-After parsing (fake clock, no sleeping)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from email.utils import format_datetime

import pytest

from datagouv_eval_pipeline.core.providers.limits import RateLimit, RateLimiter, RateLimiters
from datagouv_eval_pipeline.core.providers.retry import RetryPolicy, retry_after_seconds
from datagouv_eval_pipeline.pipeline.agents.limits import RunBudget
from tests.providers.fake_clock import Clock


def test_requests_are_spaced_evenly() -> None:
    clock = Clock()
    limiter = RateLimiter(RateLimit(requests_per_minute=120), clock)
    # 120 per minute: one slot every 0.5 s, reserved in order, no burst.
    assert [limiter.reserve() for _ in range(4)] == [0.0, 0.5, 1.0, 1.5]
    clock.now_s += 10  # idle time does not build up a burst allowance beyond one slot
    assert limiter.reserve() == 0.0
    assert limiter.reserve() == 0.5


def test_acquire_sleeps_for_the_reserved_slot() -> None:
    clock = Clock()
    limiter = RateLimiter(RateLimit(requests_per_minute=60), clock)
    waits = asyncio.run(_acquire_many(limiter, 3))
    assert waits == [0.0, 1.0, 1.0]  # each acquire waits one second after the previous one
    assert clock.slept == [0.0, 1.0, 1.0]


async def _acquire_many(limiter: RateLimiter, count: int) -> list[float]:
    return [await limiter.acquire() for _ in range(count)]


def test_token_bucket_reserves_then_settles() -> None:
    clock = Clock()
    limiter = RateLimiter(RateLimit(tokens_per_minute=6000), clock)  # 100 tokens a second
    assert limiter.reserve(5000) == 0.0  # the bucket starts full (6000)
    assert limiter.reserve(3000) == pytest.approx(20.0)  # 2000 short: 20 s of refill
    limiter.settle(estimated=3000, actual=1000)  # 2000 tokens given back
    assert limiter.reserve(0) == 0.0


def test_hold_off_after_a_429_delays_later_requests() -> None:
    clock = Clock()
    limiter = RateLimiter(RateLimit(requests_per_minute=600), clock)
    assert limiter.reserve() == 0.0
    limiter.hold_off(3.0)
    assert limiter.reserve() == pytest.approx(3.0)


def test_limiters_are_shared_per_provider_with_defaults() -> None:
    limiters = RateLimiters({"mistral": RateLimit(requests_per_minute=5)})
    assert limiters.get("mistral") is limiters.get("mistral")
    assert limiters.get("mistral").limit.requests_per_minute == 5
    assert limiters.limit_for("albert").requests_per_minute == 10  # documented default
    assert limiters.limit_for("offline") == RateLimit()
    assert RateLimiters(default=RateLimit()).limit_for("albert") == RateLimit()


def test_retry_after_headers() -> None:
    assert retry_after_seconds({"Retry-After": "7"}) == 7.0
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "1"}) == 0.25
    assert retry_after_seconds({"x": "1"}) is None
    assert retry_after_seconds(None) is None
    when = datetime(2026, 1, 1, 12, 0, 30, tzinfo=UTC)
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC).timestamp()
    assert retry_after_seconds({"Retry-After": format_datetime(when, usegmt=True)}, now) == 30.0


def test_retry_policy_prefers_retry_after_floors_and_caps_it() -> None:
    policy = RetryPolicy(base_delay_s=1.0, max_delay_s=10.0, min_delay_s=0.5, jitter_s=0)
    assert [policy.backoff(n) for n in (1, 2, 3, 5)] == [1.0, 2.0, 4.0, 10.0]
    assert policy.delay(1, {"retry-after": "3"}) == 3.0
    assert policy.delay(1, {"retry-after": "600"}) == 10.0
    # Retry-After: 0 never means "hammer": the floor applies.
    assert policy.delay(1, {"retry-after": "0"}) == 0.5
    assert policy.delay(1, {"retry-after-ms": "100"}) == 0.5
    assert policy.delay(2, {}) == 2.0


def test_jitter_adds_at_most_jitter_s_to_the_backoff() -> None:
    policy = RetryPolicy(base_delay_s=1.0, jitter_s=0.5)
    waits = [policy.backoff(2) for _ in range(200)]
    assert all(2.0 <= wait <= 2.5 for wait in waits)
    assert len(set(waits)) > 1


def test_invalid_settings_are_rejected() -> None:
    with pytest.raises(ValueError, match="max_requests"):
        RunBudget(max_requests=0)
    with pytest.raises(ValueError, match="requests_per_minute"):
        RateLimit(requests_per_minute=0)
    with pytest.raises(ValueError, match="retries"):
        RetryPolicy(retries=-1)
    with pytest.raises(ValueError, match="min_delay_s"):
        RetryPolicy(min_delay_s=5, max_delay_s=1)
