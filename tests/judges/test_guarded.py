"""The judge's requests: the provider's shared limiter, bounded concurrency, counted requests."""

from __future__ import annotations

import asyncio

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.function import AgentInfo, FunctionModel

from datagouv_eval_pipeline.judges.guarded import GuardedModel
from datagouv_eval_pipeline.judges.protocol import TrajectoryInput
from datagouv_eval_pipeline.providers.limits import RateLimit, RateLimiters
from tests.judges.judges_factories import Grader, default_answers, llm_judge


def test_concurrency_never_exceeds_the_limit() -> None:
    running = 0
    peak = 0

    async def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        running -= 1
        return ModelResponse(parts=[TextPart("ok")])

    guarded = GuardedModel(FunctionModel(answer), max_concurrency=3)

    async def main() -> None:
        await asyncio.gather(
            *(guarded.request([], None, ModelRequestParameters()) for _ in range(20))
        )

    asyncio.run(main())
    assert peak == 3
    assert guarded.requests == 20


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


def test_invalid_concurrency_is_refused() -> None:
    with pytest.raises(ValueError, match="max_concurrency"):
        GuardedModel(FunctionModel(lambda m, i: ModelResponse(parts=[])), max_concurrency=0)
