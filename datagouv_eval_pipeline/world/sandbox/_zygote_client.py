"""Host side of the warm zygote (``_zygote.py``): start it, send it calls, collect their status.

The client is independent of any event loop: a daemon thread reads the zygote's answers and
completes ``concurrent.futures.Future`` objects, which asyncio code awaits with
``asyncio.wrap_future``. So one zygote can serve sessions opened from different event loops.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

_READY_SECONDS = 60.0
MAX_REQUEST_BYTES = 128 * 1024
"""Largest request (mostly a command's arguments) sent to the zygote in one message."""


class ZygoteError(RuntimeError):
    """The zygote could not start, or ended while calls were waiting for it."""


class ZygoteUnsupportedError(ZygoteError):
    """The zygote runs, but cannot give calls their own namespaces on this host."""


class ZygoteClient:
    """One running zygote process and its control socket.

    Args:
        argv: The full command that starts it (privilege drop, ``bwrap``, Python, the script);
            the literal ``{fd}`` in it is replaced by the zygote's end of the control socket.
        env: Its environment (the scrubbed sandbox environment).
        log_path: Where its own standard error goes (for diagnosing a zygote that ended).
    """

    def __init__(self, argv: Sequence[str], env: Mapping[str, str], log_path: Path) -> None:
        self._lock = threading.Lock()
        self._pending: dict[int, Future[dict[str, Any]]] = {}
        self._next_id = 0
        self._dead: str | None = None
        self._log_path = log_path
        self._ready = threading.Event()
        self.problem: str | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._sock, self._theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._argv = [arg.replace("{fd}", str(self._theirs.fileno())) for arg in argv]
        self._env = dict(env)
        # The thread that starts the zygote lives as long as it: bubblewrap's
        # --die-with-parent follows the thread that started it, not the process.
        self._thread = threading.Thread(target=self._run, name="sandbox-zygote", daemon=True)
        self._thread.start()

    def wait_ready(self, timeout: float = _READY_SECONDS) -> None:
        """Block until the zygote serves calls.

        Raises:
            ZygoteError: It could not start, or did not in time.
        """
        if not self._ready.wait(timeout):
            self.stop()
            raise ZygoteError(f"the sandbox zygote did not start in {timeout:g} s")
        if self.problem:
            raise ZygoteUnsupportedError(self._dead or self.problem)
        if self._dead is not None:
            raise ZygoteError(self._dead)

    def _run(self) -> None:
        try:
            with open(self._log_path, "ab") as log:
                self._process = subprocess.Popen(
                    self._argv,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                    env=self._env,
                    pass_fds=(self._theirs.fileno(),),
                    start_new_session=True,
                )
        except OSError as exc:
            self._dead = f"could not start the sandbox zygote: {exc}"
        finally:
            self._theirs.close()
        if self._dead is None:
            try:
                ready = self._sock.recv(65536)
            except OSError:
                ready = b""
            if not ready:
                self._dead = f"the sandbox zygote did not start: {self.log_tail()}"
            else:
                with contextlib.suppress(ValueError, AttributeError):
                    self.problem = json.loads(ready).get("problem")
                if self.problem:
                    self._dead = f"calls cannot have their own namespaces: {self.problem}"
        self._ready.set()
        if self._dead is None:
            self._read()
        else:
            self._fail_pending()

    @property
    def ready(self) -> bool:
        """The zygote has started and is serving calls."""
        return self._ready.is_set() and self.alive

    @property
    def alive(self) -> bool:
        """The zygote is running and answering."""
        return self._dead is None and (self._process is None or self._process.poll() is None)

    def log_tail(self) -> str:
        """The end of the zygote's own standard error."""
        with contextlib.suppress(OSError):
            return self._log_path.read_bytes()[-500:].decode(errors="replace").strip()
        return ""

    def submit(
        self, request: dict[str, Any], fds: Sequence[int]
    ) -> tuple[int, Future[dict[str, Any]]]:
        """Send one call; its id and a future for its status.

        Raises:
            ZygoteError: The zygote has ended, or the request is too large.
        """
        future: Future[dict[str, Any]] = Future()
        with self._lock:
            if self._dead is not None:
                raise ZygoteError(self._dead)
            self._next_id += 1
            call_id = self._next_id
            payload = json.dumps({**request, "op": "run", "id": call_id}).encode()
            if len(payload) > MAX_REQUEST_BYTES:
                raise ZygoteError(f"the call is too large ({len(payload):,} bytes of arguments)")
            self._pending[call_id] = future
            try:
                socket.send_fds(self._sock, [payload], list(fds))
            except OSError as exc:
                del self._pending[call_id]
                raise ZygoteError(f"the sandbox zygote is not answering: {exc}") from exc
        return call_id, future

    def kill(self, ids: Sequence[int]) -> None:
        """Ask the zygote to end these calls (their futures complete as usual)."""
        with self._lock, contextlib.suppress(OSError):
            if self._dead is None and ids:
                self._sock.send(json.dumps({"op": "kill", "ids": list(ids)}).encode())

    def stop(self) -> None:
        """End the zygote and every call it runs."""
        with self._lock:
            self._dead = self._dead or "the sandbox zygote was stopped"
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._ready.wait(_READY_SECONDS)
        process = self._process
        if process is not None:
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                # Killing bwrap's group tears down its PID namespace and every call in it.
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        self._thread.join(timeout=5)
        with contextlib.suppress(OSError):
            self._sock.close()
        self._fail_pending()

    def _read(self) -> None:
        while True:
            try:
                data = self._sock.recv(65536)
            except OSError:
                data = b""
            if not data:
                break
            try:
                message = json.loads(data)
                call_id, status = int(message["id"]), message["status"]
            except (ValueError, KeyError, TypeError):
                continue
            with self._lock:
                future = self._pending.pop(call_id, None)
            if future is not None and not future.done():
                future.set_result(status if isinstance(status, dict) else {})
        with self._lock:
            self._dead = self._dead or f"the sandbox zygote ended: {self.log_tail()}"
        self._fail_pending()

    def _fail_pending(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, {}
            reason = self._dead or "the sandbox zygote ended"
        for future in pending.values():
            if not future.done():
                future.set_exception(ZygoteError(reason))
