"""The hostname front: an HTTP(S) proxy that answers for production host names itself.

Clients that honour ``HTTPS_PROXY`` / ``HTTP_PROXY`` send every request to the front. For a host
it *serves* (``www.data.gouv.fr``, ``tabular-api.data.gouv.fr``, … when it stands before the
twin) it terminates TLS with a certificate for that name from the local CA
(:mod:`.authority`) and forwards the plain HTTP/1.1 exchange to its upstream (the twin on
127.0.0.1), ``Host`` header untouched, so the twin routes by host name. A host on its
pass-through list (a live run) is tunnelled to the real network unchanged. Anything else gets
a ``403`` whose reason and body name the host and what is allowed; nothing is sent.

The proxy understands ``CONNECT host:port`` and absolute-form plain HTTP requests
(``GET http://host/path``). Every request it forwards to its upstream is recorded as a
:class:`WireRequest` (method, URL, status, bytes, duration), as is every refusal.

It runs its own event loop in a daemon thread, listening on a loopback TCP port or on a Unix
socket (the sandbox mounts the socket and relays a port to it).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from datagouv_eval_pipeline.world.front.allow import (
    AllowList,
    format_hostport,
    normalise_host,
    split_hostport,
)
from datagouv_eval_pipeline.world.front.authority import CertificateAuthority

__all__ = ["CA_BUNDLE_VARS", "Front", "ServedHosts", "WireRequest", "export_lines"]

_HEAD_LIMIT = 64 * 1024
_HOP_BY_HOP = frozenset(
    {"proxy-connection", "proxy-authorization", "connection", "keep-alive", "expect"}
)
_DESCRIBE_LIMIT = 24
CA_BUNDLE_VARS = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")
"""Variables naming the CA bundle (Python's ssl/httpx, requests, curl)."""


@dataclass(frozen=True)
class WireRequest:
    """One HTTP request a client sent through the front.

    Attributes:
        method: ``GET``, ``POST``…; ``CONNECT`` for a refused or tunnelled TLS connection.
        url: The URL as the client asked for it (``https://www.data.gouv.fr/api/1/…``).
        status: The HTTP status of the answer (403 when the front refused; 502 when the
            upstream could not be reached; 0 when the exchange broke before a status).
        bytes: Bytes of the response body relayed to the client: fewer than the body holds
            when the client hung up before the end (a download it could not store).
        duration_ms: From the request head to the end of the response body.
        started_at: ``time.time()`` when the request head arrived.
    """

    method: str
    url: str
    status: int
    bytes: int
    duration_ms: float
    started_at: float


@dataclass(frozen=True)
class ServedHosts:
    """Host names a front answers for itself, and where it sends their requests.

    Attributes:
        hosts: Lower-case host names (any port; TLS terminated on 443).
        upstream: ``(host, port)`` of the plain-HTTP server answering for them (the twin).
        authority: The CA whose leaf certificates the front presents for them.
    """

    hosts: frozenset[str]
    upstream: tuple[str, int]
    authority: CertificateAuthority

    def front(
        self,
        *,
        passthrough: AllowList | str | None = None,
        socket_path: str | None = None,
        port: int = 0,
    ) -> Front:
        """Return a (not yet started) front answering for these hosts."""
        return Front(served=self, passthrough=passthrough, socket_path=socket_path, port=port)


class _Refused(Exception):
    pass


class _NoAnswer(Exception):
    """The upstream closed before the first byte of its answer."""


class Front:
    """The proxy; start with :meth:`start` (or ``with``), stop with :meth:`stop`.

    Args:
        served: The hosts answered locally and their upstream; None answers for none.
        passthrough: ``host:port`` pairs tunnelled to the real network, or ``"all"`` (a live
            run); ``None`` passes nothing.
        socket_path: Listen on this Unix socket instead of a loopback TCP port.
        port: The loopback TCP port (0 picks a free one) when ``socket_path`` is None.
        name: How the front names itself in refusals.
        connect_timeout: Seconds to open an upstream connection.
        max_connections: Client connections served at once; more get a 503.
        via: ``(host, port)`` of an HTTP proxy that pass-through connections go through
            (``CONNECT`` tunnels): the proxy the host process itself must use (a live run
            behind a gateway, or the hostname front before the twin); None connects directly.
    """

    def __init__(
        self,
        *,
        served: ServedHosts | None = None,
        passthrough: AllowList | str | None = None,
        socket_path: str | None = None,
        port: int = 0,
        name: str = "twin front",
        connect_timeout: float = 10.0,
        max_connections: int = 128,
        via: tuple[str, int] | None = None,
    ) -> None:
        self.served = (
            frozenset(normalise_host(host) for host in served.hosts) if served else frozenset()
        )
        if isinstance(passthrough, str) and passthrough != "all":
            raise ValueError(
                f"passthrough must be an AllowList, 'all' or None, not {passthrough!r}"
            )
        self.upstream = served.upstream if served else None
        self.authority = served.authority if served else None
        self.passthrough = passthrough
        self.socket_path = socket_path
        self.name = name
        self.requests: list[WireRequest] = []
        self._refused: list[str] = []
        self._requested_port = port
        self._port: int | None = None
        self._connect_timeout = connect_timeout
        self._max_connections = max_connections
        self.via = via
        self._active = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._records_lock = threading.Lock()
        # Requests between their head and their record: the client may have read the whole
        # answer before the proxy records it, so a reader waits for these (take_wire_requests).
        self._in_flight = 0
        self._settled = threading.Condition(self._records_lock)

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> Front:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The loopback TCP port it listens on.

        Raises:
            RuntimeError: not started, or listening on a Unix socket.
        """
        if self._port is None:
            raise RuntimeError(f"the {self.name} is not listening on a TCP port")
        return self._port

    @property
    def proxy_url(self) -> str:
        """``http://127.0.0.1:PORT``: the value of ``HTTPS_PROXY`` / ``HTTP_PROXY``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def refused(self) -> list[str]:
        """``host:port`` of every refused request, in order."""
        with self._records_lock:
            return list(self._refused)

    def wire_requests(self) -> list[WireRequest]:
        """A copy of the requests recorded so far, in completion order."""
        with self._records_lock:
            return list(self.requests)

    def take_wire_requests(self, settle_seconds: float = 2.0) -> list[WireRequest]:
        """Return the requests recorded so far and forget them.

        Requests already answered but not yet recorded are waited for (at most
        ``settle_seconds``): a client that read its answer can return before the proxy notes it.
        """
        with self._settled:
            self._settled.wait_for(lambda: self._in_flight == 0, timeout=settle_seconds)
            taken, self.requests = self.requests, []
        return taken

    def _begin_request(self) -> None:
        with self._settled:
            self._in_flight += 1

    def _end_request(self) -> None:
        with self._settled:
            self._in_flight -= 1
            self._settled.notify_all()

    def client_env(self) -> dict[str, str]:
        """The variables a client process needs to reach the served hosts through the front.

        ``HTTPS_PROXY``/``HTTP_PROXY`` (both cases), the CA bundle for Python's ssl, httpx,
        requests and curl, and ``NO_PROXY`` for loopback (a client talking to the twin or an
        MCP server on 127.0.0.1 directly must not loop through the proxy).
        """
        env = dict.fromkeys(
            ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"), self.proxy_url
        )
        env.update(NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
        if self.authority is not None:
            env.update(dict.fromkeys(CA_BUNDLE_VARS, str(self.authority.bundle_path)))
        return env

    def start(self) -> Front:
        """Start listening; returns once connections are accepted.

        Raises:
            OSError: The socket could not be created.
        """
        if self._thread is not None:
            return self
        ready = threading.Event()
        failure: list[BaseException] = []
        loop = asyncio.new_event_loop()
        self._loop = loop

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                if self.socket_path is not None:
                    self._server = loop.run_until_complete(
                        asyncio.start_unix_server(
                            self._serve, path=self.socket_path, limit=_HEAD_LIMIT
                        )
                    )
                    # The sandbox user may be another uid (rlimit mode, Docker): let it connect.
                    os.chmod(self.socket_path, 0o666)
                else:
                    self._server = loop.run_until_complete(
                        asyncio.start_server(
                            self._serve,
                            host="127.0.0.1",
                            port=self._requested_port,
                            limit=_HEAD_LIMIT,
                            backlog=256,
                        )
                    )
                    self._port = int(self._server.sockets[0].getsockname()[1])
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.close()

        self._thread = threading.Thread(target=run, name="hostname-front", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            self._thread = None
            raise failure[0]
        return self

    def stop(self) -> None:
        """Close the listening socket and every open connection, and end the thread."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None or loop.is_closed():
            return

        async def shutdown() -> None:
            if self._server is not None:
                self._server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            loop.stop()

        with contextlib.suppress(RuntimeError):
            asyncio.run_coroutine_threadsafe(shutdown(), loop)
        thread.join(timeout=5)
        self._thread = None
        self._port = None
        if self.socket_path is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.socket_path)

    # ------------------------------------------------------------------ policy

    def serves(self, host: str) -> bool:
        """Whether ``host`` is answered by the upstream."""
        return normalise_host(host) in self.served

    def passes(self, host: str, port: int) -> bool:
        """Whether ``host:port`` is tunnelled to the real network."""
        if self.passthrough == "all":
            return True
        return isinstance(self.passthrough, AllowList) and self.passthrough.allows(host, port)

    def describe_allowed(self) -> str:
        """The hosts this front answers for or passes through, for refusals."""
        parts: list[str] = []
        if self.served:
            names = sorted(self.served, key=lambda h: (not h.endswith("data.gouv.fr"), h))
            shown = ", ".join(names[:_DESCRIBE_LIMIT])
            more = len(names) - _DESCRIBE_LIMIT
            parts.append(shown + (f" and {more} more" if more > 0 else ""))
        if isinstance(self.passthrough, AllowList) and self.passthrough.pairs:
            parts.append(self.passthrough.describe())
        return "; ".join(parts) or "none"

    def _record(self, record: WireRequest) -> None:
        with self._records_lock:
            self.requests.append(record)

    # ------------------------------------------------------------------ connections

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._active += 1
        try:
            if self._active > self._max_connections:
                await _respond(
                    writer, 503, "Too Many Connections", f"{self.name}: too many open connections"
                )
                return
            await self._handle(reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            pass
        except asyncio.CancelledError:
            # stop() cancels open connections. Ending quietly also spares Python 3.11's stream
            # callback, which logs a traceback for a connection task that ends cancelled.
            return
        finally:
            self._active -= 1
            self._tasks.discard(task)
            writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=30)
        started = time.time()
        line, _, rest = head.decode("latin-1").partition("\r\n")
        request = line.split(" ")
        if len(request) != 3:
            await _respond(writer, 400, "Bad Request", f"{self.name}: malformed request line")
            return
        method, target, _version = request
        if method.upper() == "CONNECT":
            host, port_text = split_hostport(target)
            if port_text is None or not port_text.isdigit():
                await _respond(
                    writer, 400, "Bad Request", f"{self.name}: bad CONNECT target {target!r}"
                )
                return
            await self._connect(reader, writer, normalise_host(host), int(port_text), started)
            return
        parts = urlsplit(target)
        if parts.scheme != "http" or not parts.hostname:
            body = (
                f"{self.name}: expected an absolute http:// URL or CONNECT, got "
                f"{method} {target!r} (https goes through CONNECT)"
            )
            await _respond(writer, 400, "Bad Request", body)
            return
        try:
            port = parts.port or 80
        except ValueError:
            await _respond(writer, 400, "Bad Request", f"{self.name}: bad port in {target!r}")
            return
        host = normalise_host(parts.hostname)
        if self.serves(host):
            upstream = await self._open_upstream(writer, f"http://{host}:{port}", started)
            if upstream is None:
                return
            await self._exchanges(reader, writer, upstream, f"http://{parts.netloc}", head)
            return
        if not self.passes(host, port):
            await self._refuse(writer, host, port, target, started, method)
            return
        opened = await self._open_passthrough(writer, host, port, f"http://{parts.netloc}", started)
        if opened is None:
            return
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        headers = [
            header
            for header in rest.split("\r\n")
            if header and header.split(":", 1)[0].strip().lower() not in _HOP_BY_HOP
        ]
        # One request per upstream connection keeps the relay a plain byte pipe.
        rebuilt = "\r\n".join([f"{method} {path} HTTP/1.1", *headers, "Connection: close", "", ""])
        opened[1].write(rebuilt.encode("latin-1"))
        await _relay(reader, writer, *opened)

    async def _connect(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        host: str,
        port: int,
        started: float,
    ) -> None:
        if self.serves(host):
            assert self.authority is not None
            origin = f"https://{host}" if port == 443 else f"http://{host}:{port}"
            try:
                context = self.authority.server_context(host) if port == 443 else None
            except ValueError as exc:
                await _respond(writer, 400, "Bad Request", f"{self.name}: {exc}")
                return
            upstream = await self._open_upstream(writer, origin, started)
            if upstream is None:
                return
            writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            await writer.drain()
            if context is not None:
                await writer.start_tls(context, ssl_handshake_timeout=30)
            await self._exchanges(reader, writer, upstream, origin, None)
            return
        if not self.passes(host, port):
            url = f"https://{format_hostport(host, port)}"
            await self._refuse(writer, host, port, url, started)
            return
        opened = await self._open_passthrough(writer, host, port, f"https://{host}:{port}", started)
        if opened is None:
            return
        writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        await writer.drain()
        self._record(WireRequest("CONNECT", f"https://{host}:{port}", 200, 0, 0.0, started))
        await _relay(reader, writer, *opened)

    async def _refuse(
        self,
        writer: asyncio.StreamWriter,
        host: str,
        port: int,
        url: str,
        started: float,
        method: str = "CONNECT",
    ) -> None:
        target = format_hostport(host, port)
        with self._records_lock:
            self._refused.append(target)
        self._record(WireRequest(method, url, 403, 0, 0.0, started))
        body = (
            f"{self.name}: {target} is not allowed: this proxy answers for "
            f"{self.describe_allowed()}; the request was not sent\n"
        )
        await _respond(writer, 403, f"Forbidden by {self.name}: {target} is not allowed", body)

    async def _open(
        self, writer: asyncio.StreamWriter, host: str, port: int, url: str, started: float
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        try:
            return await asyncio.wait_for(
                asyncio.open_connection(host, port, limit=_HEAD_LIMIT),
                timeout=self._connect_timeout,
            )
        except (OSError, TimeoutError) as exc:
            self._record(WireRequest("CONNECT", url, 502, 0, 0.0, started))
            target = format_hostport(host, port)
            await _respond(writer, 502, "Bad Gateway", f"{self.name}: cannot reach {target}: {exc}")
            return None

    async def _open_passthrough(
        self, writer: asyncio.StreamWriter, host: str, port: int, url: str, started: float
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        """A connection to ``host:port`` on the real network, through ``via`` when set."""
        if self.via is None:
            return await self._open(writer, host, port, url, started)
        opened = await self._open(writer, *self.via, url, started)
        if opened is None:
            return None
        reader, upstream = opened
        target = format_hostport(host, port)
        upstream.write(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode("latin-1"))
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self._connect_timeout)
        except (OSError, TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            head = b""
        status = head.split(b"\r\n", 1)[0].decode("latin-1")
        if status.split(" ")[1:2] != ["200"]:
            upstream.close()
            self._record(WireRequest("CONNECT", url, 502, 0, 0.0, started))
            via = format_hostport(*self.via)
            await _respond(
                writer, 502, "Bad Gateway", f"{self.name}: {via} refused {target}: {status!r}"
            )
            return None
        return reader, upstream

    async def _open_upstream(
        self, writer: asyncio.StreamWriter, url: str, started: float
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        assert self.upstream is not None
        return await self._open(writer, *self.upstream, url, started)

    async def _exchanges(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter],
        origin: str,
        first_head: bytes | None,
    ) -> None:
        """Forward HTTP/1.1 requests to the upstream one by one, recording each.

        ``first_head`` is an absolute-form request head already read (plain HTTP proxying);
        later requests on the same connection may name other hosts and are routed again.
        """
        up_reader, up_writer = upstream

        async def reconnect() -> None:
            nonlocal up_reader, up_writer
            up_writer.close()
            assert self.upstream is not None
            up_reader, up_writer = await asyncio.wait_for(
                asyncio.open_connection(*self.upstream, limit=_HEAD_LIMIT),
                timeout=self._connect_timeout,
            )

        try:
            head: bytes | None = first_head
            while True:
                if head is None:
                    try:
                        head = await reader.readuntil(b"\r\n\r\n")
                    except asyncio.IncompleteReadError:
                        return
                started = time.time()
                clock = time.perf_counter()
                try:
                    method, url, forwarded, request_length, keep = self._request_head(head, origin)
                except _Refused as refusal:
                    host, port, url, method = refusal.args
                    await self._refuse(writer, host, port, url, started, method)
                    return
                self._begin_request()
                relayed = _Relayed()
                try:
                    if forwarded.expects_continue:
                        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                    if up_reader.at_eof():
                        # The upstream closed an idle kept-alive connection (uvicorn does after a
                        # few seconds): open a new one rather than fail the client's request.
                        await reconnect()
                    up_writer.write(forwarded.head)
                    await _copy_body(reader, up_writer, request_length, _Relayed())
                    await up_writer.drain()
                    try:
                        upstream_keep = await _copy_response(up_reader, writer, method, relayed)
                    except _NoAnswer:
                        if request_length:
                            raise  # a body cannot be sent twice
                        # Closed just as the request went out, before any answer: send it again.
                        await reconnect()
                        up_writer.write(forwarded.head)
                        await up_writer.drain()
                        upstream_keep = await _copy_response(up_reader, writer, method, relayed)
                finally:
                    # Recorded even when the client hung up mid-answer (a download it could not
                    # store): the request was on the wire, with the bytes relayed before the cut.
                    if relayed.status:
                        self._record(
                            WireRequest(
                                method,
                                url,
                                relayed.status,
                                relayed.bytes,
                                round((time.perf_counter() - clock) * 1000, 3),
                                started,
                            )
                        )
                    self._end_request()
                if not keep:
                    return
                if not upstream_keep:
                    await reconnect()
                head = None
        finally:
            up_writer.close()

    def _request_head(
        self, head: bytes, origin: str
    ) -> tuple[str, str, _Forwarded, int | None, bool]:
        """Parse a client's request head: what to record and the head to send upstream."""
        text = head.decode("latin-1")
        line, _, rest = text.partition("\r\n")
        method, target, version = [*line.split(" "), "", ""][:3]
        headers = [h for h in rest.split("\r\n") if h]
        if "://" in target:
            parts = urlsplit(target)
            host = normalise_host(parts.hostname or "")
            port = parts.port or 80
            if not self.serves(host):
                raise _Refused(host, port, target, method)
            url = target
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        else:
            url = origin + target
        fields = _fields(headers)
        length: int | None
        if "chunked" in fields.get("transfer-encoding", "").lower():
            length = -1
        else:
            length = int(fields.get("content-length", "0") or 0)
        connection = fields.get("connection", "").lower()
        keep = version == "HTTP/1.1" and "close" not in connection
        kept = [h for h in headers if h.split(":", 1)[0].strip().lower() not in _HOP_BY_HOP]
        if not keep:
            kept.append("Connection: close")
        rebuilt = "\r\n".join([f"{method} {target} HTTP/1.1", *kept, "", ""]).encode("latin-1")
        expects = fields.get("expect", "").lower() == "100-continue"
        return method, url, _Forwarded(rebuilt, expects), length, keep


@dataclass(frozen=True)
class _Forwarded:
    head: bytes
    expects_continue: bool


def _fields(headers: list[str]) -> dict[str, str]:
    fields: dict[str, str] = {}
    for header in headers:
        name, _, value = header.partition(":")
        fields[name.strip().lower()] = value.strip()
    return fields


@dataclass
class _Relayed:
    """How far one message got towards its reader: its status (0 before it), its body bytes."""

    status: int = 0
    bytes: int = 0


async def _copy_body(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    length: int | None,
    relayed: _Relayed,
) -> None:
    """Copy a message body (``length`` bytes, ``-1`` for chunked), counting it in ``relayed``.

    Each piece is drained before the next is read, so a slow reader holds the copy back rather
    than the whole body piling up in memory; the count is of payload bytes as they pass.
    """
    if length is None or length == 0:
        return
    if length > 0:
        remaining = length
        while remaining:
            data = await reader.read(min(remaining, 65536))
            if not data:
                raise asyncio.IncompleteReadError(b"", remaining)
            writer.write(data)
            await writer.drain()
            remaining -= len(data)
            relayed.bytes += len(data)
        return
    while True:
        size_line = await reader.readuntil(b"\r\n")
        writer.write(size_line)
        size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
        if size == 0:
            # Trailers, then the blank line.
            while True:
                trailer = await reader.readuntil(b"\r\n")
                writer.write(trailer)
                if trailer == b"\r\n":
                    return
        writer.write(await reader.readexactly(size + 2))
        await writer.drain()
        relayed.bytes += size


async def _copy_response(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, method: str, relayed: _Relayed
) -> bool:
    """Copy one response from the upstream, noting its progress in ``relayed``; keep-alive."""
    first = True
    while True:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            if first:
                raise _NoAnswer from exc
            raise
        first = False
        text = head.decode("latin-1")
        line, _, rest = text.partition("\r\n")
        parts = line.split(" ", 2)
        status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
        writer.write(head)
        if 100 <= status < 200:
            continue  # an interim answer; the real one follows
        break
    relayed.status = status
    fields = _fields([h for h in rest.split("\r\n") if h])
    keep = "close" not in fields.get("connection", "").lower() and parts[0] == "HTTP/1.1"
    if method == "HEAD" or status in (204, 304):
        await writer.drain()
        return keep
    if "chunked" in fields.get("transfer-encoding", "").lower():
        await _copy_body(reader, writer, -1, relayed)
    elif "content-length" in fields:
        await _copy_body(reader, writer, int(fields["content-length"]), relayed)
    else:
        while data := await reader.read(65536):
            writer.write(data)
            relayed.bytes += len(data)
            await writer.drain()
        keep = False
    await writer.drain()
    return keep


async def _respond(writer: asyncio.StreamWriter, status: int, reason: str, body: str) -> None:
    payload = body.encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
    )
    writer.write(head.encode("latin-1", errors="replace") + payload)
    await writer.drain()


async def _relay(
    client_reader: asyncio.StreamReader,
    client_writer: asyncio.StreamWriter,
    upstream_reader: asyncio.StreamReader,
    upstream_writer: asyncio.StreamWriter,
) -> None:
    async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()

    to_upstream = asyncio.ensure_future(pump(client_reader, upstream_writer))
    try:
        # The upstream closing ends the exchange (plain HTTP sends Connection: close), even if
        # the client would keep its side open for reuse.
        await pump(upstream_reader, client_writer)
    finally:
        to_upstream.cancel()
        await asyncio.gather(to_upstream, return_exceptions=True)
        upstream_writer.close()


def export_lines(env: Mapping[str, str]) -> str:
    """``export NAME='value'`` lines for a POSIX shell (``eval "$(…)"``)."""
    import shlex

    return "".join(f"export {name}={shlex.quote(value)}\n" for name, value in env.items())
