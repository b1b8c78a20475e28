"""The match key: what is in it, what is not, and how misses are described."""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

from datagouv_eval_pipeline.world.replay import canonical_request, describe_request, request_key
from datagouv_eval_pipeline.world.replay.matching import first_difference

TOOL = {
    "type": "function",
    "function": {
        "name": "lookup",
        "description": "Count pools.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def _body() -> dict[str, Any]:
    return {
        "model": "mistral-small-latest",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Pools in Lyon?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_abc",
                        "type": "function",
                        "function": {"name": "lookup", "arguments": '{"city": "Lyon"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_abc", "content": "19"},
        ],
        "tools": [TOOL],
        "tool_choice": "auto",
        "temperature": 0.0,
        "stream": False,
    }


def test_canonical_request_worked_example() -> None:
    assert canonical_request(_body()) == {
        "model": "mistral-small-latest",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Pools in Lyon?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"name": "lookup", "arguments": {"city": "Lyon"}}],
            },
            {"role": "tool", "content": "19", "answers_tool": "lookup"},
        ],
        "tools": [TOOL],
        "tool_choice": "auto",
        "temperature": 0,
    }


def test_key_is_sha256_head_of_sorted_compact_json() -> None:
    canonical = json.dumps(
        canonical_request(_body()), sort_keys=True, ensure_ascii=False, separators=(",", ":")
    )
    assert request_key(_body()) == hashlib.sha256(canonical.encode()).hexdigest()[:16]


def test_volatile_fields_and_ids_do_not_change_the_key() -> None:
    changed = _body()
    changed.update(
        stream=True, stream_options={"include_usage": True}, user="u-1", metadata={"run": "7"}
    )
    changed["messages"][2]["tool_calls"][0]["id"] = "call_other"
    changed["messages"][2]["tool_calls"][0]["type"] = None  # Mistral's null type
    changed["messages"][2]["tool_calls"][0]["function"]["arguments"] = '{ "city" :"Lyon" }'
    changed["messages"][2]["content"] = ""
    changed["messages"][3]["tool_call_id"] = "call_other"
    changed["messages"][1]["content"] = [{"type": "text", "text": "Pools in Lyon?"}]
    changed["temperature"] = 0
    changed = dict(reversed(list(changed.items())))  # key order does not matter either
    assert request_key(changed) == request_key(_body())


def test_what_the_model_sees_changes_the_key() -> None:
    base = request_key(_body())
    variants = []
    for path, value in [
        (("model",), "mistral-large-latest"),
        (("temperature",), 0.7),
        (("tool_choice",), "required"),
        (("messages", 1, "content"), "Pools in Paris?"),
        (("messages", 3, "content"), "20"),
        (("tools", 0, "function", "description"), "Count the pools."),
    ]:
        body = copy.deepcopy(_body())
        target: Any = body
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = value
        variants.append(request_key(body))
    extra = _body()
    extra["max_tokens"] = 100
    variants.append(request_key(extra))
    assert base not in variants
    assert len(set(variants)) == len(variants)


def test_describe_request_names_model_last_message_and_tools() -> None:
    assert describe_request(_body()) == (
        "model='mistral-small-latest' messages=4 last=tool: '19' tools=['lookup'] "
        'tool_choice="auto"'
    )
    body = _body()
    body["messages"] = body["messages"][:3]
    assert "last=assistant: '' calls=['lookup']" in describe_request(body)


def test_first_difference_points_at_the_path() -> None:
    other = _body()
    other["messages"][3]["content"] = "20"
    assert first_difference(canonical_request(_body()), canonical_request(other)) == (
        "messages[3].content",
        "19",
        "20",
    )
    shorter = _body()
    shorter["messages"] = shorter["messages"][:2]
    assert first_difference(_body()["messages"], shorter["messages"]) == ("length", 4, 2)
    assert first_difference(_body(), _body()) is None
