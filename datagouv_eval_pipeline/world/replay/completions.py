"""Chat-completion bodies: builders for scripted answers, the Mistral quirks, SSE chunks.

Everything here is plain JSON-in, JSON-out, so scripted upstreams, tests and the benchmark can
build OpenAI-shaped answers without the server.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from datagouv_eval_pipeline.base.text import canonical_json


def _usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def _completion_id(model: str, payload: Any) -> str:
    # Deterministic ids keep scripted answers (and so cassettes) identical across runs.
    digest = hashlib.sha256(canonical_json([model, payload]).encode("utf-8")).hexdigest()
    return f"chatcmpl-{digest[:24]}"


def text_completion(
    model: str, text: str, *, prompt_tokens: int = 10, completion_tokens: int = 5
) -> dict[str, Any]:
    """A non-streamed completion whose assistant message is ``text``."""
    return {
        "id": _completion_id(model, text),
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": _usage(prompt_tokens, completion_tokens),
    }


def tool_call_completion(
    model: str,
    calls: Sequence[tuple[str, Mapping[str, Any]]],
    *,
    text: str | None = None,
    prompt_tokens: int = 10,
    completion_tokens: int = 5,
) -> dict[str, Any]:
    """A non-streamed completion asking for tool calls ``[(name, arguments), ...]``.

    Call ids are ``call_<hash>_<index>``, derived from the calls so they are stable.
    """
    stem = _completion_id(model, [[name, dict(args)] for name, args in calls])[9:21]
    tool_calls = [
        {
            "id": f"call_{stem}_{index}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(dict(args), ensure_ascii=False)},
        }
        for index, (name, args) in enumerate(calls)
    ]
    return {
        "id": f"chatcmpl-{stem}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "tool_calls": tool_calls},
                "finish_reason": "tool_calls",
                "logprobs": None,
            }
        ],
        "usage": _usage(prompt_tokens, completion_tokens),
    }


def error_body(
    message: str, *, error_type: str, code: str | None = None, **extra: Any
) -> dict[str, Any]:
    """An OpenAI-style error body: ``{"error": {"message", "type", "code", "param", ...}}``."""
    return {"error": {"message": message, "type": error_type, "code": code, "param": None, **extra}}


def apply_mistral_quirks(body: Any) -> Any:
    """Return a copy of a completion reshaped the way Mistral's API answers.

    * ``message.content`` that is a non-empty string becomes ``[{"type": "text", "text": ...}]``;
    * every ``tool_calls[].type`` becomes ``null``.

    Anything that is not a completion with ``choices`` is returned unchanged.
    """
    if not isinstance(body, Mapping) or not isinstance(body.get("choices"), list):
        return body
    reshaped = copy.deepcopy(dict(body))
    for choice in reshaped["choices"]:
        if not isinstance(choice, dict):
            continue
        message = choice.get("message")
        if isinstance(message, dict):
            content = message.get("content")
            if isinstance(content, str) and content:
                message["content"] = [{"type": "text", "text": content}]
            for call in message.get("tool_calls") or []:
                if isinstance(call, dict):
                    call["type"] = None
    return reshaped


def _chunk(base: Mapping[str, Any], choices: list[dict[str, Any]], **extra: Any) -> str:
    chunk = {
        "id": base.get("id", "chatcmpl-replay"),
        "object": "chat.completion.chunk",
        "created": base.get("created", 0),
        "model": base.get("model", ""),
        "choices": choices,
        **extra,
    }
    return "data: " + json.dumps(chunk, ensure_ascii=False) + "\n\n"


def completion_to_sse(completion: Mapping[str, Any], *, include_usage: bool) -> Iterator[str]:
    """Re-emit a stored completion as server-sent events, as a streaming provider would.

    Per choice: one chunk with the role and the whole content, one chunk per tool call (id,
    type, name and the full arguments), then a chunk with the finish reason. A usage-only chunk
    follows when ``include_usage`` (``stream_options.include_usage``), then ``data: [DONE]``.
    The content keeps its shape, so list-shaped (Mistral) content streams as a list.
    """
    for choice in completion.get("choices") or []:
        if not isinstance(choice, Mapping):
            continue
        index = choice.get("index", 0)
        message = choice.get("message") or {}
        delta: dict[str, Any] = {"role": message.get("role", "assistant")}
        content = message.get("content")
        if content not in (None, "", []):
            delta["content"] = content
        yield _chunk(completion, [{"index": index, "delta": delta, "finish_reason": None}])
        for position, call in enumerate(message.get("tool_calls") or []):
            if not isinstance(call, Mapping):
                continue
            call_delta = {
                "index": position,
                "id": call.get("id"),
                "type": call.get("type"),
                "function": dict(call.get("function") or {}),
            }
            yield _chunk(
                completion,
                [{"index": index, "delta": {"tool_calls": [call_delta]}, "finish_reason": None}],
            )
        yield _chunk(
            completion,
            [{"index": index, "delta": {}, "finish_reason": choice.get("finish_reason", "stop")}],
        )
    if include_usage and completion.get("usage") is not None:
        yield _chunk(completion, [], usage=completion["usage"])
    yield "data: [DONE]\n\n"
