"""The allow-listing HTTP proxy that is a sandbox's only way out.

Sandboxes have no network of their own. The backend runs one ``AllowListProxy`` per session,
outside the sandbox, listening on a Unix socket that is mounted into the sandbox; the launcher
inside relays a loopback port to it and sets ``HTTP_PROXY``/``HTTPS_PROXY``/``ALL_PROXY``.

The proxy understands the two forms HTTP clients use with a proxy: ``CONNECT host:port`` (HTTPS,
or any TCP tunnel) and absolute-form plain HTTP requests (``GET http://host:port/path``). It opens
a connection only when ``host:port`` is on the session's allow-list; anything else gets a
``403`` whose reason and body name the refused host. The check is on the name the client asked
for, before any DNS lookup, so ``127.1`` or an IP address of an allowed name is refused too.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

_HEAD_LIMIT = 64 * 1024
_HOP_BY_HOP = {"proxy-connection", "proxy-authorization", "connection", "keep-alive"}


@dataclass(frozen=True)
class AllowList:
    """The ``(host, port)`` pairs a sandbox may reach.

    Attributes:
        pairs: Lower-case host names (IPv6 without brackets) with their port.
    """

    pairs: frozenset[tuple[str, int]] = field(default_factory=frozenset)

    @classmethod
    def parse(cls, entries: Iterable[str]) -> AllowList:
        """Read ``host:port``, ``host`` (ports 80 and 443) or ``http(s)://host[:port]`` entries.

        Raises:
            ValueError: An entry is empty, has a path, a wildcard or a bad port; the message
                quotes it.
        """
        pairs: set[tuple[str, int]] = set()
        for entry in entries:
            pairs.update(_parse_entry(entry))
        return cls(frozenset(pairs))

    def allows(self, host: str, port: int) -> bool:
        """Whether ``host:port`` is on the list (the host compared case-insensitively)."""
        return (_normalise_host(host), port) in self.pairs

    def describe(self) -> str:
        """The list as ``host:port`` text, for error messages."""
        if not self.pairs:
            return "none"
        return ", ".join(_format_hostport(host, port) for host, port in sorted(self.pairs))


def _normalise_host(host: str) -> str:
    return host.strip().strip("[]").rstrip(".").lower()


def _format_hostport(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _parse_entry(entry: str) -> list[tuple[str, int]]:
    text = entry.strip()
    if not text or "*" in text:
        raise ValueError(f"allowed host {entry!r}: expected host, host:port or a URL")
    if "://" in text:
        parts = urlsplit(text)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"allowed host {entry!r}: only http(s) URLs are accepted")
        if parts.path not in ("", "/") or parts.query:
            raise ValueError(f"allowed host {entry!r}: a host is expected, not a path")
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError as exc:
            raise ValueError(f"allowed host {entry!r}: bad port") from exc
        return [(_normalise_host(parts.hostname), port)]
    if "/" in text:
        raise ValueError(f"allowed host {entry!r}: a host is expected, not a path")
    host, port_text = _split_hostport(text)
    host = _normalise_host(host)
    if not host:
        raise ValueError(f"allowed host {entry!r}: the host is empty")
    if port_text is None:
        return [(host, 80), (host, 443)]
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"allowed host {entry!r}: bad port {port_text!r}")
    return [(host, int(port_text))]


def _split_hostport(text: str) -> tuple[str, str | None]:
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        return host, rest[1:] if rest.startswith(":") else None
    if text.count(":") == 1:
        host, _, port = text.partition(":")
        return host, port
    return text, None  # a bare host, or a bare IPv6 address


class AllowListProxy:
    """An HTTP(S) proxy on a Unix socket that only connects to allowed hosts.

    It runs its own event loop in a daemon thread, so it keeps serving whatever the caller's
    loop is doing. Use ``start()`` and ``stop()`` (or the context manager).

    Attributes:
        socket_path: Where it listens.
        allow: The allow-list.
        refused: ``host:port`` of every refused request, in order (for the trace).
    """

    def __init__(
        self,
        socket_path: str,
        allow: AllowList,
        *,
        connect_timeout: float = 10.0,
        max_connections: int = 64,
    ) -> None:
        self.socket_path = socket_path
        self.allow = allow
        self.refused: list[str] = []
        self._connect_timeout = connect_timeout
        self._max_connections = max_connections
        self._active = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def __enter__(self) -> AllowListProxy:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> None:
        """Start listening; returns once the socket accepts connections.

        Raises:
            OSError: The socket could not be created.
        """
        ready = threading.Event()
        failure: list[BaseException] = []
        loop = asyncio.new_event_loop()
        self._loop = loop

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                self._server = loop.run_until_complete(
                    asyncio.start_unix_server(self._serve, path=self.socket_path)
                )
                # The sandbox user may be another uid (rlimit mode, Docker): let it connect.
                os.chmod(self.socket_path, 0o666)
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

        self._thread = threading.Thread(target=run, name="sandbox-proxy", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            raise failure[0]

    def stop(self) -> None:
        """Close the socket and every open connection, and end the thread."""
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
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.socket_path)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._active += 1
        try:
            if self._active > self._max_connections:
                await _respond(
                    writer, 503, "Too Many Connections", "sandbox proxy: too many open connections"
                )
                return
            await self._handle(reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            pass
        finally:
            self._active -= 1
            self._tasks.discard(task)
            writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=30)
        lines = head.decode("latin-1").split("\r\n")
        request = lines[0].split(" ")
        if len(request) != 3:
            await _respond(writer, 400, "Bad Request", "sandbox proxy: malformed request line")
            return
        method, target, version = request
        if method.upper() == "CONNECT":
            host, port_text = _split_hostport(target)
            if port_text is None or not port_text.isdigit():
                await _respond(
                    writer, 400, "Bad Request", f"sandbox proxy: bad CONNECT target {target!r}"
                )
                return
            port = int(port_text)
            upstream = await self._open(writer, host, port)
            if upstream is None:
                return
            writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            await writer.drain()
            await _relay(reader, writer, *upstream)
            return
        parts = urlsplit(target)
        if parts.scheme != "http" or not parts.hostname:
            body = (
                "sandbox proxy: expected an absolute http:// URL or CONNECT, got "
                f"{method} {target!r} (https goes through CONNECT)"
            )
            await _respond(writer, 400, "Bad Request", body)
            return
        try:
            port = parts.port or 80
        except ValueError:
            await _respond(writer, 400, "Bad Request", f"sandbox proxy: bad port in {target!r}")
            return
        upstream = await self._open(writer, parts.hostname, port)
        if upstream is None:
            return
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        headers = [
            line
            for line in lines[1:]
            if line and line.split(":", 1)[0].strip().lower() not in _HOP_BY_HOP
        ]
        # One request per upstream connection keeps the relay a plain byte pipe.
        rebuilt = "\r\n".join([f"{method} {path} {version}", *headers, "Connection: close", "", ""])
        upstream[1].write(rebuilt.encode("latin-1"))
        await _relay(reader, writer, *upstream)

    async def _open(
        self, writer: asyncio.StreamWriter, host: str, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        if not self.allow.allows(host, port):
            target = _format_hostport(_normalise_host(host), port)
            self.refused.append(target)
            body = (
                f"sandbox proxy: {target} is not in the allowed hosts "
                f"({self.allow.describe()}); the request was not sent\n"
            )
            await _respond(writer, 403, f"Forbidden by sandbox: {target} is not allowed", body)
            return None
        try:
            return await asyncio.wait_for(
                asyncio.open_connection(_normalise_host(host), port),
                timeout=self._connect_timeout,
            )
        except (OSError, TimeoutError) as exc:
            target = _format_hostport(host, port)
            await _respond(
                writer, 502, "Bad Gateway", f"sandbox proxy: cannot reach {target}: {exc}"
            )
            return None


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
