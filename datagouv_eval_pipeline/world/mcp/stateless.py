"""A cheaper driver for stateless streamable-HTTP requests, with the SDK's own wire format.

For every stateless ``POST``, the mcp 2.3.0 session manager builds a transport, four memory
streams, a message router, a JSON-RPC dispatcher with its task group and an ``sse_starlette``
response with four more tasks, only to carry one request to ``ServerRunner.on_request`` and its
one reply back. That plumbing cost about 3 ms of CPU per call, several times the tools' own cost.

:class:`StatelessPost` handles the plain case (a well-formed JSON-RPC *request* in a ``POST``
that passes the SDK's checks) with the SDK's single-exchange kernel, ``serve_one``: the same
``ServerRunner``, middleware chain, handlers, validation and error mapping the dispatcher uses.
It writes the reply exactly as the SDK's stateless path does: the same status and headers, one
``event: message`` SSE frame with the same JSON, the same end of stream, the same
``sse_starlette`` keep-alive comment every 15 s while a call runs, notifications emitted by a
handler framed on the same stream before the reply.

Everything else (notifications, responses, batches, ``GET``, ``DELETE``, bodies that fail to
parse or validate, refused headers, oversized bodies) goes to the SDK's session manager
unchanged, with the body replayed, so its answers (202, 400, 406, 413, 415, 421, …) stay the
SDK's. ``twin.mcp.wirecheck`` compares both paths byte for byte (``bench/bench_mcp.py`` runs
it before measuring).

Differences that do not reach the wire: a handler runs in the request's task rather than in the
session manager's task group, so a client that hangs up does not cancel it (its reply is
dropped), and a server shutdown waits for it like for any other request.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

import anyio
import pydantic_core
from mcp.server.connection import Connection
from mcp.server.runner import serve_one
from mcp.server.streamable_http import (
    CONTENT_TYPE_JSON,
    CONTENT_TYPE_SSE,
    check_accept_headers,
)
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, TransportSecurityMiddleware
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import NoBackChannelError
from mcp.shared.jsonrpc_dispatcher import (
    handler_exception_to_error_data,
    progress_token_from_params,
)
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types import (
    DEFAULT_NEGOTIATED_VERSION,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    RequestId,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import Message, Receive, Scope, Send

# The SDK's dispatcher logs a handler's unexpected exception on its own logger; so does this.
_DISPATCH_LOGGER = logging.getLogger("mcp.shared.jsonrpc_dispatcher")
# Seconds between keep-alive comments: sse_starlette's default, as on the SDK's path.
PING_SECONDS = float(EventSourceResponse.DEFAULT_PING_INTERVAL)
_SEP: Final = EventSourceResponse.DEFAULT_SEPARATOR
# The transport context the SDK's stateless path gives every request.
_TRANSPORT: Final = TransportContext(kind="streamable-http", can_send_request=False)


async def _no_content() -> Any:  # pragma: no cover - never iterated
    yield b""


def _sse_headers() -> list[tuple[bytes, bytes]]:
    """Return the raw headers of the SDK's SSE reply, taken from the same response class."""
    headers = {
        "Cache-Control": "no-cache, no-transform",
        "Connection": "keep-alive",
        "Content-Type": CONTENT_TYPE_SSE,
    }
    return list(EventSourceResponse(content=_no_content(), headers=headers).raw_headers)


def _frame(message: JSONRPCResponse | JSONRPCError | JSONRPCNotification) -> bytes:
    """Frame a message as the SDK does: ``event: message`` and its ``exclude_unset`` JSON."""
    data = message.model_dump_json(by_alias=True, exclude_unset=True)
    if "\n" in data or "\r" in data:  # never from a JSON encoder, but split as sse_starlette does
        return ServerSentEvent(data=data, event="message", sep=_SEP).encode()
    # What ServerSentEvent.encode() gives for one line of data, without its regex split.
    return f"event: message{_SEP}data: {data}{_SEP}{_SEP}".encode()


class _Stream:
    """The reply stream of one request: body chunks after the SSE headers, one at a time."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._lock = asyncio.Lock()
        self.open = True

    async def write(self, chunk: bytes) -> None:
        """Send a chunk (an event or a keep-alive comment) unless the reply has ended."""
        async with self._lock:
            if self.open:
                await self._send({"type": "http.response.body", "body": chunk, "more_body": True})

    async def finish(self, chunk: bytes) -> None:
        """Send the last event and end the body.

        ``sse_starlette`` sends the event, then an empty last chunk; one message with
        ``more_body`` false puts the same bytes on the wire (the event's chunk, then the
        terminating chunk) in one socket write instead of two.
        """
        async with self._lock:
            self.open = False
            await self._send({"type": "http.response.body", "body": chunk, "more_body": False})


class _KeepAlive:
    """``sse_starlette``'s keep-alive: a comment every 15 s while the reply is open.

    A timer, not a task per request: most calls end long before the first comment is due.
    """

    def __init__(self, stream: _Stream) -> None:
        self._stream = stream
        self._loop = asyncio.get_running_loop()
        self._task: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = self._loop.call_later(PING_SECONDS, self._due)

    def _due(self) -> None:
        self._timer = None
        self._task = self._loop.create_task(self._ping())

    async def _ping(self) -> None:
        # sse_starlette's comment, with its text.
        comment = ServerSentEvent(comment=f"ping - {datetime.now(UTC)}", sep=_SEP).encode()
        await self._stream.write(comment)
        if self._task is not None:  # not stopped meanwhile
            self._timer = self._loop.call_later(PING_SECONDS, self._due)

    def stop(self) -> None:
        """Stop pinging (the reply is about to end)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._task is not None:
            task, self._task = self._task, None
            if not task.done():
                task.cancel()


@dataclass
class _DispatchContext:
    """``DispatchContext`` of one stateless request (structurally, like the dispatcher's own).

    The back-channel is closed (``can_send_request`` is false in the SDK's stateless path);
    notifications go onto this request's reply stream, as the SDK's message router sends them.
    """

    request_id: RequestId
    message_metadata: ServerMessageMetadata
    stream: _Stream
    progress_token: str | int | None = None
    transport: TransportContext = _TRANSPORT
    cancel_requested: anyio.Event = field(default_factory=anyio.Event)
    closed: bool = False

    @property
    def can_send_request(self) -> bool:
        return False

    async def send_raw_request(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        opts: CallOptions | None = None,
    ) -> dict[str, Any]:
        raise NoBackChannelError(method)

    async def notify(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> None:
        if self.closed:
            return
        # As the dispatcher: ``params`` stays unset when None (no ``"params": null``).
        if params is not None:
            message = JSONRPCNotification(jsonrpc="2.0", method=method, params=dict(params))
        else:
            message = JSONRPCNotification(jsonrpc="2.0", method=method)
        await self.stream.write(_frame(message))

    async def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        if self.progress_token is None:
            return
        params: dict[str, Any] = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self.notify("notifications/progress", params)


class _QuietSecurity(TransportSecurityMiddleware):
    """The SDK's Host/Origin/Content-Type checks without their warnings.

    A request they refuse is handed to the SDK, which checks (and logs) it once more; logging
    here too would log every refusal twice.
    """

    def _validate_host(self, host: str | None) -> bool:
        if not host:
            return False
        allowed = self.settings.allowed_hosts
        return host in allowed or any(
            pattern.endswith(":*") and host.startswith(pattern[:-2] + ":") for pattern in allowed
        )

    def _validate_origin(self, origin: str | None) -> bool:
        if not origin:
            return True
        allowed = self.settings.allowed_origins
        return origin in allowed or any(
            pattern.endswith(":*") and origin.startswith(pattern[:-2] + ":") for pattern in allowed
        )


def _json_content_type(headers: Headers) -> bool:
    """The SDK transport's own ``Content-Type`` test (exact ``application/json`` media type)."""
    content_type = headers.get("content-type", "")
    parts = [part.strip() for part in content_type.split(";")[0].split(",")]
    return any(part == CONTENT_TYPE_JSON for part in parts)


class StatelessPost:
    """Serve stateless ``POST`` requests of one release; defer anything else to the SDK.

    Args:
        manager: The release's session manager (stateless, SSE replies); it must be running
            (its ``run()`` entered by the app's lifespan) for requests to be served.
    """

    def __init__(self, manager: StreamableHTTPSessionManager) -> None:
        self._manager = manager
        self._security = _QuietSecurity(manager.security_settings)
        self._limit = getattr(manager, "max_request_body_size", DEFAULT_MAX_REQUEST_BODY_SIZE)
        self._headers = _sse_headers()
        # Only the configuration whose wire this reproduces is served here, and only while
        # the SDK keeps the (private) run state this reads.
        self.enabled = (
            manager.stateless
            and not manager.json_response
            and manager.event_store is None
            and hasattr(manager, "_lifespan_state")
            and hasattr(manager, "_task_group")
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send, headers: Headers) -> None:
        """Answer one request under ``/mcp`` (the caller has applied the era and Host rules)."""
        manager = self._manager
        # Before run() (or after), the SDK path answers, with its own error.
        if not self.enabled or scope["method"] != "POST" or manager._task_group is None:
            await manager.handle_request(scope, receive, send)
            return
        declared = headers.get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self._limit):
            await manager.handle_request(scope, receive, send)
            return
        body, replay = await self._read_body(receive)
        request = Request(scope, replay)
        message = None
        if (
            body is not None
            and await self._security.validate_request(request, is_post=True) is None
            and all(check_accept_headers(request))
            and _json_content_type(headers)
        ):
            try:
                parsed = jsonrpc_message_adapter.validate_python(
                    pydantic_core.from_json(body), by_name=False
                )
            except (ValueError, ValidationError):
                parsed = None
            if isinstance(parsed, JSONRPCRequest):
                message = parsed
        if message is None:
            await manager.handle_request(scope, replay, send)
            return
        version = headers.get("mcp-protocol-version", DEFAULT_NEGOTIATED_VERSION)
        await self._serve(message, request, version, manager._lifespan_state, send)

    async def _read_body(self, receive: Receive) -> tuple[bytes | None, Receive]:
        """Read the whole body (``None`` past the size limit) and a receive that replays it."""
        chunks: list[bytes] = []
        size = 0
        complete = False
        trailing: Message | None = None
        while True:
            message = await receive()
            if message["type"] != "http.request":
                trailing = message
                break
            chunk = message.get("body", b"")
            chunks.append(chunk)
            size += len(chunk)
            if size > self._limit:
                break
            if not message.get("more_body", False):
                complete = True
                break
        body = b"".join(chunks)
        queued: list[Message] = [{"type": "http.request", "body": body, "more_body": not complete}]
        if trailing is not None:
            queued.append(trailing)

        async def replay() -> Message:
            if queued:
                return queued.pop(0)
            return await receive()

        return (body if complete else None), replay

    async def _serve(
        self,
        message: JSONRPCRequest,
        request: Request,
        version: str,
        lifespan_state: Any,
        send: Send,
    ) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": self._headers})
        stream = _Stream(send)
        # No ``on_request_unanswered``: only the SDK's dispatcher calls it, when a peer cancels
        # a request, which a stateless request cannot receive.
        dctx = _DispatchContext(
            request_id=message.id,
            message_metadata=ServerMessageMetadata(request_context=request),
            stream=stream,
            progress_token=progress_token_from_params(message.params),
        )
        # Born ready, as the SDK's stateless path builds it: the header's version (or the
        # spec's default when absent), no client info.
        connection = Connection.from_envelope(version, None, None)
        keepalive = _KeepAlive(stream)
        try:
            reply = await self._answer(message, dctx, connection, lifespan_state)
        finally:
            keepalive.stop()
        dctx.closed = True
        await stream.finish(_frame(reply))

    async def _answer(
        self,
        message: JSONRPCRequest,
        dctx: _DispatchContext,
        connection: Connection,
        lifespan_state: Any,
    ) -> JSONRPCResponse | JSONRPCError:
        """Run the SDK's kernel on the request; map its outcome as the SDK's dispatcher does."""
        try:
            result = await serve_one(
                self._manager.app,
                dctx,
                message.method,
                message.params,
                connection=connection,
                lifespan_state=lifespan_state,
            )
        except Exception as exc:
            error = handler_exception_to_error_data(exc)
            if error is None:
                _DISPATCH_LOGGER.exception("handler for %r raised", message.method)
                error = ErrorData(code=0, message=str(exc))
            return JSONRPCError(jsonrpc="2.0", id=message.id, error=error)
        return JSONRPCResponse(jsonrpc="2.0", id=message.id, result=result)
