"""Provider simulation: rate limit with Retry-After, injected 5xx, Mistral quirks."""

from __future__ import annotations

import asyncio
from typing import Any

import openai
import pytest
from pydantic_ai import Agent
from pydantic_ai.exceptions import UnexpectedModelBehavior
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai_compatible import OpenAICompatibleProvider

from datagouv_eval_pipeline.world.replay import (
    ProviderSimulation,
    apply_mistral_quirks,
    text_completion,
    tool_call_completion,
)
from datagouv_eval_pipeline.world.replay.simulate import SlidingWindowLimiter

from .scripts import PoolsScript, scripted_server


async def _create(base_url: str, content: str, max_retries: int = 0) -> Any:
    async with openai.AsyncOpenAI(
        base_url=base_url, api_key="sk-test-sim", max_retries=max_retries
    ) as client:
        return await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": content}]
        )


def test_over_the_rate_limit_answers_429_with_retry_after(script: PoolsScript) -> None:
    simulation = ProviderSimulation(rate_limit_rpm=2)
    with scripted_server(script, simulation) as server:
        asyncio.run(_create(server.base_url, "count"))
        asyncio.run(_create(server.base_url, "count"))
        with pytest.raises(openai.RateLimitError) as caught:
            asyncio.run(_create(server.base_url, "count"))
        stats = server.state.stats()
    retry_after = int(caught.value.response.headers["retry-after"])
    assert 1 <= retry_after <= 60
    assert caught.value.code == "rate_limit_exceeded"
    # The rejected request never reached the script and is not counted as served.
    assert script.calls == 2
    assert (stats["requests"], stats["rate_limited"]) == (2, 1)


def test_sliding_window_limiter_waits_for_the_oldest_request() -> None:
    now = [0.0]
    limiter = SlidingWindowLimiter(2, 60.0, clock=lambda: now[0])
    assert limiter.try_acquire() is None  # t=0
    now[0] = 10.0
    assert limiter.try_acquire() is None  # t=10
    now[0] = 15.0
    assert limiter.try_acquire() == 45.0  # the t=0 admission leaves the window at t=60
    now[0] = 60.0
    assert limiter.try_acquire() is None
    assert limiter.try_acquire() == 10.0  # now the t=10 one is the oldest


def test_injected_5xx_then_recovery(script: PoolsScript) -> None:
    with scripted_server(script, ProviderSimulation(fail_requests={1: 503})) as server:
        with pytest.raises(openai.InternalServerError) as caught:
            asyncio.run(_create(server.base_url, "count"))
        completion = asyncio.run(_create(server.base_url, "count"))
    assert caught.value.status_code == 503
    assert completion.choices[0].message.content == "answer 1"


def test_the_client_retries_an_injected_5xx(script: PoolsScript) -> None:
    with scripted_server(script, ProviderSimulation(fail_every=2, fail_status=500)) as server:
        asyncio.run(_create(server.base_url, "count"))  # request 1: ok
        completion = asyncio.run(_create(server.base_url, "count", max_retries=1))  # 2 fails, 3 ok
        stats = server.state.stats()
    assert completion.choices[0].message.content == "answer 2"
    assert (stats["requests"], stats["faults"]) == (3, 1)


def test_simulation_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="latency_s"):
        ProviderSimulation(latency_s=-1)
    with pytest.raises(ValueError, match="rate_limit_rpm"):
        ProviderSimulation(rate_limit_rpm=0)
    with pytest.raises(ValueError, match="fail_requests"):
        ProviderSimulation(fail_requests={0: 503})
    with pytest.raises(ValueError, match="fail_status"):
        ProviderSimulation(fail_every=3, fail_status=200)
    assert ProviderSimulation(fail_every=3).fault_for(6) == 503
    assert ProviderSimulation(fail_requests={2: 502}, fail_every=2).fault_for(2) == 502


def test_mistral_quirks_reshape_the_completion() -> None:
    text = apply_mistral_quirks(text_completion("m", "Bonjour"))
    assert text["choices"][0]["message"]["content"] == [{"type": "text", "text": "Bonjour"}]
    calls = apply_mistral_quirks(tool_call_completion("m", [("lookup", {"city": "Lyon"})]))
    message = calls["choices"][0]["message"]
    assert message["content"] is None  # nothing to reshape
    assert [call["type"] for call in message["tool_calls"]] == [None]
    assert apply_mistral_quirks({"error": "x"}) == {"error": "x"}


def test_mistral_quirks_reach_the_openai_client(script: PoolsScript) -> None:
    with scripted_server(script, ProviderSimulation(mistral_quirks=True)) as server:
        calls = asyncio.run(_create(server.base_url, "pools in Lyon?"))
        text = asyncio.run(_create(server.base_url, "count"))
    tool_call = calls.choices[0].message.tool_calls[0]
    assert tool_call.type is None
    assert tool_call.function.name == "lookup"
    assert text.choices[0].message.content == [{"type": "text", "text": "answer 2"}]


def test_mistral_null_tool_type_reaches_pydantic_ai_validation(script: PoolsScript) -> None:
    # Plain OpenAIChatModel rejects `type: null`: the agent side must handle this quirk itself
    # (this test shows the quirk really arrives through the real client path).
    with scripted_server(script, ProviderSimulation(mistral_quirks=True)) as server:
        model = OpenAIChatModel(
            "mistral-small-latest",
            provider=OpenAICompatibleProvider("mistral-sim", base_url=server.base_url, api_key="x"),
        )
        agent = Agent(model)

        @agent.tool_plain
        def lookup(city: str) -> str:
            """Count the swimming pools of a city."""
            return f"{city} has 19 pools"

        with pytest.raises(UnexpectedModelBehavior, match="tool_calls"):
            agent.run_sync("pools in Lyon?")
