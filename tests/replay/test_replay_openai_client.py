"""Record and replay through the real ``openai.AsyncOpenAI`` client."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from datagouv_eval_pipeline.world.replay import (
    CassetteMissError,
    ReplayConfig,
    ReplayServer,
    load_cassette,
)

from .scripts import UPSTREAM_KEY, PoolsScript

TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Count the swimming pools of a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


def _client(base_url: str, api_key: str = "sk-test-replay-caller-000000") -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0)


async def _ask(base_url: str, content: str, api_key: str = UPSTREAM_KEY) -> dict[str, Any]:
    async with _client(base_url, api_key) as client:
        completion = await client.chat.completions.create(
            model="mistral-small-latest",
            messages=[{"role": "user", "content": content}],
            tools=TOOLS,
            temperature=0,
        )
    return completion.model_dump()


def _record(upstream: ReplayServer, cassettes: Path, mode: str = "record") -> ReplayServer:
    return ReplayServer(
        ReplayConfig(mode=mode, cassettes_dir=cassettes, upstream_url=upstream.base_url)  # type: ignore[arg-type]
    )


def _replay(cassettes: Path, **options: Any) -> ReplayServer:
    return ReplayServer(ReplayConfig(mode="replay", cassettes_dir=cassettes, **options))


def test_record_then_replay_gives_the_same_completion(
    upstream: ReplayServer, script: PoolsScript, tmp_path: Path
) -> None:
    with _record(upstream, tmp_path) as recorder:
        recorded = asyncio.run(_ask(recorder.base_url, "How many pools in Lyon?"))
    assert script.calls == 1
    call = recorded["choices"][0]["message"]["tool_calls"][0]["function"]
    assert (call["name"], json.loads(call["arguments"])) == ("lookup", {"city": "Lyon"})

    # Replay needs no upstream and no valid key.
    with _replay(tmp_path) as replayer:
        replayed = asyncio.run(_ask(replayer.base_url, "How many pools in Lyon?", "sk-test-other"))
        replayer.raise_for_misses()
    assert replayed == recorded
    assert script.calls == 1


def test_cassette_holds_no_key_and_no_auth_header(upstream: ReplayServer, tmp_path: Path) -> None:
    # The question itself carries a key-shaped string: it is redacted in the stored request,
    # and still matches on replay because the key is computed before scrubbing.
    question = "My key is sk-test-leaked-in-prompt-42, how many pools in Lyon?"
    with _record(upstream, tmp_path) as recorder:
        recorded = asyncio.run(_ask(recorder.base_url, question))
    text = (tmp_path / "default.json").read_text(encoding="utf-8")
    assert "sk-test" not in text
    assert "authorization" not in text.lower()
    assert "bearer" not in text.lower()
    stored = load_cassette(tmp_path / "default.json").interactions[0].request
    assert stored.body["messages"][0]["content"] == (
        "My key is <redacted>, how many pools in Lyon?"
    )
    assert "user-agent" in stored.headers  # ordinary headers are kept

    with _replay(tmp_path) as replayer:
        assert asyncio.run(_ask(replayer.base_url, question)) == recorded
    assert replayer.misses == []


def test_record_forwards_the_callers_key_and_never_stores_a_401(
    upstream: ReplayServer, tmp_path: Path
) -> None:
    with _record(upstream, tmp_path) as recorder, pytest.raises(openai.AuthenticationError):
        asyncio.run(_ask(recorder.base_url, "How many pools in Lyon?", "sk-test-wrong-key"))
    assert not (tmp_path / "default.json").exists()


def test_identical_requests_replay_in_recorded_order(
    upstream: ReplayServer, tmp_path: Path
) -> None:
    async def twice(base_url: str) -> list[str]:
        answers = []
        for _ in range(2):
            completion = await _ask(base_url, "count please")
            answers.append(completion["choices"][0]["message"]["content"])
        return answers

    with _record(upstream, tmp_path) as recorder:
        assert asyncio.run(twice(recorder.base_url)) == ["answer 1", "answer 2"]
    cassette = load_cassette(tmp_path / "default.json")
    assert len(set(cassette.keys())) == 1 and len(cassette.keys()) == 2

    with _replay(tmp_path) as replayer:
        assert asyncio.run(twice(replayer.base_url)) == ["answer 1", "answer 2"]
        with pytest.raises(openai.NotFoundError, match="already replayed"):
            asyncio.run(_ask(replayer.base_url, "count please"))
    with _replay(tmp_path, repeat_exhausted=True) as replayer:
        answers = asyncio.run(twice(replayer.base_url))
        answers.append(
            asyncio.run(_ask(replayer.base_url, "count please"))["choices"][0]["message"]["content"]
        )
    assert answers == ["answer 1", "answer 2", "answer 2"]


def test_a_replay_miss_names_the_request_and_is_kept(
    upstream: ReplayServer, tmp_path: Path
) -> None:
    with _record(upstream, tmp_path) as recorder:
        asyncio.run(_ask(recorder.base_url, "How many pools in Lyon?"))
    with _replay(tmp_path) as replayer:
        with pytest.raises(openai.NotFoundError) as caught:
            asyncio.run(_ask(replayer.base_url, "How many pools in Paris?"))
        misses = replayer.misses
        with pytest.raises(CassetteMissError, match="How many pools in Paris"):
            replayer.raise_for_misses()
    error = caught.value.body
    assert isinstance(error, dict)
    assert error["type"] == "cassette_miss"
    assert "How many pools in Paris?" in error["message"]
    assert "tools=['lookup']" in error["message"]
    assert "model='mistral-small-latest'" in error["message"]
    assert error["key"] in error["message"]
    assert error["closest"].endswith(
        "first difference at messages[0].content: recorded 'How many pools in Lyon?', "
        "requested 'How many pools in Paris?'"
    )
    assert [miss.key for miss in misses] == [error["key"]]


def test_a_missing_cassette_is_a_miss(tmp_path: Path) -> None:
    with _replay(tmp_path) as replayer, pytest.raises(openai.NotFoundError, match="no cassette"):
        asyncio.run(_ask(replayer.cassette_url("never-recorded"), "hello"))
    assert [miss.cassette for miss in replayer.misses] == ["never-recorded"]


def test_named_cassettes_and_record_new(
    upstream: ReplayServer, script: PoolsScript, tmp_path: Path
) -> None:
    with _record(upstream, tmp_path) as recorder:
        asyncio.run(_ask(recorder.cassette_url("task-1"), "How many pools in Lyon?"))
    assert (tmp_path / "task-1.json").exists() and not (tmp_path / "default.json").exists()

    with _record(upstream, tmp_path, mode="record_new") as recorder:
        asyncio.run(_ask(recorder.cassette_url("task-1"), "How many pools in Lyon?"))  # hit
        asyncio.run(_ask(recorder.cassette_url("task-1"), "How many pools in Nantes?"))  # new
    assert script.calls == 2
    assert len(load_cassette(tmp_path / "task-1.json").interactions) == 2

    with _replay(tmp_path) as replayer:
        asyncio.run(_ask(replayer.cassette_url("task-1"), "How many pools in Nantes?"))
        models = httpx.get(replayer.cassette_url("task-1") + "/models").json()
    assert replayer.misses == []
    assert [m["id"] for m in models["data"]] == ["mistral-small-latest"]


def test_streaming_replay_rebuilds_the_completion(upstream: ReplayServer, tmp_path: Path) -> None:
    with _record(upstream, tmp_path) as recorder:
        asyncio.run(_ask(recorder.base_url, "How many pools in Lyon?"))

    async def stream(base_url: str) -> tuple[list[tuple[str, str]], str | None, int | None]:
        calls: dict[int, list[str]] = {}
        finish = None
        usage = None
        async with _client(base_url) as client:
            chunks = await client.chat.completions.create(
                model="mistral-small-latest",
                messages=[{"role": "user", "content": "How many pools in Lyon?"}],
                tools=TOOLS,
                temperature=0,
                stream=True,
                stream_options={"include_usage": True},
            )
            async for chunk in chunks:
                if chunk.usage is not None:
                    usage = chunk.usage.total_tokens
                for choice in chunk.choices:
                    finish = choice.finish_reason or finish
                    for call in choice.delta.tool_calls or []:
                        function = call.function
                        assert function is not None
                        entry = calls.setdefault(call.index, ["", ""])
                        entry[0] += function.name or ""
                        entry[1] += function.arguments or ""
        return [(name, args) for name, args in calls.values()], finish, usage

    with _replay(tmp_path) as replayer:
        calls, finish, usage = asyncio.run(stream(replayer.base_url))
    assert calls == [("lookup", '{"city": "Lyon"}')]
    assert finish == "tool_calls"
    assert usage == 15  # the scripted completion's 10 prompt + 5 completion tokens


def test_record_can_take_the_key_from_an_environment_variable(
    upstream: ReplayServer, script: PoolsScript, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REPLAY_TEST_UPSTREAM_KEY", UPSTREAM_KEY)
    config = ReplayConfig(
        mode="record",
        cassettes_dir=tmp_path,
        upstream_url=upstream.base_url,
        upstream_api_key_env="REPLAY_TEST_UPSTREAM_KEY",
    )
    with ReplayServer(config) as recorder:
        # The caller's own key is not the upstream's: the server substitutes the env one.
        asyncio.run(_ask(recorder.base_url, "How many pools in Lyon?", "sk-test-caller-123456"))
    assert script.calls == 1
    text = (tmp_path / "default.json").read_text(encoding="utf-8")
    assert "sk-test" not in text and UPSTREAM_KEY not in text


def test_an_unreachable_upstream_is_a_502(tmp_path: Path) -> None:
    config = ReplayConfig(
        mode="record", cassettes_dir=tmp_path, upstream_url="http://127.0.0.1:9/v1"
    )
    with ReplayServer(config) as recorder, pytest.raises(openai.APIStatusError) as caught:
        asyncio.run(_ask(recorder.base_url, "How many pools in Lyon?"))
    assert caught.value.status_code == 502
    assert "unreachable" in caught.value.message
    assert not (tmp_path / "default.json").exists()
