"""A server run as a child process on 127.0.0.1: start it, wait until ready, stop it.

llama.cpp's server (``local_models``) and the builds of the MCP server (``mcp_builds``) share
this plumbing: pick a free loopback port, spawn the command in a session of its own (a Ctrl-C
in the terminal reaches the pipeline, which stops it) with its output in a log file, poll
until the server is ready or has exited (quoting the log's tail), and stop the whole process
group (SIGTERM, then SIGKILL). ``stop`` is idempotent and also runs at interpreter exit.

    process = ServerProcess(log_path)
    process.spawn(["llama-server", "--port", str(port), ...], port)
    problem = process.wait_ready(lambda port: answers_ok(port, "/health"), "answer /health", ...)

:class:`ServerPool` keeps a run's servers, one per key, started on first use and stopped
together.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import subprocess
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Generic, Protocol, Self, TypeVar

HOST = "127.0.0.1"
_RUNNING: weakref.WeakSet[ServerProcess] = weakref.WeakSet()


def free_port() -> int:
    """A port free on 127.0.0.1 right now (the server binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def accepts_connections(port: int, timeout: float = 0.2) -> bool:
    """Whether something listens on the loopback ``port`` (a readiness probe)."""
    try:
        with socket.create_connection((HOST, port), timeout):
            return True
    except OSError:
        return False


def log_tail(path: Path, lines: int = 15) -> str:
    """The last ``lines`` lines of a server's log file; ``(no output)`` when there are none."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no output)"
    return "\n".join(text.strip().splitlines()[-lines:]) or "(no output)"


def end_process_group(pid: int, timeout: float) -> None:
    """SIGTERM the process group ``pid`` leads, then SIGKILL what is left after ``timeout``.

    Waits for the whole group, not only its leader: a server's own children go with it.
    """
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pid, 0)
        except (ProcessLookupError, PermissionError):
            return
        # The leader, when it is our child, stays a zombie (and in the group) until reaped.
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


class ServerProcess:
    """One child server process, in a session of its own, writing to a log file."""

    def __init__(self, log_path: Path) -> None:
        """Prepare (nothing runs until :meth:`spawn`).

        Args:
            log_path: Where the server's output (stdout and stderr) goes.
        """
        self.log_path = log_path
        self.port: int | None = None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        """The server's pid while it runs."""
        return self._process.pid if self._process is not None else None

    def spawn(
        self,
        command: Sequence[str],
        port: int,
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> int:
        """Start ``command`` (which serves on ``port``) with its output in the log file.

        Returns:
            The server's pid.
        """
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("wb") as log:
            self._process = subprocess.Popen(
                list(command),
                cwd=cwd,
                env=None if env is None else dict(env),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.port = port
        _RUNNING.add(self)
        return self._process.pid

    def wait_ready(
        self,
        ready: Callable[[int], bool],
        waiting_for: str,
        *,
        started: float,
        timeout: float,
        poll_s: float = 0.05,
    ) -> str | None:
        """Poll until ``ready(port)`` holds; None then, else what went wrong.

        Args:
            ready: The readiness probe, given the port.
            waiting_for: What readiness is, for the message (``"listen on 127.0.0.1:8000"``).
            started: ``time.perf_counter()`` when the start began (the timeout counts from it).
            timeout: Seconds from ``started`` before giving up.
            poll_s: Seconds between probes.

        Returns:
            None once ready, else ``"exited with CODE at start-up: <log tail>"`` or
            ``"did not <waiting_for> within N s: <log tail>"``.
        """
        process, port = self._process, self.port
        if process is None or port is None:
            raise RuntimeError("the server process is not spawned")
        while time.perf_counter() - started < timeout:
            code = process.poll()
            if code is not None:
                return f"exited with {code} at start-up: {self.log_tail()}"
            if ready(port):
                return None
            time.sleep(poll_s)
        return f"did not {waiting_for} within {timeout:.0f} s: {self.log_tail()}"

    def log_tail(self, lines: int = 15) -> str:
        """The last lines of the server's output."""
        return log_tail(self.log_path, lines)

    def stop(self, timeout: float = 5.0) -> int | None:
        """Stop the server and everything it started (terminate, then kill). Idempotent.

        Returns:
            The pid of the server stopped; None when none ran.
        """
        process, self._process = self._process, None
        _RUNNING.discard(self)
        if process is None:
            return None
        end_process_group(process.pid, timeout)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout)
        return process.pid


class ChildServer:
    """What a server run by a :class:`ServerProcess` shows: port, pid, start, stop, ``with``.

    A subclass implements :meth:`start` (spawn and wait, setting ``_process`` and ``port``)
    and may extend :meth:`stop`.
    """

    def __init__(self) -> None:
        """Not started: no process, no port."""
        self.port: int | None = None
        self._process: ServerProcess | None = None

    @property
    def pid(self) -> int | None:
        """The server's pid while it runs."""
        return self._process.pid if self._process is not None else None

    def start(self) -> str:
        """Start the server and wait until it is ready; returns its URL."""
        raise NotImplementedError

    def stop(self, timeout: float = 5.0) -> int | None:
        """Stop the server (terminate, then kill after ``timeout``). Idempotent.

        Returns:
            The pid of the server stopped; None when none ran.
        """
        process, self._process = self._process, None
        return process.stop(timeout) if process is not None else None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


@atexit.register
def _stop_all() -> None:
    for server in list(_RUNNING):
        server.stop(timeout=2.0)


class Stoppable(Protocol):
    """A server a :class:`ServerPool` holds."""

    def stop(self) -> object:
        """Stop the server (idempotent)."""
        ...


K = TypeVar("K")
S = TypeVar("S", bound=Stoppable)


class ServerPool(Generic[K, S]):
    """A run's servers, one per key, started on first use and stopped together (thread-safe).

    A context manager: leaving it stops every server.
    """

    def __init__(self) -> None:
        """Start empty."""
        self._servers: dict[K, S] = {}
        self._lock = threading.Lock()

    def get(self, key: K, start: Callable[[int], S]) -> S:
        """The server of ``key``, started by ``start(index)`` if needed (index: servers so far).

        ``start`` runs under the pool's lock: a server starts once even when asked for twice at
        once. What it raises reaches the caller and nothing is kept.
        """
        with self._lock:
            server = self._servers.get(key)
            if server is None:
                server = self._servers[key] = start(len(self._servers))
            return server

    def started(self) -> dict[K, S]:
        """The started servers by key."""
        return dict(self._servers)

    def close(self) -> None:
        """Stop every server (idempotent)."""
        with self._lock:
            servers, self._servers = list(self._servers.values()), {}
        for server in servers:
            server.stop()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
