"""Serve an ASGI app with uvicorn on a loopback port, in a daemon thread or the foreground.

The twin (``twin.server.TwinServer``) and the LLM replay server
(``replay.server.ReplayServer``) share this plumbing: refuse non-loopback hosts, bind
the socket first (so port 0 gives a free port known before uvicorn starts), run uvicorn in a
daemon thread, wait until a health path answers 200, and stop cleanly.

    runner = BackgroundUvicorn("twin", lambda port: uvicorn.Config(app, port=port), "/health")
    port = runner.start(host="127.0.0.1", port=0)
    ...
    runner.stop()
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

import uvicorn

LOOPBACK_HOSTS = ("127.0.0.1", "localhost")

ConfigFactory = Callable[[int], uvicorn.Config]


def check_loopback(host: str, what: str) -> None:
    """Refuse a host other than ``127.0.0.1`` or ``localhost``.

    Raises:
        ValueError: naming ``what`` (e.g. "the twin") and the refused host.
    """
    if host not in LOOPBACK_HOSTS:
        raise ValueError(f"{what} binds to loopback only ({LOOPBACK_HOSTS}), not {host!r}")


def bind_loopback(
    host: str, port: int, *, what: str, backlog: int = 128, inheritable: bool = False
) -> socket.socket:
    """Bind and listen on ``127.0.0.1:port`` (0 picks a free port); return the socket.

    Args:
        host: ``127.0.0.1`` or ``localhost``; anything else is refused.
        port: TCP port, 0 for a free one.
        what: The server's name for the error message.
        backlog: ``listen`` backlog.
        inheritable: Whether child processes may inherit the socket.
    """
    check_loopback(host, what)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError:
        sock.close()
        raise
    sock.listen(backlog)
    sock.set_inheritable(inheritable)
    return sock


def answers_ok(port: int, path: str, timeout: float = 1.0) -> bool:
    """Return whether ``GET path`` on the loopback ``port`` answers 200.

    A bare ``http.client`` request: an ``httpx`` client would build a TLS context (about
    0.15 s) for a plain-HTTP loopback call.
    """
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("GET", path)
        return connection.getresponse().status == 200
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


class BackgroundUvicorn:
    """One uvicorn server in a daemon thread, on a socket bound before it starts.

    Args:
        what: The server's name in error messages, e.g. ``"the twin"``.
        make_config: Builds the uvicorn settings for the bound port.
        health_path: Path that answers 200 once the app is ready.
        backlog: ``listen`` backlog of the socket.
        inheritable: Whether child processes may inherit the socket.
    """

    def __init__(
        self,
        what: str,
        make_config: ConfigFactory,
        health_path: str,
        *,
        backlog: int = 128,
        inheritable: bool = False,
    ) -> None:
        self.what = what
        self._make_config = make_config
        self._health_path = health_path
        self._backlog = backlog
        self._inheritable = inheritable
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self._port: int | None = None

    @property
    def port(self) -> int | None:
        """The port of the running, healthy server; ``None`` when stopped."""
        return self._port

    def start(self, host: str, port: int, timeout: float = 10.0) -> int:
        """Bind, serve in a daemon thread, and wait until the health path answers 200.

        Returns the bound port. Calling it again while running returns the same port.

        Raises:
            ValueError: ``host`` is not a loopback host.
            RuntimeError: the thread died, or the server was not healthy within ``timeout`` s.
        """
        if self._port is not None:
            return self._port
        self._socket = bind_loopback(
            host, port, what=self.what, backlog=self._backlog, inheritable=self._inheritable
        )
        bound = int(self._socket.getsockname()[1])
        self._server = uvicorn.Server(self._make_config(bound))
        name = self.what.removeprefix("the ").replace(" ", "-")
        self._thread = threading.Thread(
            target=_run_quietly,
            args=(self._server, self._socket),
            name=f"{name}-{bound}",
            daemon=True,
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self._thread.is_alive():
                self._cleanup()
                raise RuntimeError(f"{self.what} thread on port {bound} stopped during start-up")
            if self._server.started and answers_ok(bound, self._health_path):
                self._port = bound
                return bound
            time.sleep(0.005)
        self.stop()
        raise RuntimeError(f"{self.what} on port {bound} was not healthy after {timeout} s")

    def stop(self, timeout: float = 10.0) -> None:
        """Ask uvicorn to exit, wait for the thread, and release the socket."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
        self._cleanup()

    def _cleanup(self) -> None:
        if self._socket is not None:
            self._socket.close()
        self._server = None
        self._thread = None
        self._socket = None
        self._port = None


T = TypeVar("T")


class LoopbackApp(Generic[T]):
    """An app served by :class:`BackgroundUvicorn`, started and stopped as a context manager.

    A subclass says what a start gives (its URLs, itself) in :meth:`_started`; ``start`` returns
    it, and ``with server as it:`` binds it.

    Args:
        runner: The thread that will serve the app (not started).
        host: ``127.0.0.1`` or ``localhost`` (anything else is refused).
        port: TCP port; 0 picks a free one.
    """

    def __init__(self, runner: BackgroundUvicorn, *, host: str, port: int) -> None:
        check_loopback(host, runner.what)
        self._host = host
        self._requested_port = port
        self._runner = runner
        self._running: T | None = None

    def _started(self, port: int) -> T:
        """What a start on ``port`` gives (called once the app answers its health path)."""
        raise NotImplementedError

    def start(self, timeout: float = 10.0) -> T:
        """Bind, start serving in a background thread, and wait until healthy.

        Raises:
            RuntimeError: the server did not answer its health path within ``timeout`` s.
        """
        if self._running is None:
            port = self._runner.start(self._host, self._requested_port, timeout)
            self._running = self._started(port)
        return self._running

    def stop(self, timeout: float = 10.0) -> None:
        """Ask uvicorn to exit, wait for the thread, and release the socket."""
        self._runner.stop(timeout)
        self._running = None

    def __enter__(self) -> T:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _run_quietly(server: uvicorn.Server, sock: socket.socket) -> None:
    """Run uvicorn in a thread; its ``sys.exit`` on a failed start-up just ends the thread.

    uvicorn has already logged why; :meth:`BackgroundUvicorn.start` sees the thread end.
    """
    with contextlib.suppress(SystemExit):
        server.run(sockets=[sock])


def serve_in_foreground(sock: socket.socket, config: uvicorn.Config) -> None:
    """Run uvicorn on an already bound socket until interrupted; close the socket after."""
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
