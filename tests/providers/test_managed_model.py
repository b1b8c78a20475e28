"""The one model wrapper: shared limiter, token reservations settled, concurrency, counting."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from datagouv_eval_pipeline.core.providers.limits import RateLimit, RateLimiter
from datagouv_eval_pipeline.core.providers.managed import Answered, ManagedModel, counting_requests
from datagouv_eval_pipeline.core.providers.retry import RetryWait
from tests.providers.fake_clock import Clock


def _answer(input_tokens: int, output_tokens: int) -> FunctionModel:
    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        usage = RequestUsage(input_tokens=input_tokens, output_tokens=output_tokens)
        return ModelResponse(parts=[TextPart("ok")], usage=usage)

    return FunctionModel(answer)


PROMPT: list[ModelMessage] = [
    ModelRequest(parts=[UserPromptPart("x" * 400)])
]  # 400 characters: 100 tokens


def _send(model: ManagedModel, messages: list[ModelMessage] | None = None) -> ModelResponse:
    return asyncio.run(model.request(messages or PROMPT, None, ModelRequestParameters()))


def test_a_request_reserves_its_estimate_and_settles_what_it_really_used() -> None:
    clock = Clock()
    # 6,000 tokens a minute: 100 a second, a full bucket to start with.
    limiter = RateLimiter(RateLimit(tokens_per_minute=6000), clock)
    model = ManagedModel(_answer(300, 50), limiter, expected_output_tokens=200)
    _send(model)
    # Reserved 100 + 200 = 300, used 350: the bucket holds 6000 - 350 = 5650. Asking 5750
    # leaves it 100 short: one second of refill.
    assert limiter.reserve(5750) == pytest.approx(1.0)
    assert model.requests == 1 and model.waits == []


def test_the_estimate_waits_for_the_bucket_and_the_wait_is_recorded() -> None:
    clock = Clock()
    limiter = RateLimiter(RateLimit(tokens_per_minute=6000), clock)
    assert limiter.reserve(6000) == 0.0  # someone else emptied the bucket
    model = ManagedModel(_answer(100, 200), limiter, expected_output_tokens=200)
    _send(model)
    # 300 tokens estimated at 100 a second: three seconds, a wait of the limiter (attempt 0).
    assert clock.slept == [pytest.approx(3.0)]
    ((attempt, seconds, reason),) = [(w.attempt, w.seconds, w.reason) for w in model.waits]
    assert (attempt, reason) == (0, "rate limiter")
    assert seconds == pytest.approx(3.0)


def test_without_a_token_limit_nothing_is_reserved() -> None:
    clock = Clock()
    limiter = RateLimiter(RateLimit(requests_per_minute=60), clock)
    model = ManagedModel(_answer(10**6, 10**6), limiter)
    _send(model)
    _send(model)
    assert clock.slept == [0.0, 1.0]  # only the request pacing: one a second


class Recorder:
    def __init__(self) -> None:
        self.events: list[str] = []

    def before_request(self, messages: Sequence[ModelMessage]) -> None:
        self.events.append(f"before {len(messages)}")

    def waited(self, wait: RetryWait) -> None:
        self.events.append(f"waited {wait.reason}")

    def answered(self, request: Answered) -> None:
        self.events.append(
            f"answered {request.response.usage.input_tokens} after {request.attempts}"
        )


def test_the_observer_is_told_before_and_after() -> None:
    recorder = Recorder()
    _send(ManagedModel(_answer(7, 1), observer=recorder))
    assert recorder.events == ["before 1", "answered 7 after 1"]


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

    model = ManagedModel(FunctionModel(answer), max_concurrency=3)

    async def main() -> int:
        with counting_requests() as sent:
            await asyncio.gather(
                *(model.request([], None, ModelRequestParameters()) for _ in range(20))
            )
        return sent[0]

    assert asyncio.run(main()) == 20
    assert peak == 3
    assert model.requests == 20


def test_invalid_concurrency_is_refused() -> None:
    with pytest.raises(ValueError, match="max_concurrency"):
        ManagedModel(FunctionModel(lambda m, i: ModelResponse(parts=[])), max_concurrency=0)
