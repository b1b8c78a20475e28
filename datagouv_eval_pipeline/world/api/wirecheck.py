"""Check that :class:`~datagouv_eval_pipeline.world.mcp.stateless.StatelessPost` keeps the wire.

Two twins are served by uvicorn on loopback ports, one answering stateless ``POST`` requests
with ``StatelessPost`` (the default), one sending every request through the SDK's session
manager (``mount_mcp(..., fast_post=False)``). Each case (tool calls that succeed, fail or are
refused, ``initialize``, notifications, malformed bodies, refused headers, other methods, on
every release) is sent as raw HTTP/1.1 to both, and the raw answers are compared byte for
byte, the ``date`` header and the value of a session id aside::

    mismatches = compare_wire()
    assert not mismatches, mismatches[0].describe()

:func:`compare_streaming` does the same, in-process, for what the twin's tools never do: a
call slow enough for keep-alive comments, and a handler that sends log and progress
notifications before its reply. ``bench/bench_mcp.py`` runs both before measuring.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from datagouv_eval_pipeline.world.api.hosts import served_hosts
from datagouv_eval_pipeline.world.catalogue import CatalogStore
from datagouv_eval_pipeline.world.mcp import DEFAULT_VERSIONS

# Links in answers follow the Host header, so both servers are sent the same one.
HOST = "localhost:8000"
ACCEPT = "application/json, text/event-stream"
_DATASET = "55e4129788ee386899a46ec1"


@dataclass(frozen=True)
class WireCase:
    """One raw HTTP request to an MCP endpoint."""

    name: str
    method: str
    path: str
    headers: tuple[tuple[str, str], ...]
    body: bytes = b""
    # Seconds to read the answer; a stateless GET opens an event stream that stays open.
    timeout: float | None = None

    def request(self) -> bytes:
        """Return the request as bytes (``Connection: close``, so the answer ends at EOF)."""
        lines = [f"{self.method} {self.path} HTTP/1.1"]
        lines += [f"{name}: {value}" for name, value in self.headers]
        if self.body or self.method == "POST":
            lines.append(f"Content-Length: {len(self.body)}")
        lines.append("Connection: close")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + self.body


@dataclass(frozen=True)
class Mismatch:
    """A case whose raw answers differ."""

    case: WireCase
    fast: bytes
    sdk: bytes

    def describe(self) -> str:
        """Return the case name and both answers (truncated)."""
        return f"{self.case.name}:\n  fast: {self.fast[:800]!r}\n  sdk:  {self.sdk[:800]!r}"


def _headers(**changes: str | None) -> tuple[tuple[str, str], ...]:
    headers: dict[str, str] = {
        "Host": HOST,
        "Content-Type": "application/json",
        "Accept": ACCEPT,
    }
    for key, value in changes.items():
        name = key.replace("_", "-").title()
        if value is None:
            headers.pop(name, None)
        else:
            headers[name] = value
    return tuple(headers.items())


def _rpc(method: str, params: dict[str, Any] | None = None, rpc_id: Any = 1) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": rpc_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode()


def _call(name: str, arguments: dict[str, Any], rpc_id: Any = 1) -> bytes:
    return _rpc("tools/call", {"name": name, "arguments": arguments}, rpc_id)


def wire_cases(versions: tuple[str, ...] = DEFAULT_VERSIONS) -> list[WireCase]:
    """Return the requests compared, for each release in ``versions``."""
    init = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "wirecheck", "version": "1"},
    }
    ping = _rpc("ping")
    search = _call("search_datasets", {"query": "transport"})
    per_release: list[tuple[str, bytes, tuple[tuple[str, str], ...], str]] = [
        ("initialize", _rpc("initialize", init), _headers(), "POST"),
        (
            "initialize 2024-11-05",
            _rpc("initialize", {**init, "protocolVersion": "2024-11-05"}),
            _headers(),
            "POST",
        ),
        (
            "initialize, unknown version",
            _rpc("initialize", {**init, "protocolVersion": "1999-01-01"}),
            _headers(),
            "POST",
        ),
        ("tools/list", _rpc("tools/list", {}), _headers(), "POST"),
        ("tools/list without params", _rpc("tools/list"), _headers(), "POST"),
        ("search_datasets", search, _headers(), "POST"),
        (
            "search_datasets, string id, protocol header",
            _call("search_datasets", {"query": "éducation", "page_size": 3}, "abc"),
            _headers(mcp_protocol_version="2025-03-26"),
            "POST",
        ),
        (
            "search_datasets, no result",
            _call("search_datasets", {"query": "zzzz qqqq"}),
            _headers(),
            "POST",
        ),
        (
            "get_dataset_info, id 0",
            _call("get_dataset_info", {"dataset_id": _DATASET}, 0),
            _headers(),
            "POST",
        ),
        (
            "get_dataset_info, unknown",
            _call("get_dataset_info", {"dataset_id": "nope"}),
            _headers(),
            "POST",
        ),
        (
            "list_dataset_resources",
            _call("list_dataset_resources", {"dataset_id": _DATASET}),
            _headers(),
            "POST",
        ),
        ("get_metrics", _call("get_metrics", {"dataset_id": _DATASET}), _headers(), "POST"),
        (
            "search_dataservices",
            _call("search_dataservices", {"query": "adresse"}),
            _headers(),
            "POST",
        ),
        (
            "query_resource_data, unknown resource",
            _call("query_resource_data", {"question": "q", "resource_id": "nope"}),
            _headers(),
            "POST",
        ),
        (
            "query_dataset_data",
            _call("query_dataset_data", {"dataset_id": _DATASET}),
            _headers(),
            "POST",
        ),
        (
            "invalid arguments",
            _call("search_datasets", {"query": 3, "page": "x"}),
            _headers(),
            "POST",
        ),
        ("missing arguments", _call("search_datasets", {}), _headers(), "POST"),
        ("unknown tool", _call("nope", {}), _headers(), "POST"),
        ("invalid params", _rpc("tools/call", {"nam": "x"}), _headers(), "POST"),
        ("ping", ping, _headers(), "POST"),
        ("unknown method", _rpc("foo/bar", {}), _headers(), "POST"),
        ("resources/list", _rpc("resources/list", {}), _headers(), "POST"),
        ("prompts/list", _rpc("prompts/list", {}), _headers(), "POST"),
        ("logging/setLevel", _rpc("logging/setLevel", {"level": "info"}), _headers(), "POST"),
        (
            "notification",
            json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode(),
            _headers(),
            "POST",
        ),
        (
            "response",
            json.dumps({"jsonrpc": "2.0", "id": 5, "result": {}}).encode(),
            _headers(),
            "POST",
        ),
        ("batch", b"[" + ping + b"]", _headers(), "POST"),
        ("malformed JSON", b"{nope", _headers(), "POST"),
        ("not JSON-RPC", b"{}", _headers(), "POST"),
        (
            "null id",
            json.dumps({"jsonrpc": "2.0", "id": None, "method": "ping"}).encode(),
            _headers(),
            "POST",
        ),
        ("Accept JSON only", ping, _headers(accept="application/json"), "POST"),
        ("Accept */*", ping, _headers(accept="*/*"), "POST"),
        ("no Accept", ping, _headers(accept=None), "POST"),
        ("Content-Type text/plain", ping, _headers(content_type="text/plain"), "POST"),
        (
            "Content-Type with charset",
            search,
            _headers(content_type="application/json; charset=utf-8"),
            "POST",
        ),
        (
            "Content-Type application/jsonx",
            ping,
            _headers(content_type="application/jsonx"),
            "POST",
        ),
        ("refused Host", ping, _headers(host="evil.example"), "POST"),
        ("Host 127.0.0.1", search, _headers(host="127.0.0.1:9"), "POST"),
        ("refused Origin", ping, _headers(origin="http://evil.example"), "POST"),
        ("allowed Origin", ping, _headers(origin="http://localhost:8000"), "POST"),
        ("session id header", ping, _headers(mcp_session_id="abc"), "POST"),
        ("2026 protocol", ping, _headers(mcp_protocol_version="2026-07-28"), "POST"),
        ("GET", b"", _headers(accept="text/event-stream"), "GET"),
        ("DELETE", b"", _headers(), "DELETE"),
        ("PUT", ping, _headers(), "PUT"),
        (
            "body over 4 MiB",
            b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"a" * (4 << 20) + b'"}}',
            _headers(),
            "POST",
        ),
    ]
    return [
        WireCase(
            f"{version} {name}",
            method,
            f"/mcp/v{version}/mcp",
            headers,
            body,
            0.5 if method == "GET" else None,
        )
        for version in versions
        for name, body, headers, method in per_release
    ]


def _exchange(port: int, case: WireCase, timeout: float) -> bytes:
    """Send a case on a fresh connection; return the raw answer, ``date`` and session id masked."""
    chunks: list[bytes] = []
    timeout = case.timeout or timeout
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        try:
            sock.sendall(case.request())
        except OSError:  # the server may answer (413) and close before reading a large body
            chunks.append(b"<send interrupted>")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                chunk = sock.recv(1 << 16)
            except TimeoutError:
                chunks.append(b"<timed out>")
                break
            except OSError:
                chunks.append(b"<connection reset>")
                break
            if not chunk:
                break
            chunks.append(chunk)
    raw = b"".join(chunks)
    head, sep, rest = raw.partition(b"\r\n\r\n")
    lines = [line for line in head.split(b"\r\n") if not line.lower().startswith(b"date:")]
    # A stateful release's session id is random: its presence is compared, not its value.
    lines = [
        b"mcp-session-id: <session>" if line.lower().startswith(b"mcp-session-id:") else line
        for line in lines
    ]
    return b"\r\n".join(lines) + sep + rest


@contextmanager
def _served(app: Any) -> Iterator[int]:
    """Serve ``app`` as the twin does, in a thread; yield its port."""
    from datagouv_eval_pipeline.base.serving import BackgroundUvicorn
    from datagouv_eval_pipeline.world.api.server import HEALTH_PATH, uvicorn_config

    runner = BackgroundUvicorn(
        "the wire-check server", lambda port: uvicorn_config(app, port), HEALTH_PATH
    )
    port = runner.start("127.0.0.1", 0, timeout=30)
    try:
        yield port
    finally:
        runner.stop()


def compare_wire(
    store: CatalogStore | None = None,
    cases: list[WireCase] | None = None,
    timeout: float = 5.0,
) -> list[Mismatch]:
    """Send every case to a twin with and without ``StatelessPost``; return the differences."""
    from datagouv_eval_pipeline.world.api.app import create_app
    from datagouv_eval_pipeline.world.mcp import mount_mcp

    store = store or CatalogStore.load()
    rest = create_app(store, mcp_versions=())
    mismatches: list[Mismatch] = []
    with (
        _served(mount_mcp(rest, hosts=served_hosts(store), fast_post=True)) as fast,
        _served(mount_mcp(rest, hosts=served_hosts(store), fast_post=False)) as sdk,
    ):
        for case in cases if cases is not None else wire_cases():
            fast_answer = _exchange(fast, case, timeout)
            sdk_answer = _exchange(sdk, case, timeout)
            if fast_answer != sdk_answer:
                mismatches.append(Mismatch(case, fast_answer, sdk_answer))
    return mismatches


def _asgi_scope(body: bytes) -> dict[str, Any]:
    headers = [(k.lower().encode(), v.encode()) for k, v in _headers()]
    headers.append((b"content-length", str(len(body)).encode()))
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "root_path": "",
        "query_string": b"",
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 50000),
        "headers": headers,
    }


async def _asgi_body(app: Any, body: bytes) -> bytes:
    """Run one POST through an ASGI callable; return its body, keep-alive times masked."""
    chunks: list[bytes] = []
    done = asyncio.Event()
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                done.set()

    await app(_asgi_scope(body), receive, send)
    return re.sub(rb"ping - [^\r\n]*", b"ping - <time>", b"".join(chunks))


def _one_ping_run(body: bytes) -> bytes:
    """``body`` with each run of keep-alive comments made one.

    How many fit in a call depends on the machine's load (two or three in 3.5 intervals);
    their framing does not.
    """
    return re.sub(rb"(: ping - <time>(?:\r\n|\n|\r){2})+", rb"\1", body)


def compare_streaming(ping_seconds: float = 0.1) -> list[Mismatch]:
    """Compare keep-alive comments and handler notifications on both paths (in-process).

    Keep-alive comments are made due every ``ping_seconds`` on both paths for the duration of
    the check (the module-level interval of ``stateless`` and ``sse_starlette``'s default).
    """
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.shared.exceptions import MCPDeprecationWarning
    from sse_starlette import EventSourceResponse
    from starlette.datastructures import Headers

    from datagouv_eval_pipeline.world.mcp import stateless

    async def slow(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return "done"

    async def chatty(ctx: Context) -> str:
        await ctx.info("hello")
        await ctx.report_progress(1, 2, "half")
        return "ok"

    # The SDK reads the annotations; this module's are strings naming local imports.
    slow.__annotations__ = {"seconds": float, "return": str}
    chatty.__annotations__ = {"ctx": Context, "return": str}
    server: MCPServer[Any] = MCPServer("wirecheck", log_level="WARNING")
    server.add_tool(slow)
    server.add_tool(chatty)
    server.streamable_http_app(stateless_http=True)
    manager = server.session_manager
    post = stateless.StatelessPost(manager)

    async def fast(scope: Any, receive: Any, send: Any) -> None:
        await post(scope, receive, send, Headers(scope=scope))

    calls = {
        "slow call with keep-alive comments": ("slow", {"seconds": ping_seconds * 3.5}),
        "log and progress notifications": ("chatty", {}),
    }

    async def run() -> list[Mismatch]:
        found = []
        async with manager.run():
            for name, (tool, arguments) in calls.items():
                params = {"name": tool, "arguments": arguments, "_meta": {"progressToken": "p"}}
                body = _rpc("tools/call", params, 7)
                fast_answer = _one_ping_run(await _asgi_body(fast, body))
                sdk_answer = _one_ping_run(await _asgi_body(manager.handle_request, body))
                if fast_answer != sdk_answer:
                    case = WireCase(name, "POST", "/mcp", _headers(), body)
                    found.append(Mismatch(case, fast_answer, sdk_answer))
        return found

    saved = (stateless.PING_SECONDS, EventSourceResponse.DEFAULT_PING_INTERVAL)
    stateless.PING_SECONDS = ping_seconds
    EventSourceResponse.DEFAULT_PING_INTERVAL = ping_seconds  # type: ignore[assignment]
    try:
        with warnings.catch_warnings():
            # The log notification is the point of the check, deprecated logging or not.
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            return asyncio.run(run())
    finally:
        stateless.PING_SECONDS = saved[0]
        EventSourceResponse.DEFAULT_PING_INTERVAL = saved[1]
