"""The match key of a chat-completions request, and how to describe a request that missed.

The key is a hash of a *canonical* request: the JSON body with the fields that change between two
runs of the same conversation removed or normalised (see :data:`VOLATILE_FIELDS` and
:func:`canonical_request`; ``docs/replay.md`` lists the rules). Two requests that ask the model
the same thing get the same key, whatever the client library, the tool-call ids or the
streaming flag.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from datagouv_eval_pipeline.base.text import canonical_json

KEY_SCHEME = "chat-completions/v1"
"""Name of the canonicalisation rules below; stored in every cassette."""

KEY_LENGTH = 16
"""Hex characters kept from the SHA-256 digest (64 bits: plenty for one cassette)."""

VOLATILE_FIELDS = frozenset(
    {
        # Transport: a streamed and a non-streamed request ask for the same completion.
        "stream",
        "stream_options",
        # Caller bookkeeping that does not change what the model is asked.
        "user",
        "metadata",
        "store",
        "service_tier",
        "prompt_cache_key",
        "prompt_cache_retention",
        "safety_identifier",
    }
)
"""Top-level body fields left out of the key. Every other top-level field is part of it."""

_CONTENT_HEAD = 160


def _normalise_number(value: float) -> int | float:
    # 0 and 0.0 (or 1 and 1.0) must hash alike: clients differ in how they serialise them.
    if value.is_integer():
        return int(value)
    return value


def _normalise(value: Any) -> Any:
    """Return ``value`` with integral floats turned into ints, recursively."""
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return _normalise_number(value)
    if isinstance(value, Mapping):
        return {str(k): _normalise(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_normalise(item) for item in value]
    return value


def _canonical_content(content: Any) -> Any:
    """Text content as one string; other shapes (images, audio parts) kept as they are."""
    if content is None:
        # An assistant turn that only calls tools is sent with null or "" depending on the client.
        return ""
    if isinstance(content, list) and all(
        isinstance(part, Mapping) and part.get("type") == "text" for part in content
    ):
        # Mistral answers with a list of text chunks; clients may send it back either way.
        return "".join(str(part.get("text", "")) for part in content)
    return _normalise(content)


def _parse_arguments(arguments: Any) -> Any:
    """Tool-call arguments as a JSON value, so whitespace and key order do not matter."""
    if isinstance(arguments, str):
        try:
            return _normalise(json.loads(arguments)) if arguments.strip() else {}
        except json.JSONDecodeError:
            return arguments
    return _normalise(arguments)


def _canonical_tool_call(call: Mapping[str, Any]) -> dict[str, Any]:
    function = call.get("function") or {}
    if not isinstance(function, Mapping):
        function = {}
    # The id and the "type" (which Mistral sends as null) are left out.
    return {"name": function.get("name"), "arguments": _parse_arguments(function.get("arguments"))}


def _canonical_messages(messages: Any) -> Any:
    if not isinstance(messages, list):
        return _normalise(messages)
    call_names: dict[str, Any] = {}
    canonical: list[Any] = []
    for message in messages:
        if not isinstance(message, Mapping):
            canonical.append(_normalise(message))
            continue
        entry: dict[str, Any] = {}
        for field, value in message.items():
            if field in {"tool_call_id", "tool_calls", "content"}:
                continue
            entry[field] = _normalise(value)
        entry["content"] = _canonical_content(message.get("content"))
        raw_calls = message.get("tool_calls") or []
        if isinstance(raw_calls, list) and raw_calls:
            calls = [c for c in raw_calls if isinstance(c, Mapping)]
            entry["tool_calls"] = [_canonical_tool_call(c) for c in calls]
            for call in calls:
                call_id = call.get("id")
                if isinstance(call_id, str):
                    call_names[call_id] = (call.get("function") or {}).get("name")
        if "tool_call_id" in message:
            # Ids are random per provider run; the name of the tool answered is what matters.
            entry["answers_tool"] = call_names.get(str(message["tool_call_id"]))
        canonical.append(entry)
    return canonical


def canonical_request(body: Mapping[str, Any]) -> dict[str, Any]:
    """Return the part of a chat-completions body that identifies it.

    Rules (``KEY_SCHEME`` ``chat-completions/v1``):

    * the top-level fields in :data:`VOLATILE_FIELDS` are dropped; every other field is kept;
    * in each message, ``content`` that is null becomes ``""`` and a list of only text parts
      becomes the joined text; ``tool_calls`` keep only the function ``name`` and the parsed
      ``arguments``; ``tool_call_id`` is replaced by ``answers_tool``, the name of the call it
      answers;
    * floats with an integral value become ints (``0.0`` -> ``0``).

    Args:
        body: The decoded JSON request body.

    Returns:
        A JSON-ready dict; :func:`request_key` hashes it.
    """
    canonical: dict[str, Any] = {}
    for field, value in body.items():
        if field in VOLATILE_FIELDS:
            continue
        canonical[field] = _canonical_messages(value) if field == "messages" else _normalise(value)
    return canonical


def request_key(body: Mapping[str, Any]) -> str:
    """Return the match key of a request: the head of SHA-256 over its canonical JSON."""
    digest = hashlib.sha256(canonical_json(canonical_request(body)).encode("utf-8"))
    return digest.hexdigest()[:KEY_LENGTH]


def _head(text: str, limit: int = _CONTENT_HEAD) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def tool_names(body: Mapping[str, Any]) -> list[str]:
    """Names of the tools a request offers, in order."""
    names: list[str] = []
    for tool in body.get("tools") or []:
        if isinstance(tool, Mapping):
            function = tool.get("function")
            if isinstance(function, Mapping) and function.get("name") is not None:
                names.append(str(function["name"]))
    return names


def describe_request(body: Mapping[str, Any]) -> str:
    """One line naming a request: model, message count, last message, tools.

    Used in miss errors so that whoever reads the failure can tell which request it was.
    """
    messages = body.get("messages")
    parts = [f"model={body.get('model')!r}"]
    if isinstance(messages, list) and messages:
        last = messages[-1]
        parts.append(f"messages={len(messages)}")
        if isinstance(last, Mapping):
            content = _canonical_content(last.get("content"))
            text = content if isinstance(content, str) else canonical_json(content)
            calls = [
                _canonical_tool_call(c)["name"]
                for c in last.get("tool_calls") or []
                if isinstance(c, Mapping)
            ]
            described = f"last={last.get('role')!s}: {_head(text)!r}"
            if calls:
                described += f" calls={calls}"
            parts.append(described)
    else:
        parts.append("messages=0")
    parts.append(f"tools={tool_names(body)}")
    if "tool_choice" in body:
        parts.append(f"tool_choice={canonical_json(body['tool_choice'])}")
    return " ".join(parts)


def first_difference(expected: Any, actual: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """Return ``(path, expected, actual)`` at the first place two JSON values differ, or None.

    Paths look like ``messages[3].content``; it points a miss at what changed.
    """
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        for field in sorted(set(expected) | set(actual)):
            sub = f"{path}.{field}" if path else str(field)
            if field not in expected:
                return sub, "<absent>", actual[field]
            if field not in actual:
                return sub, expected[field], "<absent>"
            found = first_difference(expected[field], actual[field], sub)
            if found is not None:
                return found
        return None
    if isinstance(expected, list) and isinstance(actual, list):
        for index, (left, right) in enumerate(zip(expected, actual, strict=False)):
            found = first_difference(left, right, f"{path}[{index}]")
            if found is not None:
                return found
        if len(expected) != len(actual):
            return (f"{path}.length" if path else "length"), len(expected), len(actual)
        return None
    if expected != actual:
        return path or "<root>", expected, actual
    return None


def summarise_value(value: Any, limit: int = 80) -> str:
    """A short, one-line rendering of a JSON value for error messages."""
    text = value if isinstance(value, str) else canonical_json(value)
    return repr(_head(text, limit))
