"""Pieces the sandbox backends share: session plumbing, environment, limits, output, results."""

from __future__ import annotations

import codecs
import json
import math
import os
import re
import shutil
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Self
from urllib.parse import urlsplit

from datagouv_eval_pipeline.world.front import (
    CA_BUNDLE_VARS,
    AllowList,
    Front,
    ServedHosts,
    WireRequest,
)
from datagouv_eval_pipeline.world.sandbox.base import ExecResult, SandboxLimits

LAUNCHER_PATH = Path(__file__).with_name("_launcher.py")
"""The launcher script, copied into every sandbox (and into the Docker image)."""
ENTER_PATH = Path(__file__).with_name("_enter.py")
"""The host-side privilege-dropping step used when the backend runs as root."""

PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
RESERVED_ENV = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "TMPDIR",
        "LANG",
        "PYTHONPATH",
        "PYTHONHOME",
        "PYTHONSTARTUP",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONUNBUFFERED",
        "LD_PRELOAD",
        "LD_LIBRARY_PATH",
        "NO_PROXY",
        "no_proxy",
        *PROXY_VARS,
        *CA_BUNDLE_VARS,
    }
)
"""Names the sandbox sets itself; a caller may not override them."""

_SECRET_NAME = re.compile(
    r"API_?KEY|(^|_)KEY$|TOKEN|SECRET|PASSW|CREDENTIAL|(^|_)AUTH|COOKIE", re.IGNORECASE
)
_COMMAND_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")


class SessionBase:
    """What both session classes share: the closed flag, ``async with`` and the proxy's refusals.

    A subclass sets ``self._closed = False`` and ``self._proxy``, and implements ``close()``
    (which sets ``_closed`` to True).
    """

    _closed: bool
    _proxy: Front

    @property
    def refused_hosts(self) -> list[str]:
        """``host:port`` of every request the proxy refused so far."""
        return self._proxy.refused

    def take_wire_requests(self) -> list[WireRequest]:
        """The HTTP requests the code sent through the proxy since the last call, in order."""
        return self._proxy.take_wire_requests()

    async def close(self) -> None:
        """Release the session's resources (implemented by each backend)."""
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this sandbox session is closed")


CA_BUNDLE_NAME = "ca-bundle.pem"
"""The CA bundle's name in a session's control directory, next to the proxy socket."""


def session_proxy(control: Path, allow: AllowList, served: ServedHosts | None) -> Front:
    """The session's proxy on ``control/proxy.sock`` (not started; see :func:`start_proxy`).

    With ``served`` (the twin's production host names) it is the hostname front: it answers
    for them itself and passes only ``allow`` to the real network. Without (a live run), the
    allowed connections go through the proxy the host process uses (``HTTPS_PROXY``), if any:
    the sandbox reaches the network the way the rest of the run does.
    """
    return Front(
        served=served,
        passthrough=allow,
        socket_path=str(control / "proxy.sock"),
        name="sandbox proxy",
        via=None if served is not None else host_proxy(),
    )


def host_proxy() -> tuple[str, int] | None:
    """``(host, port)`` of the host process's ``HTTPS_PROXY`` (an ``http://`` proxy), or None."""
    value = os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy") or ""
    parts = urlsplit(value.strip())
    if parts.scheme != "http" or not parts.hostname:
        return None
    return parts.hostname, parts.port or 80


def host_ca_bundle() -> Path | None:
    """The CA bundle the host process trusts (``SSL_CERT_FILE`` or ``REQUESTS_CA_BUNDLE``)."""
    for name in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"):
        value = os.environ.get(name, "").strip()
        if value and Path(value).is_file():
            return Path(value)
    return None


def start_proxy(proxy: Front, control: Path) -> None:
    """Start a session's proxy; a front's CA bundle goes next to its socket first.

    The launcher points ``SSL_CERT_FILE`` / ``REQUESTS_CA_BUNDLE`` / ``CURL_CA_BUNDLE`` at
    that copy (the twin home itself is not visible inside the sandbox). A live session whose
    connections go through the host's proxy trusts what the host trusts (its CA bundle: a
    gateway's, or the hostname front's), since that proxy may present its own certificates.
    """
    bundle = proxy.authority.bundle_path if proxy.authority is not None else None
    if bundle is None and proxy.via is not None:
        bundle = host_ca_bundle()
    if bundle is not None:
        shutil.copyfile(bundle, control / CA_BUNDLE_NAME)
        os.chmod(control / CA_BUNDLE_NAME, 0o644)
    proxy.start()


def check_extra_env(env: Mapping[str, str] | None) -> dict[str, str]:
    """Validate the caller's extra variables.

    Raises:
        ValueError: A name is reserved by the sandbox or looks like a secret (``*_API_KEY``,
            ``*TOKEN*``, ...), or a value is not a string; the message names the variable.
    """
    checked: dict[str, str] = {}
    for name, value in (env or {}).items():
        if name in RESERVED_ENV:
            raise ValueError(
                f"sandbox env: {name} is set by the sandbox itself and cannot be given"
            )
        if _SECRET_NAME.search(name):
            raise ValueError(
                f"sandbox env: {name} looks like a secret; sandboxes never receive credentials"
            )
        if not isinstance(value, str) or "\0" in value or "=" in name or not name:
            raise ValueError(f"sandbox env: {name!r} must map to a string without NUL bytes")
        checked[name] = value
    return checked


def sandbox_env(
    *, home: str, path: str, extra: Mapping[str, str], pythonpath: str | None
) -> dict[str, str]:
    """The complete environment of a sandboxed program: a fixed allow-list plus ``extra``.

    Nothing is inherited from the parent process.
    """
    env = dict(extra)
    env.update(
        {
            "PATH": path,
            "HOME": home,
            "USER": "sandbox",
            "LOGNAME": "sandbox",
            "LANG": "C.UTF-8",
            "TMPDIR": "/tmp",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
        }
    )
    # Numeric libraries start one thread per core at import; each counts against the
    # process limit and reserves address space.
    env.update(dict.fromkeys(_THREAD_VARS, "1"))
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    return env


def launcher_args(
    *, limits: SandboxLimits, status_fd: int | None, proxy: str | None, wall: bool
) -> list[str]:
    """The launcher's options (``_launcher.main``), up to and including ``--``."""
    args = [f"status_fd={status_fd}"] if status_fd is not None else []
    if proxy:
        args.append(f"proxy={proxy}")
    if wall:
        args.append(f"wall={limits.wall_seconds}")
    for name, (soft, hard) in launcher_rlimits(limits).items():
        args.append(f"rlimit={name}:{soft}:{hard}")
    return [*args, "--"]


def launcher_rlimits(limits: SandboxLimits) -> dict[str, tuple[int, int]]:
    """``setrlimit`` values (soft, hard) the launcher applies to the sandboxed command."""
    cpu = max(1, math.ceil(limits.cpu_seconds))
    memory = limits.memory_mb * 1024 * 1024
    file_size = limits.max_file_mb * 1024 * 1024
    return {
        # Past the soft limit the kernel sends SIGXCPU, one second later SIGKILL.
        "cpu": (cpu, cpu + 1),
        "as": (memory, memory),
        "nproc": (limits.max_processes, limits.max_processes),
        "fsize": (file_size, file_size),
        "core": (0, 0),
        "nofile": (1024, 1024),
    }


def check_commands(commands: Mapping[str, str]) -> dict[str, str]:
    """Validate a command name → module mapping.

    Raises:
        ValueError: A command or module name is not a plain name; the message names it.
    """
    for name, module in commands.items():
        if not _COMMAND_NAME.match(name):
            raise ValueError(f"sandbox command {name!r}: expected a plain command name")
        if not _MODULE_NAME.match(module):
            raise ValueError(f"sandbox command {name!r}: {module!r} is not a module name")
    return dict(commands)


def write_command_wrappers(bin_dir: Path, commands: Mapping[str, str]) -> None:
    """Write one small shell script per command that runs ``python -m MODULE "$@"``."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, module in check_commands(commands).items():
        script = bin_dir / name
        script.write_text(f'#!/bin/sh\nexec python -m {module} "$@"\n', encoding="utf-8")
        script.chmod(0o755)


@dataclass(frozen=True)
class LauncherStatus:
    """What the launcher reported about the command it ran (see ``_launcher.py``)."""

    exit_code: int | None = None
    signal: int | None = None
    cpu_seconds: float | None = None
    timed_out: bool = False
    spawn_errno: int | None = None

    @classmethod
    def parse(cls, data: bytes) -> LauncherStatus | None:
        """Read the last JSON line; None when there is none or it is not a status."""
        lines = data.decode(errors="replace").strip().splitlines()
        try:
            raw = json.loads(lines[-1]) if lines else None
        except json.JSONDecodeError:
            return None
        if not isinstance(raw, dict):
            return None

        def number(key: str) -> float | None:
            value = raw.get(key)
            if isinstance(value, bool) or not isinstance(value, int | float):
                return None
            return float(value)

        exit_code, signal_number = number("exit_code"), number("signal")
        spawn_errno = number("spawn_errno")
        return cls(
            exit_code=None if exit_code is None else int(exit_code),
            signal=None if signal_number is None else int(signal_number),
            cpu_seconds=number("cpu_seconds"),
            timed_out=raw.get("timed_out") is True,
            spawn_errno=None if spawn_errno is None else int(spawn_errno),
        )

    def spawn_error(self, command: str) -> str | None:
        """Why ``command`` could not be started, if it could not."""
        if self.spawn_errno is None:
            return None
        return f"{command}: {os.strerror(self.spawn_errno)}"


class OutputCapture:
    """Counts a stream's characters and keeps its head and tail within the output limit."""

    def __init__(self, keep_chars: int, kill_chars: int) -> None:
        self.keep_chars = keep_chars
        self.kill_chars = kill_chars
        self.total_chars = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._head: list[str] = []
        self._head_chars = 0
        self._tail = ""
        self._tail_chars = max(keep_chars // 4, 1)

    def feed(self, data: bytes, *, final: bool = False) -> bool:
        """Add a chunk; False once the stream is past ``kill_chars``."""
        text = self._decoder.decode(data, final)
        self.total_chars += len(text)
        if self._head_chars < self.keep_chars:
            piece = text[: self.keep_chars - self._head_chars]
            self._head.append(piece)
            self._head_chars += len(piece)
        self._tail = (self._tail + text)[-self._tail_chars :]
        return self.total_chars <= self.kill_chars

    @property
    def tail(self) -> str:
        """The last characters seen (a quarter of the limit), for classifying failures."""
        return self._tail

    def text(self) -> str:
        """The output as kept: whole if within the limit, else head + marker + tail."""
        self.feed(b"", final=True)
        head = "".join(self._head)
        if self.total_chars <= self.keep_chars:
            return head
        marker = f"\n[... sandbox: {self.total_chars:,} characters in all, middle cut ...]\n"
        if self.keep_chars < 4 * len(marker):
            return head[: self.keep_chars]
        tail = self._tail[-(self.keep_chars // 4) :]
        return head[: self.keep_chars - len(marker) - len(tail)] + marker + tail


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def build_result(
    *,
    stdout: OutputCapture,
    stderr: OutputCapture,
    duration_ms: float,
    limits: SandboxLimits,
    exit_code: int | None,
    signal_number: int | None = None,
    cpu_seconds: float | None = None,
    timed_out: bool = False,
    output_overflow: bool = False,
    disk_overflow: bool = False,
    spawn_error: str | None = None,
    oom_killed: bool = False,
    failure: str | None = None,
) -> ExecResult:
    """Turn what a backend observed into an ``ExecResult`` whose ``reason`` says what happened.

    Limits that Python reports as exceptions (``MemoryError``, ``BlockingIOError`` from
    ``fork``, ``File too large``) are recognised from the end of stderr.
    """
    stdout_text, stderr_text = stdout.text(), stderr.text()
    tail = stderr.tail
    limit_hit: str | None = None
    reason: str | None = None
    if failure is not None:
        exit_code, reason = None, f"sandbox failure: {failure}"
    elif timed_out:
        exit_code, limit_hit = None, "wall"
        reason = f"stopped at the {limits.wall_seconds:g} s wall-clock limit"
    elif output_overflow:
        exit_code, limit_hit = None, "output"
        reason = f"stopped: output passed {limits.kill_output_chars:,} characters"
    elif disk_overflow:
        exit_code, limit_hit = None, "disk"
        reason = (
            f"stopped: the working directory passed its {limits.disk_mb} MB quota or its "
            f"{limits.max_files:,}-file quota "
            "(the files this call wrote were removed)"
        )
    elif oom_killed:
        exit_code, limit_hit = None, "memory"
        reason = f"killed at the {limits.memory_mb} MB memory limit"
    elif signal_number is not None:
        exit_code = None
        used = cpu_seconds or 0.0
        if signal_number == signal.SIGXCPU or (
            signal_number == signal.SIGKILL and used >= limits.cpu_seconds * 0.95
        ):
            limit_hit = "cpu"
            reason = f"killed at the {limits.cpu_seconds:g} s CPU-time limit"
        else:
            reason = f"killed by {_signal_name(signal_number)}"
    elif spawn_error is not None:
        reason = f"could not start the command: {spawn_error}"
    elif exit_code not in (0, None):
        if "MemoryError" in tail or "Cannot allocate memory" in tail:
            limit_hit = "memory"
            reason = f"ran out of memory (limit {limits.memory_mb} MB of address space)"
        elif "Resource temporarily unavailable" in tail or "can't start new thread" in tail:
            limit_hit = "processes"
            reason = f"hit the limit of {limits.max_processes} processes"
        elif "File too large" in tail:
            limit_hit = "file"
            reason = f"wrote a file larger than {limits.max_file_mb} MB"
    return ExecResult(
        stdout=stdout_text,
        stderr=stderr_text,
        exit_code=exit_code,
        duration_ms=duration_ms,
        timed_out=timed_out,
        limit_hit=limit_hit,
        stdout_chars=stdout.total_chars,
        stderr_chars=stderr.total_chars,
        reason=reason,
    )
