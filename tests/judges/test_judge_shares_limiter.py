"""The judge's requests go through the provider's limiter object its agents use."""

from __future__ import annotations

import asyncio

from datagouv_eval_pipeline.core.judges.protocol import TrajectoryInput
from datagouv_eval_pipeline.core.providers.limits import RateLimit, RateLimiters
from tests.judges.judges_factories import Grader, default_answers, llm_judge


def test_the_judge_shares_the_provider_limiter_with_its_agents() -> None:
    limiters = RateLimiters({"test": RateLimit(requests_per_minute=6)})
    agents_limiter = limiters.get("test")
    judge = llm_judge(Grader(default_answers()), limiters=limiters, limiter_key="test")
    verdict = asyncio.run(judge.trajectory(TrajectoryInput("search.datasets", [], [], "minimal")))
    assert verdict.score == 0.8
    assert judge.model_requests == 1
    # The judge's request took the next slot of the same limiter object the agents use:
    # 6/min = one each 10 s, so the agents' next request is paced behind it.
    assert 0.0 < agents_limiter.reserve() <= 10.0
