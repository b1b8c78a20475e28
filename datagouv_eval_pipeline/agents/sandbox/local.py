"""The local sandbox backend: bubblewrap namespaces (or, on request, rlimits only), no Docker.

Every call is a fresh process tree started by ``bwrap`` with new user, mount, PID, network, IPC,
UTS and cgroup namespaces. Inside, the program sees a read-only ``/usr``, the Python runtime and
the project's site-packages (read-only), a generated ``/etc/passwd``, a private ``/tmp``, the
session's working directory at ``/sandbox`` (the only writable place that outlives the call) and
nothing else of the host: no project directory, no home, no ``/work``. It runs as an unprivileged
user with no capabilities, in an environment built from scratch. Its only network route is the
session's allow-listing proxy (see ``proxy.py``), reached through a Unix socket.

The ``rlimit`` mode, for hosts where bubblewrap cannot run, keeps the scrubbed environment, the
limits, the process-tree kill and the proxy variables, but shares the host's filesystem view and
network: it is weaker, and it has to be chosen explicitly (``docs/sandbox.md``).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from datagouv_eval_pipeline.agents.sandbox._common import (
    ENTER_PATH,
    LAUNCHER_PATH,
    LauncherStatus,
    OutputCapture,
    SessionBase,
    build_result,
    check_commands,
    check_extra_env,
    launcher_args,
    sandbox_env,
    write_command_wrappers,
)
from datagouv_eval_pipeline.agents.sandbox._enter import blocking_ancestor
from datagouv_eval_pipeline.agents.sandbox.base import (
    ExecResult,
    SandboxLimits,
    SandboxUnavailableError,
)
from datagouv_eval_pipeline.agents.sandbox.proxy import AllowList, AllowListProxy

Mode = Literal["auto", "bwrap", "rlimit"]

SANDBOX_UID = 1000
"""The sandbox user's uid (and gid) as the sandboxed code sees it."""
DEFAULT_HOST_UID = 65534
"""The host uid sandboxes run as when the backend is root (``nobody``)."""
WORKDIR = "/sandbox"
CONTROL_DIR = "/opt/sandbox"
VENV_DIR = "/opt/venv"
_BACKSTOP_SECONDS = 2.0
_DRAIN_SECONDS = 2.0
_TOP_LEVEL_DIRS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_HOST_ETC = (
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/localtime",
    "/etc/mime.types",
)
_probe_cache: dict[str, str | None] = {}


@dataclass(frozen=True)
class PythonRuntime:
    """The interpreter sandboxed code runs with: this process's own, by default.

    Attributes:
        executable: Real path of the interpreter binary.
        base_prefix: The installation it belongs to (mounted read-only when outside ``/usr``).
        site_packages: The virtual environment's package directories (empty outside a venv).
        version: ``major.minor``.
    """

    executable: str
    base_prefix: str
    site_packages: tuple[str, ...]
    version: str

    @classmethod
    def current(cls) -> PythonRuntime:
        """Describe the running interpreter and its virtual environment."""
        in_venv = sys.prefix != sys.base_prefix
        paths = sysconfig.get_paths()
        site = tuple(dict.fromkeys([paths["purelib"], paths["platlib"]])) if in_venv else ()
        return cls(
            executable=os.path.realpath(sys.executable),
            base_prefix=os.path.realpath(sys.base_prefix),
            site_packages=tuple(os.path.realpath(p) for p in site if os.path.isdir(p)),
            version=f"{sys.version_info.major}.{sys.version_info.minor}",
        )


def bwrap_argv(
    *,
    bwrap: str,
    runtime: PythonRuntime,
    control: Path,
    workdir: Path,
    limits: SandboxLimits,
    packages: Mapping[str, Path],
) -> list[str]:
    """The ``bwrap`` arguments (up to and excluding the command) for one call."""
    argv = [
        bwrap,
        "--unshare-all",
        "--unshare-user",
        "--uid",
        str(SANDBOX_UID),
        "--gid",
        str(SANDBOX_UID),
        "--hostname",
        "sandbox",
        "--die-with-parent",
        "--new-session",
        "--ro-bind",
        "/usr",
        "/usr",
    ]
    for top in _TOP_LEVEL_DIRS:
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            argv += ["--ro-bind", top, top]
    for path in _HOST_ETC:
        argv += ["--ro-bind-try", path, path]
    for name in ("passwd", "group", "hosts"):
        argv += ["--ro-bind", str(control / "etc" / name), f"/etc/{name}"]
    argv += ["--proc", "/proc", "--dev", "/dev"]
    argv += ["--size", str(limits.tmp_mb * 1024 * 1024), "--tmpfs", "/tmp"]
    if not runtime.base_prefix.startswith("/usr/"):
        argv += ["--ro-bind", runtime.base_prefix, runtime.base_prefix]
    if runtime.site_packages:
        # A venv rebuilt at a neutral path: pyvenv.cfg points at the base interpreter, and
        # the project's site-packages appear read-only where that venv expects them.
        argv += ["--ro-bind", str(control / "pyvenv.cfg"), f"{VENV_DIR}/pyvenv.cfg"]
        lib = f"{VENV_DIR}/lib/python{runtime.version}/site-packages"
        argv += ["--ro-bind", runtime.site_packages[0], lib]
        if len(runtime.site_packages) > 1:
            argv += ["--ro-bind", runtime.site_packages[1], lib.replace("/lib/", "/lib64/")]
    argv += ["--symlink", runtime.executable, f"{VENV_DIR}/bin/python"]
    argv += ["--symlink", "python", f"{VENV_DIR}/bin/python3"]
    argv += ["--ro-bind", str(control), CONTROL_DIR]
    for name, package in packages.items():
        argv += ["--ro-bind", str(package), f"{CONTROL_DIR}/pylib/{name}"]
    argv += ["--bind", str(workdir), WORKDIR, "--chdir", WORKDIR]
    # Last: the root itself is a tmpfs bwrap created; nothing may be written there.
    argv += ["--remount-ro", "/"]
    return argv


def enter_prefix(host_uid: int | None, expose: Sequence[str]) -> list[str]:
    """The host-side command that drops root before the sandbox starts (empty when not root).

    See ``_enter.py``: ``expose`` lists the paths the sandbox uid must reach but cannot.
    """
    if host_uid is None:
        return []
    ids = [str(host_uid), str(host_uid), str(len(expose)), *expose]
    return [sys.executable, "-I", "-S", str(ENTER_PATH), *ids]


def default_host_uid() -> int | None:
    """The uid sandboxes run as: ``nobody`` when this process is root, else None (ourselves)."""
    return DEFAULT_HOST_UID if os.geteuid() == 0 else None


def _probe(key: str, argv: Callable[[], list[str]], failure: str) -> str | None:
    """Run a probe command once per ``key`` (cached); None when it exits 0, else why not."""
    if key in _probe_cache:
        return _probe_cache[key]
    command = argv()
    try:
        done = subprocess.run(command, capture_output=True, timeout=20, env={}, check=False)
        problem = None if done.returncode == 0 else done.stderr.decode(errors="replace").strip()
    except (OSError, subprocess.TimeoutExpired) as exc:
        problem = str(exc)
    if problem is not None:
        problem = f"{failure}: {problem or 'exit status != 0'}"
    _probe_cache[key] = problem
    return problem


def probe_bwrap(bwrap: str = "bwrap", host_uid: int | None = None) -> str | None:
    """Try a minimal namespaced run; None when it works, else why it does not."""
    path = shutil.which(bwrap)
    if path is None:
        return f"{bwrap!r} is not installed (Debian/Ubuntu: apt-get install bubblewrap)"

    def argv() -> list[str]:
        command = [*enter_prefix(host_uid, ()), path, "--unshare-all", "--unshare-user"]
        command += ["--uid", str(SANDBOX_UID), "--die-with-parent", "--ro-bind", "/usr", "/usr"]
        for top in _TOP_LEVEL_DIRS:
            if os.path.islink(top):
                command += ["--symlink", os.readlink(top), top]
        return [*command, "--proc", "/proc", "--dev", "/dev", "--", "/usr/bin/true"]

    return _probe(f"{path}:{host_uid}", argv, "bubblewrap cannot create namespaces here")


def probe_rlimit(host_uid: int | None, expose: Sequence[str]) -> str | None:
    """Try the rlimit-mode start-up (privilege drop included); None when it works."""
    return _probe(
        f"rlimit:{host_uid}:{','.join(expose)}",
        lambda: [*enter_prefix(host_uid, expose), sys.executable, "-I", "-S", "-c", "pass"],
        "cannot start sandboxed programs here",
    )


class LocalSandbox:
    """Sandbox backend for machines without Docker.

    Args:
        mode: ``bwrap`` (namespaces; the default via ``auto``, which fails with
            ``SandboxUnavailableError`` when bubblewrap cannot run) or ``rlimit`` (limits and a
            scrubbed environment only, weaker; must be asked for).
        python_packages: Package directories made importable (read-only) inside the sandbox,
            e.g. the package holding the emulated ``datagouv`` CLI.
        commands: Command name → module, run as ``python -m MODULE``; these are on ``PATH``.
        temp_root: Where session directories are created (the system temp dir by default).
        bwrap: The bubblewrap executable.
        runtime: The interpreter used inside; this process's own by default.
        host_uid: The host uid sandboxed code runs as. Default: ``nobody`` (65534) when this
            process is root, which sandboxes must never be, else this process's own uid.
    """

    name = "local"

    def __init__(
        self,
        *,
        mode: Mode = "auto",
        python_packages: Sequence[Path] = (),
        commands: Mapping[str, str] | None = None,
        temp_root: Path | None = None,
        bwrap: str = "bwrap",
        runtime: PythonRuntime | None = None,
        host_uid: int | None = None,
    ) -> None:
        if mode not in ("auto", "bwrap", "rlimit"):
            raise ValueError(f"LocalSandbox mode {mode!r}: expected auto, bwrap or rlimit")
        self.mode: Mode = mode
        self.bwrap = bwrap
        self.runtime = runtime or PythonRuntime.current()
        if host_uid is None:
            host_uid = default_host_uid()
        elif os.geteuid() != 0 and host_uid != os.geteuid():
            raise ValueError("LocalSandbox host_uid: only root can run sandboxes as another uid")
        elif host_uid == 0:
            raise ValueError("LocalSandbox host_uid: sandboxes never run as root")
        self.host_uid = host_uid
        self.temp_root = temp_root
        self.commands = check_commands(commands or {})
        self.packages: dict[str, Path] = {}
        for package in python_packages:
            package = Path(package).resolve()
            if not (package / "__init__.py").is_file():
                raise ValueError(f"sandbox python package {package}: no __init__.py there")
            if package.name in self.packages:
                raise ValueError(f"sandbox python package {package.name!r} given twice")
            self.packages[package.name] = package

    @property
    def isolation(self) -> Literal["bwrap", "rlimit"]:
        """The mode sessions actually use.

        Raises:
            SandboxUnavailableError: ``bwrap`` or ``auto`` was asked for and bubblewrap cannot
                run here.
        """
        if self.mode == "rlimit":
            problem = probe_rlimit(self.host_uid, self.exposed_paths())
            if problem is not None:
                raise SandboxUnavailableError(f"local sandbox, rlimit mode: {problem}")
            return "rlimit"
        problem = probe_bwrap(self.bwrap, self.host_uid)
        if problem is not None:
            raise SandboxUnavailableError(
                f"local sandbox: {problem}. Install bubblewrap, or pass mode='rlimit' to accept "
                "the weaker isolation described in docs/sandbox.md."
            )
        return "bwrap"

    def exposed_paths(self, *extra: str) -> list[str]:
        """Paths the sandbox needs that its host uid cannot reach (see ``_enter.py``)."""
        if self.host_uid is None:
            return []
        runtime = self.runtime
        needed = [runtime.base_prefix, os.path.dirname(runtime.executable), sys.prefix]
        needed += [*runtime.site_packages, *extra, *(str(p) for p in self.packages.values())]
        uid = self.host_uid
        return sorted({p for p in needed if blocking_ancestor(p, uid, uid) is not None})

    async def open_session(
        self,
        *,
        allowed_hosts: Sequence[str],
        env: Mapping[str, str] | None = None,
        limits: SandboxLimits | None = None,
    ) -> LocalSession:
        """Open a session; see ``SandboxBackend.open_session``.

        Raises:
            SandboxUnavailableError: The isolation asked for cannot run here.
            ValueError: A bad allowed host or environment variable.
        """
        allow = AllowList.parse(allowed_hosts)
        extra = check_extra_env(env)
        isolation = await asyncio.to_thread(lambda: self.isolation)
        session = LocalSession(
            sandbox=self,
            isolation=isolation,
            allow=allow,
            extra_env=extra,
            limits=limits or SandboxLimits(),
        )
        await asyncio.to_thread(session._prepare)
        return session


class LocalSession(SessionBase):
    """One task run's sandbox: a working directory, a proxy, limits; see ``SandboxSession``.

    Attributes:
        workdir: The working directory as the code sees it (``/sandbox`` with bubblewrap).
        isolation: ``bwrap`` or ``rlimit``.
        host_workdir: The same directory on the host (removed by ``close()``).
        limits: The limits of every call.
    """

    def __init__(
        self,
        *,
        sandbox: LocalSandbox,
        isolation: Literal["bwrap", "rlimit"],
        allow: AllowList,
        extra_env: dict[str, str],
        limits: SandboxLimits,
    ) -> None:
        self._sandbox = sandbox
        self.isolation = isolation
        self.limits = limits
        root = str(sandbox.temp_root) if sandbox.temp_root else None
        self._base = Path(tempfile.mkdtemp(prefix="dgeval-sandbox-", dir=root))
        self._control = self._base / "ctl"
        self.host_workdir = self._base / "work"
        self.workdir = WORKDIR if isolation == "bwrap" else str(self.host_workdir)
        self._proxy = AllowListProxy(str(self._control / "proxy.sock"), allow)
        self._extra_env = extra_env
        self._processes: set[asyncio.subprocess.Process] = set()
        self._cells = itertools.count(1)
        self._closed = False
        self._expose: list[str] = []

    def _prepare(self) -> None:
        try:
            for directory in (self._control / "code", self._control / "etc", self.host_workdir):
                directory.mkdir(parents=True)
            shutil.copyfile(LAUNCHER_PATH, self._control / "launcher.py")
            write_command_wrappers(self._control / "bin", self._sandbox.commands)
            (self._control / "pylib").mkdir()
            for name, package in self._sandbox.packages.items():
                if self.isolation == "bwrap":
                    (self._control / "pylib" / name).mkdir()  # a mount point
                else:
                    (self._control / "pylib" / name).symlink_to(package)
            etc = self._control / "etc"
            uid = SANDBOX_UID
            (etc / "passwd").write_text(
                f"sandbox:x:{uid}:{uid}:sandbox:{WORKDIR}:/bin/sh\n"
                "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
            )
            (etc / "group").write_text(f"sandbox:x:{uid}:\nnogroup:x:65534:\n")
            (etc / "hosts").write_text("127.0.0.1 localhost sandbox\n::1 localhost\n")
            runtime = self._sandbox.runtime
            (self._control / "pyvenv.cfg").write_text(
                f"home = {os.path.dirname(runtime.executable)}\n"
                "include-system-site-packages = false\n"
                f"version = {sys.version.split()[0]}\n"
            )
            host_uid = self._sandbox.host_uid
            if host_uid is not None:
                # Only the working directory belongs to the sandbox user; the rest stays root's.
                os.chown(self._base, host_uid, host_uid)
                os.chown(self.host_workdir, host_uid, host_uid)
                self._expose = self._sandbox.exposed_paths(str(self._base))
            self._proxy.start()
        except BaseException:
            shutil.rmtree(self._base, ignore_errors=True)
            raise

    def _layout(self) -> tuple[list[str], str, dict[str, str], Path]:
        """The argv prefix, control dir as seen inside, environment and cwd of a call."""
        sandbox = self._sandbox
        if self.isolation == "bwrap":
            control = CONTROL_DIR
            prefix = bwrap_argv(
                bwrap=shutil.which(sandbox.bwrap) or sandbox.bwrap,
                runtime=sandbox.runtime,
                control=self._control,
                workdir=self.host_workdir,
                limits=self.limits,
                packages=sandbox.packages,
            )
            prefix = [*enter_prefix(sandbox.host_uid, self._expose), *prefix]
            prefix += ["--", f"{VENV_DIR}/bin/python"]
            path = f"{control}/bin:{VENV_DIR}/bin:/usr/local/bin:/usr/bin:/bin"
        else:
            control = str(self._control)
            prefix = [*enter_prefix(sandbox.host_uid, self._expose), sys.executable]
            path = f"{control}/bin:{os.path.dirname(sys.executable)}:/usr/local/bin:/usr/bin:/bin"
        env = sandbox_env(
            home=self.workdir,
            path=path,
            extra=self._extra_env,
            pythonpath=f"{control}/pylib" if sandbox.packages else None,
        )
        return prefix, control, env, self.host_workdir

    async def run_python(self, code: str) -> ExecResult:
        """Run ``code`` as a Python program in the working directory."""
        self._check_open()
        cell = f"cell_{next(self._cells)}.py"
        path = self._control / "code" / cell
        try:
            path.write_text(code, encoding="utf-8")
        except (OSError, UnicodeEncodeError) as exc:
            return _failed(f"could not write the program: {exc}")
        _, control, _, _ = self._layout()
        try:
            return await self._execute(["python", f"{control}/code/{cell}"])
        finally:
            path.unlink(missing_ok=True)

    async def run_command(self, argv: Sequence[str]) -> ExecResult:
        """Run one command without a shell; ``argv[0]`` is looked up on the sandbox's PATH."""
        self._check_open()
        if isinstance(argv, str) or not argv:
            return _failed("a command is a non-empty list of arguments", exit_code=2)
        if not all(isinstance(arg, str) and "\0" not in arg for arg in argv):
            return _failed("command arguments must be strings without NUL bytes", exit_code=2)
        return await self._execute(list(argv))

    async def close(self) -> None:
        """Kill running calls, stop the proxy and delete the session's directories."""
        if self._closed:
            return
        self._closed = True
        for process in list(self._processes):
            _kill_group(process)
        for process in list(self._processes):
            with contextlib.suppress(Exception):
                await asyncio.wait_for(process.wait(), timeout=5)
        await asyncio.to_thread(self._proxy.stop)
        await asyncio.to_thread(shutil.rmtree, self._base, True)

    async def _execute(self, command: list[str]) -> ExecResult:
        limits = self.limits
        prefix, control, env, cwd = self._layout()
        started = time.perf_counter()
        # Our own pipes, not asyncio's PIPE: in Python 3.11 Process.wait() only returns once
        # its pipes are drained and closed, which a stray writer could delay forever.
        status_read, status_write = os.pipe()
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        parent_ends = [status_read, out_read, err_read]
        options = launcher_args(
            limits=limits, status_fd=status_write, proxy=f"{control}/proxy.sock", wall=True
        )
        argv = [*prefix, "-I", "-S", f"{control}/launcher.py", *options, *command]
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=out_write,
                stderr=err_write,
                env=env,
                cwd=cwd,
                pass_fds=(status_write,),
                start_new_session=True,
            )
        except OSError as exc:
            for fd in parent_ends:
                os.close(fd)
            return _failed(f"could not start the sandbox: {exc}")
        finally:
            for fd in (status_write, out_write, err_write):
                os.close(fd)
        self._processes.add(process)
        stdout = _PipeReader(out_read, limits)
        stderr = _PipeReader(err_read, limits)
        try:
            return await self._supervise(process, status_read, stdout, stderr, started, command[0])
        except Exception as exc:  # never let a sandbox problem escape as an exception
            _kill_group(process)
            return _failed(f"{type(exc).__name__}: {exc}")
        finally:
            self._processes.discard(process)
            stdout.close()
            stderr.close()
            os.close(status_read)

    async def _supervise(
        self,
        process: asyncio.subprocess.Process,
        status_fd: int,
        stdout: _PipeReader,
        stderr: _PipeReader,
        started: float,
        program: str,
    ) -> ExecResult:
        limits = self.limits
        waiter = asyncio.ensure_future(process.wait())
        overflowed = asyncio.ensure_future(_first_overflow(stdout, stderr))
        await asyncio.wait(
            {waiter, overflowed},
            timeout=limits.wall_seconds + _BACKSTOP_SECONDS,
            return_when=asyncio.FIRST_COMPLETED,
        )
        overflowed.cancel()
        overflow = stdout.overflow.is_set() or stderr.overflow.is_set()
        backstop = not waiter.done() and not overflow
        if not waiter.done():
            _kill_group(process)
        await waiter
        # Output still in flight: read it, but never wait long for a writer that lingers.
        await asyncio.wait({stdout.eof, stderr.eof}, timeout=_DRAIN_SECONDS)
        status = _read_status(status_fd)
        duration_ms = (time.perf_counter() - started) * 1000
        if self._closed:
            failure: str | None = "the session was closed during the call"
        elif status is None and not backstop and not overflow:
            failure = f"the launcher ended without a report: {stderr.capture.tail.strip()[-500:]}"
        else:
            failure = None
        status = status or LauncherStatus()
        return build_result(
            stdout=stdout.capture,
            stderr=stderr.capture,
            duration_ms=duration_ms,
            limits=limits,
            exit_code=status.exit_code,
            signal_number=status.signal,
            cpu_seconds=status.cpu_seconds,
            timed_out=backstop or status.timed_out,
            output_overflow=overflow,
            spawn_error=status.spawn_error(program),
            failure=failure,
        )


class _PipeReader:
    """Reads one output pipe on the event loop into an ``OutputCapture``, to its end."""

    def __init__(self, fd: int, limits: SandboxLimits) -> None:
        self.fd = fd
        self.capture = OutputCapture(limits.max_output_chars, limits.kill_output_chars)
        self.overflow = asyncio.Event()
        self.eof: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._loop = asyncio.get_running_loop()
        os.set_blocking(fd, False)
        self._loop.add_reader(fd, self._on_readable)
        self._open = True

    def _on_readable(self) -> None:
        try:
            data = os.read(self.fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._stop()
            return
        # Past the kill threshold the call is ended, but reading goes on (and only counts),
        # so the writer is never blocked on a full pipe.
        if not self.capture.feed(data):
            self.overflow.set()

    def _stop(self) -> None:
        if self._open:
            self._loop.remove_reader(self.fd)
            self._open = False
        if not self.eof.done():
            self.eof.set_result(None)

    def close(self) -> None:
        """Stop reading and close the pipe, whether or not its end was reached."""
        self._stop()
        os.close(self.fd)


async def _first_overflow(*readers: _PipeReader) -> None:
    waits = [asyncio.ensure_future(reader.overflow.wait()) for reader in readers]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()


def _kill_group(process: asyncio.subprocess.Process) -> None:
    # The call runs in its own session (start_new_session); with bubblewrap, killing bwrap also
    # tears down the PID namespace, which takes every sandboxed process with it.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def _read_status(fd: int) -> LauncherStatus | None:
    os.set_blocking(fd, False)
    data = b""
    with contextlib.suppress(BlockingIOError):
        while chunk := os.read(fd, 65536):
            data += chunk
    return LauncherStatus.parse(data)


def _failed(reason: str, *, exit_code: int | None = None) -> ExecResult:
    return ExecResult(stdout="", stderr="", exit_code=exit_code, duration_ms=0.0, reason=reason)
