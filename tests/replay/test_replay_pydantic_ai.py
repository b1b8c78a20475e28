"""Record and replay through pydantic-ai's ``OpenAIChatModel`` with a real tool."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai_compatible import OpenAICompatibleProvider

from datagouv_eval_pipeline.world.replay import ReplayConfig, ReplayServer, load_cassette

from .scripts import UPSTREAM_KEY, PoolsScript

QUESTION = "How many pools in Lyon?"


def _agent(base_url: str, api_key: str, tool_log: list[str]) -> Agent[None, str]:
    model = OpenAIChatModel(
        "mistral-small-latest",
        provider=OpenAICompatibleProvider("replay", base_url=base_url, api_key=api_key),
    )
    agent = Agent(model, instructions="Answer with the tool's figure.")

    @agent.tool_plain
    def lookup(city: str) -> str:
        """Count the swimming pools of a city."""
        tool_log.append(city)
        return f"{city} has 19 pools"

    return agent


def _tool_calls(messages: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (part.tool_name, part.args_as_dict())
        for message in messages
        if isinstance(message, ModelResponse)
        for part in message.parts
        if isinstance(part, ToolCallPart)
    ]


def test_agent_run_records_then_replays_identically(
    upstream: ReplayServer, script: PoolsScript, tmp_path: Path
) -> None:
    recorded_tools: list[str] = []
    record = ReplayConfig(mode="record", cassettes_dir=tmp_path, upstream_url=upstream.base_url)
    with ReplayServer(record) as recorder:
        live = _agent(recorder.base_url, UPSTREAM_KEY, recorded_tools).run_sync(QUESTION)
    assert live.output == "Answer: Lyon has 19 pools"
    assert recorded_tools == ["Lyon"]
    assert script.calls == 2  # tool call, then final answer
    # What pydantic-ai sent really went through the recorder to the upstream.
    assert script.bodies[1]["messages"][-1] == {
        "role": "tool",
        "tool_call_id": script.bodies[1]["messages"][-2]["tool_calls"][0]["id"],
        "content": "Lyon has 19 pools",
    }

    text = (tmp_path / "default.json").read_text(encoding="utf-8")
    assert "sk-test" not in text
    assert "authorization" not in text.lower()
    assert len(load_cassette(tmp_path / "default.json").interactions) == 2

    replayed_tools: list[str] = []
    with ReplayServer(ReplayConfig(mode="replay", cassettes_dir=tmp_path)) as replayer:
        replayed = _agent(replayer.base_url, "sk-test-not-the-key", replayed_tools).run_sync(
            QUESTION
        )
        replayer.raise_for_misses()
    assert replayed.output == live.output
    assert replayed_tools == ["Lyon"]  # the tool really ran again on replay
    assert (
        _tool_calls(replayed.all_messages())
        == _tool_calls(live.all_messages())
        == [("lookup", {"city": "Lyon"})]
    )
    assert replayed.usage.input_tokens == live.usage.input_tokens == 20
    assert replayed.usage.output_tokens == live.usage.output_tokens == 10
    assert script.calls == 2  # replay never reached the upstream


def test_streamed_agent_run_replays_a_non_streamed_recording(
    upstream: ReplayServer, tmp_path: Path
) -> None:
    record = ReplayConfig(mode="record", cassettes_dir=tmp_path, upstream_url=upstream.base_url)
    with ReplayServer(record) as recorder:
        _agent(recorder.base_url, UPSTREAM_KEY, []).run_sync(QUESTION)

    async def streamed(base_url: str) -> str:
        async with _agent(base_url, "offline", []).run_stream(QUESTION) as result:
            return await result.get_output()

    with ReplayServer(ReplayConfig(mode="replay", cassettes_dir=tmp_path)) as replayer:
        assert asyncio.run(streamed(replayer.base_url)) == "Answer: Lyon has 19 pools"
    assert replayer.misses == []


def test_agent_replay_miss_fails_loudly_with_the_request(
    upstream: ReplayServer, tmp_path: Path
) -> None:
    record = ReplayConfig(mode="record", cassettes_dir=tmp_path, upstream_url=upstream.base_url)
    with ReplayServer(record) as recorder:
        _agent(recorder.base_url, UPSTREAM_KEY, []).run_sync(QUESTION)

    replay = ReplayConfig(mode="replay", cassettes_dir=tmp_path)
    with ReplayServer(replay) as replayer, pytest.raises(ModelHTTPError) as caught:
        _agent(replayer.base_url, "offline", []).run_sync("How many pools in Paris?")
    assert caught.value.status_code == 404
    assert "How many pools in Paris?" in str(caught.value)
    assert "cassette miss" in str(caught.value)
    assert len(replayer.misses) == 1
    assert "last=user: 'How many pools in Paris?'" in replayer.misses[0].request
