from __future__ import annotations

import asyncio

import pytest

from datagouv_eval_pipeline.judges.limiter import RateLimiter
from tests.judges.judges_factories import Grader, default_answers, llm_judge


def test_pacing_spaces_requests_by_the_rate() -> None:
    # A frozen clock: every wait is exactly what the pacing asks for.
    waits: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        waits.append(seconds)

    limiter = RateLimiter(
        max_concurrency=10,
        requests_per_minute=60,
        burst=2,
        clock=lambda: 100.0,
        sleep=fake_sleep,
    )

    async def take(n: int) -> None:
        for _ in range(n):
            await limiter.acquire("t")
            limiter.release()

    asyncio.run(take(4))
    # 60/min = one per second; a burst of 2 starts at once, then 1 s, 2 s later.
    assert waits == [1.0, 2.0]
    assert limiter.acquired == 4


def test_concurrency_never_exceeds_the_limit() -> None:
    limiter = RateLimiter(max_concurrency=3)
    running = 0
    peak = 0

    async def work() -> None:
        nonlocal running, peak
        await limiter.acquire("t")
        try:
            running += 1
            peak = max(peak, running)
            await asyncio.sleep(0)
            await asyncio.sleep(0)
        finally:
            running -= 1
            limiter.release()

    async def main() -> None:
        await asyncio.gather(*(work() for _ in range(20)))

    asyncio.run(main())
    assert peak == 3


def test_the_judge_sends_requests_through_its_limiter() -> None:
    limiter = RateLimiter(max_concurrency=2)
    judge = llm_judge(Grader(default_answers()), limiter=limiter)
    verdict = asyncio.run(judge.trajectory("search.datasets", [], [], tier="minimal"))
    assert verdict.score == 0.8
    assert limiter.acquired == 1
    assert judge.model_requests == 1


def test_invalid_limits_are_refused() -> None:
    with pytest.raises(ValueError, match="max_concurrency"):
        RateLimiter(max_concurrency=0)
    with pytest.raises(ValueError, match="requests_per_minute"):
        RateLimiter(requests_per_minute=0)
