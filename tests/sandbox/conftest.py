"""Fixtures of the sandbox tests: two local HTTP servers, the backends, a process scanner."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

import pytest

from datagouv_eval_pipeline.world.sandbox.base import SandboxLimits
from datagouv_eval_pipeline.world.sandbox.local import LocalSandbox, LocalSession, probe_bwrap

T = TypeVar("T")


@dataclass
class Server:
    """A tiny HTTP server on 127.0.0.1 that counts the requests it answered."""

    name: str
    port: int = 0
    paths: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def hostport(self) -> str:
        return f"127.0.0.1:{self.port}"


def _serve(server: Server) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            server.paths.append(self.path)
            body = f"hello from {server.name}".encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.port = httpd.server_address[1]
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    return httpd


@pytest.fixture
def servers() -> Iterator[tuple[Server, Server]]:
    """``(allowed, forbidden)``: both on the host loopback; only the first is allow-listed."""
    allowed, forbidden = Server("allowed"), Server("forbidden")
    running = [_serve(allowed), _serve(forbidden)]
    yield allowed, forbidden
    for httpd in running:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(scope="session")
def bwrap_sandbox() -> LocalSandbox:
    """The namespaced local backend; the tests using it are skipped, saying why, without it."""
    problem = probe_bwrap()
    if problem is not None:
        pytest.skip(f"bwrap mode not tested: {problem}")
    return LocalSandbox(mode="bwrap")


def run(coro: Awaitable[T]) -> T:
    return asyncio.run(coro)  # type: ignore[arg-type]


def in_session(
    sandbox: LocalSandbox,
    body: Callable[[LocalSession], Awaitable[T]],
    *,
    allowed_hosts: tuple[str, ...] = (),
    limits: SandboxLimits | None = None,
    env: dict[str, str] | None = None,
) -> T:
    """Open a session, run ``body`` with it, always close it."""

    async def go() -> T:
        session = await sandbox.open_session(allowed_hosts=allowed_hosts, env=env, limits=limits)
        try:
            return await body(session)
        finally:
            await session.close()

    return asyncio.run(go())


def processes_with(marker: str) -> list[int]:
    """Host pids whose command line contains ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                if marker.encode() in handle.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found
