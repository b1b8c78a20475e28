"""What a task run records besides its messages: per-request usage, waits, per-call timings.

:class:`RecordingToolset` wraps every capability's toolset. It is the one place where tool
failures are turned into *tool errors the model sees* (``ToolFailed``): an exception raised by a
tool, a server-side tool error, a protocol error or a refused command never propagates out of
the agent run (the original harness re-ran the whole agent on any such exception and then scored
the empty answer as zeros). It also truncates what the model is shown and keeps the full length.
"""

from __future__ import annotations

import contextvars
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from fastmcp.client.client import CallToolResult
from mcp.types import TextContent
from pydantic_ai import RunContext
from pydantic_ai.exceptions import ModelRetry, ToolFailed
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import ModelMessage, ToolReturn
from pydantic_ai.toolsets import WrapperToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

from datagouv_eval_pipeline.core.providers import (
    LIMITER_WAIT,
    Answered,
    Clock,
    RetryWait,
    SystemClock,
    estimate_tokens,
    message_chars,
)
from datagouv_eval_pipeline.core.traces import WireExchange
from datagouv_eval_pipeline.pipeline.agents.context import ContextWindow, cut_to_fit
from datagouv_eval_pipeline.world.front import WireRequest

DEFAULT_MODEL_RESULT_CHARS = 50_000
"""Longest tool result the model is shown; longer ones are cut with a marker."""


@dataclass
class RequestRecord:
    """One model request as it was sent (retries of the same request are one record).

    Attributes:
        input_tokens: Prompt tokens the provider billed.
        output_tokens: Completion tokens the provider billed.
        duration_ms: Time of the successful attempt.
        attempts: Attempts it took (1 when nothing was retried).
    """

    input_tokens: int
    output_tokens: int
    duration_ms: float
    attempts: int = 1


@dataclass
class ToolRecord:
    """One tool call as the toolset saw it.

    Attributes:
        duration_ms: Time spent in the tool.
        full_chars: Length of the complete result text (before any truncation).
        error: Whether the tool failed (the model was shown the failure).
        text: The complete result text.
        http_requests: What the call's program sent over HTTP (sandboxed tools), or None.
        shown_chars: Characters of the result the model was shown when it was cut for the
            model; None when it saw all of it.
        wire_text: The text blocks of the MCP answer when they differ from ``text`` (the
            client gave the model its structured content instead); None otherwise.
    """

    duration_ms: float
    full_chars: int
    error: bool
    text: str
    http_requests: list[WireExchange] | None = None
    shown_chars: int | None = None
    wire_text: str | None = None


@dataclass
class RunRecorder:
    """Collects a run's requests, waits and tool calls while the agent runs.

    Attributes:
        clock: Time source of rate-limit waits and of the run's latency.
        requests: Model requests in order.
        tools: Tool calls by call id.
        infrastructure_error: The first tool failure that was the toolset's, not the agent's
            (its server died or became unreachable); the run then ends as an error.
        rate_limit_wait_s: Seconds spent waiting on rate limits (limiter and 429 answers).
        retries: Failed attempts that were retried, with their reason.
        on_wait: Called with each rate-limit wait (the runner extends the run's deadline).
        context: The room left in the model's context window (None: no ``context_window``).
    """

    clock: Clock = field(default_factory=SystemClock)
    requests: list[RequestRecord] = field(default_factory=list)
    tools: dict[str, ToolRecord] = field(default_factory=dict)
    infrastructure_error: str | None = None
    rate_limit_wait_s: float = 0.0
    retries: list[str] = field(default_factory=list)
    on_wait: Callable[[float], None] | None = None
    context: ContextWindow | None = None

    def add_wait(self, seconds: float) -> None:
        """Count a rate-limit wait."""
        if seconds <= 0:
            return
        self.rate_limit_wait_s += seconds
        if self.on_wait is not None:
            self.on_wait(seconds)

    # The model's requests, as ``providers.managed.ManagedModel`` reports them.

    def before_request(self, messages: Sequence[ModelMessage]) -> None:
        """Refuse a request that cannot fit the model's context window (nothing is sent).

        Raises:
            ContextOverflowError: The request plus the answer's reserve exceeds the window.
        """
        if self.context is not None:
            self.context.check_next_request(estimate_tokens(message_chars(messages)))

    def waited(self, wait: RetryWait) -> None:
        """Count a wait: the limiter's and a 429's are rate-limit waits; a retry is listed."""
        if wait.reason == LIMITER_WAIT and wait.attempt == 0:
            self.add_wait(wait.seconds)
            return
        if wait.rate_limited:
            self.add_wait(wait.seconds)
        self.retries.append(f"{wait.reason}, waited {wait.seconds:.2f} s")

    def answered(self, request: Answered) -> None:
        """Record the request's usage, and what it left of the context window."""
        usage = request.response.usage
        self.requests.append(
            RequestRecord(
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                duration_ms=request.duration_ms,
                attempts=request.attempts,
            )
        )
        if self.context is not None:
            # The provider's figures; an estimate when a server reports no usage.
            read = usage.input_tokens or estimate_tokens(message_chars(request.messages))
            self.context.answered(read, usage.output_tokens)


def result_text(value: Any) -> str:
    """The text of a tool result as the model reads it (objects as compact JSON)."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


_WIRE_TEXT: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "datagouv_eval_wire_text", default=None
)
"""Where :class:`WireTextMCPToolset` leaves the text of the answer of the call in progress."""


class WireTextMCPToolset(MCPToolset[Any]):
    """An MCP toolset that also keeps the text blocks of each answer as they came on the wire.

    pydantic-ai gives the model a result's ``structuredContent`` when it has one; the text
    blocks beside it are what a text-only client would read. The recorder keeps both when
    they differ. The slot is a context variable, so concurrent runs sharing one connection
    each see their own call's answer.
    """

    async def _call_tool_checked(
        self, name: str, args: dict[str, Any], *, metadata: dict[str, Any] | None, use_task: bool
    ) -> CallToolResult:
        result = await super()._call_tool_checked(name, args, metadata=metadata, use_task=use_task)
        slot = _WIRE_TEXT.get()
        if slot is not None:
            slot.append(
                "\n".join(block.text for block in result.content if isinstance(block, TextContent))
            )
        return result


def truncate(text: str, limit: int) -> str:
    """Cut ``text`` to ``limit`` characters, saying how long it was."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... truncated: {len(text)} characters in total]"


def infrastructure_fault(error: BaseException) -> str | None:
    """Why ``error`` means the toolset itself is gone (connection refused, reset, closed).

    A bad argument or a tool's own error message is the agent's business; a server that died
    or stopped answering is not, and must not count against the agent.
    """
    import anyio
    import httpx

    seen: set[int] = set()
    pending: list[BaseException] = [error]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, httpx.ProxyError) and "403" in str(current):
            # The front answered and refused a host outside its allow-list: the agent's request.
            return None
        if isinstance(
            current,
            httpx.TransportError
            | ConnectionError
            | anyio.ClosedResourceError
            | anyio.BrokenResourceError
            | anyio.EndOfStream,
        ):
            return f"the toolset became unreachable ({type(current).__name__}: {current})"
        if "connection closed" in str(current).lower():
            return f"the toolset closed the connection ({type(current).__name__}: {current})"
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        for linked in (current.__cause__, current.__context__):
            if linked is not None:
                pending.append(linked)
    return None


@dataclass
class RecordingToolset(WrapperToolset[Any]):
    """Times each call, turns every failure into a tool error, and truncates results.

    Attributes:
        recorder: Where call records go.
        model_result_chars: Longest result the model is shown.
    """

    recorder: RunRecorder = field(default_factory=RunRecorder)
    model_result_chars: int = DEFAULT_MODEL_RESULT_CHARS
    wire: Callable[[], Sequence[WireRequest]] | None = None
    """Takes the HTTP requests made since the last call (the sandbox session's proxy)."""

    async def call_tool(
        self,
        name: str,
        tool_args: dict[str, Any],
        ctx: RunContext[Any],
        tool: ToolsetTool[Any],
    ) -> Any:
        """Call the wrapped tool; failures become ``ToolFailed`` with the error text."""
        started = time.perf_counter()
        error = False
        failed: BaseException | None = None
        wire: list[str] = []
        token = _WIRE_TEXT.set(wire)
        extra: ToolReturn[Any] | None = None
        try:
            value = await self.wrapped.call_tool(name, tool_args, ctx, tool)
            if isinstance(value, ToolReturn):
                # An MCP App tool: the model gets ``return_value`` (and any ``content``); the
                # metadata is for the app's page, never shown to the model.
                extra, value = value, value.return_value
            text = result_text(value)
        except ToolFailed as failure:
            error, text, failed = True, failure.message, failure
        except ModelRetry as retry:
            # A retry consumes the tool's retry budget and, once exhausted, aborts the run: the
            # model sees the same message as a plain failure instead.
            error, text, failed = True, retry.message, retry
        except Exception as exception:
            error, text = True, f"Error: {type(exception).__name__}: {exception}"
            failed = exception
        finally:
            _WIRE_TEXT.reset(token)
        if failed is not None and self.recorder.infrastructure_error is None:
            infrastructure = infrastructure_fault(failed)
            if infrastructure is not None:
                self.recorder.infrastructure_error = f"tool {name!r}: {infrastructure}"
        duration_ms = (time.perf_counter() - started) * 1000
        call_id = ctx.tool_call_id or f"{name}#{len(self.recorder.tools)}"
        # Concurrent calls of one session's tools would share what the proxy saw between them;
        # the model's calls of one run are attributed in completion order.
        exchanges = None
        if self.wire is not None:
            exchanges = [
                WireExchange(
                    method=w.method,
                    url=w.url,
                    status=w.status,
                    bytes=w.bytes,
                    duration_ms=w.duration_ms,
                )
                for w in self.wire()
            ]
        shown = truncate(text, self.model_result_chars)
        kept: int | None = self.model_result_chars if len(text) > self.model_result_chars else None
        context = self.recorder.context
        if context is not None:
            # The result is shown up to the room left in the window, never sent to overflow it.
            room = context.room_chars()
            if len(shown) > room:
                shown, kept = cut_to_fit(text, room)
            context.admit(len(shown))
        self.recorder.tools[call_id] = ToolRecord(
            duration_ms=duration_ms,
            full_chars=len(text),
            error=error,
            text=text,
            http_requests=exchanges,
            shown_chars=kept,
            wire_text=wire[-1] if wire and wire[-1] != text and not error else None,
        )
        if error:
            raise ToolFailed(shown or f"Error: tool {name!r} failed")
        if extra is not None and extra.content is not None:
            return ToolReturn(return_value=shown, content=extra.content)
        return shown
