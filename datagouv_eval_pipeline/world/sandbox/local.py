"""The local sandbox backend: bubblewrap namespaces (or, on request, rlimits only), no Docker.

Every call is a fresh process with new user, mount, PID, network, IPC and UTS namespaces. By
default (``warm``) it is forked from one zygote per backend, which runs inside ``bwrap`` (whose
cgroup namespace the calls share) with the libraries already imported (``_zygote.py``); with
``warm=False`` each call is a process tree started by its own ``bwrap`` and a new interpreter.
Inside, the program sees a read-only ``/usr``, the Python runtime and the project's
site-packages (read-only), a generated ``/etc/passwd``, a private ``/tmp``, the session's
working directory at ``/sandbox`` (the only writable place that outlives the call) and nothing
else of the host: no project directory, no home, no ``/work``. It runs as an unprivileged user
with no capabilities, in an environment built from scratch. Its only network route is the
session's allow-listing proxy (see ``proxy.py``), reached through a Unix socket.

The ``rlimit`` mode, for hosts where bubblewrap cannot run, keeps the scrubbed environment, the
limits, the process-tree kill and the proxy variables, but shares the host's filesystem view and
network: it is weaker, and it has to be chosen explicitly (``docs/sandbox.md``).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import psutil  # type: ignore[import-untyped]  # no stubs in the lock

from datagouv_eval_pipeline.world.front import AllowList, ServedHosts
from datagouv_eval_pipeline.world.sandbox import _common
from datagouv_eval_pipeline.world.sandbox._enter import blocking_ancestor
from datagouv_eval_pipeline.world.sandbox._zygote import SESSION_MOUNT, SESSIONS_RO, SESSIONS_RW
from datagouv_eval_pipeline.world.sandbox._zygote_client import (
    ZygoteClient,
    ZygoteError,
    ZygoteUnsupportedError,
)
from datagouv_eval_pipeline.world.sandbox.base import (
    ExecResult,
    SandboxLimits,
    SandboxUnavailableError,
)

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
_DISK_POLL_SECONDS = 0.1
_TOP_LEVEL_DIRS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_HOST_ETC = (
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/localtime",
    "/etc/mime.types",
)
_BWRAP_PATH = f"{CONTROL_DIR}/bin:{VENV_DIR}/bin:/usr/local/bin:/usr/bin:/bin"
DEFAULT_PRELOAD = ("httpx", "datagouv")
"""What the zygote imports before serving: the HTTP client agent code nearly always uses, and
the ``datagouv`` client library (used by the ``datagouv`` command and python-sdk code)."""
DEFAULT_PRELOAD_LATER = ("requests",)
"""What the zygote imports once it serves, while idle."""
ZYGOTE_LINGER_SECONDS = 3.0
"""How long a zygote outlives the last session that used it."""
_probe_cache: dict[str, str | None] = {}
_LIVE_SANDBOXES: weakref.WeakSet[LocalSandbox] = weakref.WeakSet()


@atexit.register
def _stop_lingering_zygotes() -> None:
    for sandbox in list(_LIVE_SANDBOXES):
        sandbox.shutdown()


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
    workdir: Path | None,
    limits: SandboxLimits,
    packages: Mapping[str, Path],
    sessions: Path | None = None,
) -> list[str]:
    """The ``bwrap`` arguments (up to and excluding the command).

    With ``workdir``, for one call (the per-call mode): it is mounted at ``/sandbox``. With
    ``sessions`` instead, for the zygote: the directory holding every session is mounted twice
    (read-write and read-only) where the zygote's calls pick their own session from, and
    ``/sandbox`` is left as an empty mount point.
    """
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
        # A package given through ``packages`` replaces the installed one (from a wheel, the
        # whole project), which is hidden under an empty directory.
        for name in packages:
            if os.path.isdir(os.path.join(runtime.site_packages[0], name)):
                argv += ["--tmpfs", f"{lib}/{name}", "--remount-ro", f"{lib}/{name}"]
    argv += ["--symlink", runtime.executable, f"{VENV_DIR}/bin/python"]
    argv += ["--symlink", "python", f"{VENV_DIR}/bin/python3"]
    argv += ["--ro-bind", str(control), CONTROL_DIR]
    for name, package in packages.items():
        argv += ["--ro-bind", str(package), f"{CONTROL_DIR}/pylib/{name}"]
    if sessions is not None:
        argv += ["--bind", str(sessions), SESSIONS_RW, "--ro-bind", str(sessions), SESSIONS_RO]
        argv += ["--dir", WORKDIR, "--chdir", WORKDIR]
        # The zygote makes each call's user namespace, then forbids any further one itself.
    else:
        argv += ["--bind", str(workdir), WORKDIR, "--chdir", WORKDIR]
        # The launcher gives the call its own PID namespace and /tmp, then forbids any further
        # user namespace (``isolate``: bubblewrap's ``--disable-userns`` would forbid its own).
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
    return [sys.executable, "-I", "-S", str(_common.ENTER_PATH), *ids]


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


SANDBOX_DIR_PREFIX = "dgeval-sandbox-"
_OWNER_FILE = ".owner"
_swept_roots: set[str] = set()


def make_sandbox_dir(temp_root: Path | None) -> Path:
    """Create a session or cell directory that names its owner process (for the next sweep)."""
    path = Path(tempfile.mkdtemp(prefix=SANDBOX_DIR_PREFIX, dir=temp_root))
    owner = psutil.Process()
    (path / _OWNER_FILE).write_text(f"{owner.pid} {owner.create_time()}", encoding="utf-8")
    return path


def sweep_stale_sandbox_dirs(temp_root: Path | None) -> list[Path]:
    """Remove the sandbox directories whose owner process is gone (left by a killed run).

    Returns:
        The directories removed.
    """
    root = Path(temp_root) if temp_root is not None else Path(tempfile.gettempdir())
    removed = []
    for path in root.glob(f"{SANDBOX_DIR_PREFIX}*"):
        try:
            pid_text, started_text = (path / _OWNER_FILE).read_text(encoding="utf-8").split()
            pid, started = int(pid_text), float(started_text)
        except (OSError, ValueError):
            continue  # not ours, or being created right now: leave it
        try:
            alive = abs(psutil.Process(pid).create_time() - started) < 1.0
        except psutil.Error:
            alive = False
        if not alive:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def write_control_dir(control: Path, sandbox: LocalSandbox, *, bwrap: bool) -> None:
    """Fill a control directory (mounted read-only at ``/opt/sandbox`` with bubblewrap).

    It holds the command wrappers, the mount points (or, in rlimit mode, links) of the
    ``python_packages``, the generated ``/etc`` files and the venv's ``pyvenv.cfg``.
    """
    for directory in (control / "code", control / "etc"):
        directory.mkdir(parents=True)
    _common.write_command_wrappers(control / "bin", sandbox.commands)
    (control / "pylib").mkdir()
    for name, package in sandbox.packages.items():
        if bwrap:
            (control / "pylib" / name).mkdir()  # a mount point
        else:
            (control / "pylib" / name).symlink_to(package)
    etc = control / "etc"
    uid = SANDBOX_UID
    (etc / "passwd").write_text(
        f"sandbox:x:{uid}:{uid}:sandbox:{WORKDIR}:/bin/sh\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
    )
    (etc / "group").write_text(f"sandbox:x:{uid}:\nnogroup:x:65534:\n")
    (etc / "hosts").write_text("127.0.0.1 localhost sandbox\n::1 localhost\n")
    runtime = sandbox.runtime
    (control / "pyvenv.cfg").write_text(
        f"home = {os.path.dirname(runtime.executable)}\n"
        "include-system-site-packages = false\n"
        f"version = {sys.version.split()[0]}\n"
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
        warm: In bwrap mode, run calls through one warm zygote per backend (``_zygote.py``:
            the interpreter and ``preload`` imported once, a forked, namespaced process per
            call); False starts ``bwrap`` and a new interpreter for every call.
        preload: Modules the zygote imports before serving calls (the command modules are
            added), so that calls find them loaded.
        preload_later: Modules it imports afterwards, one at a time while no call runs.
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
        warm: bool = True,
        preload: Sequence[str] = DEFAULT_PRELOAD,
        preload_later: Sequence[str] = DEFAULT_PRELOAD_LATER,
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
        self.commands = _common.check_commands(commands or {})
        self.packages: dict[str, Path] = {}
        for package in python_packages:
            package = Path(package).resolve()
            if not (package / "__init__.py").is_file():
                raise ValueError(f"sandbox python package {package}: no __init__.py there")
            if package.name in self.packages:
                raise ValueError(f"sandbox python package {package.name!r} given twice")
            self.packages[package.name] = package
        self.warm = warm
        self.warm_problem: str | None = None
        self.preload = [*preload, *self.commands.values()]
        self.preload_later = list(preload_later)
        self._zygote: ZygoteClient | None = None
        self._zygote_lock = threading.Lock()
        self._zygote_users = 0
        self._linger: threading.Timer | None = None
        self._cell: Path | None = None
        self._cell_expose: list[str] = []
        if str(temp_root) not in _swept_roots:  # once per process and root: the next start
            _swept_roots.add(str(temp_root))
            sweep_stale_sandbox_dirs(temp_root)

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
        served: ServedHosts | None = None,
    ) -> LocalSession:
        """Open a session; see ``SandboxBackend.open_session``.

        Raises:
            SandboxUnavailableError: The isolation asked for cannot run here.
            ValueError: A bad allowed host or environment variable.
        """
        allow = AllowList.parse(allowed_hosts)
        extra = _common.check_extra_env(env)
        isolation = await asyncio.to_thread(lambda: self.isolation)
        cell = None
        if isolation == "bwrap" and self.warm:
            cell = await asyncio.to_thread(self._attach)
        try:
            session = LocalSession(
                sandbox=self,
                isolation=isolation,
                allow=allow,
                served=served,
                extra_env=extra,
                limits=limits or SandboxLimits(),
                cell=cell,
            )
            await asyncio.to_thread(session._prepare)
        except BaseException:
            if cell is not None:
                await asyncio.to_thread(self._detach)
            raise
        return session

    # ------------------------------------------------------------------ the warm zygote

    def _attach(self) -> Path:
        """A session starts using the zygote: prepare the shared directory; its path."""
        with self._zygote_lock:
            if self._cell is None:
                self._cell = self._prepare_cell()
            if self._linger is not None:
                self._linger.cancel()
                self._linger = None
            if self._zygote is None:
                # Started now, waited for at the first call: its start-up overlaps the
                # agent's first model request.
                self._zygote = self._start_zygote(self._cell)
                _LIVE_SANDBOXES.add(self)
            self._zygote_users += 1
            return self._cell

    def _detach(self) -> None:
        """A session is done with the zygote; after the last one, it is stopped a moment later.

        The short delay lets back-to-back sessions (a runner starting the next task, tests)
        reuse it instead of starting a new one.
        """
        with self._zygote_lock:
            self._zygote_users = max(0, self._zygote_users - 1)
            if self._zygote_users > 0:
                return
            if self._linger is not None:
                self._linger.cancel()
            self._linger = threading.Timer(ZYGOTE_LINGER_SECONDS, self._stop_if_unused)
            self._linger.daemon = True
            self._linger.start()

    def _stop_if_unused(self) -> None:
        with self._zygote_lock:
            if self._zygote_users > 0:
                return
            zygote, cell = self._zygote, self._cell
            self._zygote, self._cell, self._linger = None, None, None
        _LIVE_SANDBOXES.discard(self)
        if zygote is not None:
            zygote.stop()
        if cell is not None:
            shutil.rmtree(cell, ignore_errors=True)

    def shutdown(self) -> None:
        """Stop the zygote now and remove its files (sessions still open fail their calls).

        Not needed in normal use: it stops by itself shortly after the last session closes,
        and at interpreter exit.
        """
        with self._zygote_lock:
            self._zygote_users = 0
            if self._linger is not None:
                self._linger.cancel()
        self._stop_if_unused()

    def _live_zygote(self) -> ZygoteClient:
        """The running zygote, started (or restarted, if it ended) when needed.

        Raises:
            ZygoteError: It cannot start.
        """
        with self._zygote_lock:
            if self._cell is None:
                raise ZygoteError("no session is open")
            if self._zygote is None or not self._zygote.alive:
                if self._zygote is not None:
                    self._zygote.stop()
                self._zygote = self._start_zygote(self._cell)
            zygote = self._zygote
            zygote.wait_ready()
            return zygote

    def _prepare_cell(self) -> Path:
        cell = make_sandbox_dir(self.temp_root)
        try:
            control = cell / "ctl"
            write_control_dir(control, self, bwrap=True)
            for name in ("_launcher.py", "_zygote.py"):
                shutil.copyfile(Path(__file__).with_name(name), control / name)
            (control / "session").mkdir()  # where a call's own session directory appears
            (cell / "sessions").mkdir(mode=0o755)
            if self.host_uid is not None:
                os.chown(cell, self.host_uid, self.host_uid)
                self._cell_expose = self.exposed_paths(str(cell))
        except BaseException:
            shutil.rmtree(cell, ignore_errors=True)
            raise
        return cell

    def _start_zygote(self, cell: Path) -> ZygoteClient:
        control = cell / "ctl"
        prefix = bwrap_argv(
            bwrap=shutil.which(self.bwrap) or self.bwrap,
            runtime=self.runtime,
            control=control,
            workdir=None,
            limits=SandboxLimits(),
            packages=self.packages,
            sessions=cell / "sessions",
        )
        config = json.dumps({"preload": self.preload, "later": self.preload_later})
        argv = [*enter_prefix(self.host_uid, self._cell_expose), *prefix, "--"]
        argv += [f"{VENV_DIR}/bin/python", f"{CONTROL_DIR}/_zygote.py", "{fd}", config]
        env = _common.sandbox_env(
            home=WORKDIR,
            path=_BWRAP_PATH,
            extra={},
            pythonpath=f"{CONTROL_DIR}/pylib" if self.packages else None,
        )
        return ZygoteClient(argv, env, cell / "zygote.log")


class LocalSession(_common.SessionBase):
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
        served: ServedHosts | None,
        extra_env: dict[str, str],
        limits: SandboxLimits,
        cell: Path | None = None,
    ) -> None:
        self._sandbox = sandbox
        self.isolation = isolation
        self.limits = limits
        self._cell = cell
        if cell is not None:
            # Warm mode: the session's directories sit in the zygote's shared directory.
            self._base = Path(tempfile.mkdtemp(prefix="s-", dir=cell / "sessions"))
        else:
            self._base = make_sandbox_dir(sandbox.temp_root)
        self._control = self._base / "ctl"
        self.host_workdir = self._base / "work"
        self.workdir = WORKDIR if isolation == "bwrap" else str(self.host_workdir)
        self._proxy = _common.session_proxy(self._control, allow, served)
        self._extra_env = extra_env
        self._processes: set[asyncio.subprocess.Process] = set()
        self._warm_calls: dict[int, ZygoteClient] = {}
        self._cells = itertools.count(1)
        self._closed = False
        self._expose: list[str] = []

    def _prepare(self) -> None:
        try:
            # Also in warm mode: a session can fall back to per-call bwrap (see _execute_warm).
            write_control_dir(self._control, self._sandbox, bwrap=self.isolation == "bwrap")
            shutil.copyfile(_common.LAUNCHER_PATH, self._control / "launcher.py")
            self.host_workdir.mkdir()
            if self._cell is not None:
                os.chmod(self._base, 0o755)  # the zygote's uid reaches it through the cell
            host_uid = self._sandbox.host_uid
            if host_uid is not None:
                # Only the working directory belongs to the sandbox user; the rest stays root's.
                if self._cell is None:
                    os.chown(self._base, host_uid, host_uid)
                self._expose = self._sandbox.exposed_paths(str(self._base))
                os.chown(self.host_workdir, host_uid, host_uid)
            _common.start_proxy(self._proxy, self._control)
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
            path = _BWRAP_PATH
        else:
            control = str(self._control)
            prefix = [*enter_prefix(sandbox.host_uid, self._expose), sys.executable]
            path = f"{control}/bin:{os.path.dirname(sys.executable)}:/usr/local/bin:/usr/bin:/bin"
        env = _common.sandbox_env(
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
        try:
            if self._cell is not None and self._sandbox.warm:
                result = await self._execute_warm("python", f"{SESSION_MOUNT}/code/{cell}", [])
                if result is not None:
                    return result
            _, control, _, _ = self._layout()
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
        if self._cell is not None and self._sandbox.warm:
            module = self._sandbox.commands.get(argv[0])
            if module is not None:  # a command of ours: ``python -m MODULE``, in the warm process
                result = await self._execute_warm("module", module, list(argv))
            else:
                result = await self._execute_warm("exec", None, list(argv))
            if result is not None:
                return result
        return await self._execute(list(argv))

    async def close(self) -> None:
        """Kill running calls, stop the proxy and delete the session's directories."""
        if self._closed:
            return
        self._closed = True
        for process in list(self._processes):
            _kill_group(process)
        for call_id, zygote in list(self._warm_calls.items()):
            zygote.kill([call_id])
        for process in list(self._processes):
            with contextlib.suppress(Exception):
                await asyncio.wait_for(process.wait(), timeout=5)
        for _ in range(100):  # the calls report back once the zygote has ended them
            if not self._warm_calls:
                break
            await asyncio.sleep(0.05)
        await asyncio.to_thread(self._proxy.stop)
        await asyncio.to_thread(shutil.rmtree, self._base, True)
        if self._cell is not None:
            await asyncio.to_thread(self._sandbox._detach)

    async def _execute_warm(
        self, mode: str, target: str | None, argv: list[str]
    ) -> ExecResult | None:
        """Run one call through the zygote (see ``_zygote.py``).

        None when this host cannot give calls their own namespaces from the zygote: the
        backend then uses per-call bwrap from now on, and the caller runs the call that way.
        """
        limits = self.limits
        env = _common.sandbox_env(
            home=WORKDIR,
            path=_BWRAP_PATH,
            extra=self._extra_env,
            pythonpath=f"{CONTROL_DIR}/pylib" if self._sandbox.packages else None,
        )
        request = {
            "session": self._base.name,
            "mode": mode,
            "target": target,
            "argv": argv,
            "env": env,
            "wall": limits.wall_seconds,
            "tmp_bytes": limits.tmp_mb * 1024 * 1024,
            "tmp_inodes": limits.max_files,
            "rlimits": _common.launcher_rlimits(limits),
            "proxy": True,
        }
        before = await asyncio.to_thread(file_states, self.host_workdir)
        started = time.perf_counter()
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        try:
            zygote = self._sandbox._zygote
            if zygote is None or not zygote.ready:
                zygote = await asyncio.to_thread(self._sandbox._live_zygote)
            self._check_open()
            call_id, future = zygote.submit(request, [out_write, err_write])
        except (ZygoteError, RuntimeError) as exc:
            os.close(out_read)
            os.close(err_read)
            if isinstance(exc, ZygoteUnsupportedError):
                self._sandbox.warm = False
                self._sandbox.warm_problem = str(exc)
                return None
            if self._closed:
                return _failed("sandbox failure: the session was closed during the call")
            return _failed(f"sandbox failure: {exc}")
        finally:
            os.close(out_write)
            os.close(err_write)
        self._warm_calls[call_id] = zygote
        call = _Call(
            _PipeReader(out_read, limits),
            _PipeReader(err_read, limits),
            started,
            before,
            argv[0] if argv else "python",
        )
        try:
            return await self._supervise_warm(zygote, call_id, future, call)
        except Exception as exc:  # never let a sandbox problem escape as an exception
            zygote.kill([call_id])
            return _failed(f"{type(exc).__name__}: {exc}")
        finally:
            if not future.done():  # cancelled by our caller: the call must not run on
                zygote.kill([call_id])
            self._warm_calls.pop(call_id, None)
            call.close()

    async def _supervise_warm(
        self,
        zygote: ZygoteClient,
        call_id: int,
        future: concurrent.futures.Future[dict[str, Any]],
        call: _Call,
    ) -> ExecResult:
        waiter = asyncio.wrap_future(future)
        stop = await _until_end_or_overflow(waiter, call, self.limits, self.host_workdir)
        backstop = False
        if not waiter.done():
            zygote.kill([call_id])
            try:
                await asyncio.wait_for(asyncio.shield(waiter), timeout=_BACKSTOP_SECONDS)
            except TimeoutError:
                # The zygote did not end the call: it is broken, and restarting it kills
                # every call it runs (the next call starts a new one).
                backstop = stop is None
                await asyncio.to_thread(zygote.stop)
        raw: dict[str, Any] | None
        try:
            raw = await waiter
        except ZygoteError:
            raw = None
        status = None if raw is None else _common.LauncherStatus.parse(json.dumps(raw).encode())

        def failure() -> str | None:
            if raw is not None and isinstance(raw.get("failure"), str):
                return str(raw["failure"])
            if status is None and not backstop and stop is None:
                return f"the sandbox ended without a report: {zygote.log_tail()[-500:]}"
            return None

        return await self._result(call, stop, status, backstop, failure)

    async def _execute(self, command: list[str]) -> ExecResult:
        limits = self.limits
        prefix, control, env, cwd = self._layout()
        before = await asyncio.to_thread(file_states, self.host_workdir)
        started = time.perf_counter()
        # Our own pipes, not asyncio's PIPE: in Python 3.11 Process.wait() only returns once
        # its pipes are drained and closed, which a stray writer could delay forever.
        status_read, status_write = os.pipe()
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        parent_ends = [status_read, out_read, err_read]
        options = _common.launcher_args(
            limits=limits, status_fd=status_write, proxy=f"{control}/proxy.sock", wall=True
        )
        if self.isolation == "bwrap":
            # Its init is the launcher, not bubblewrap's (which the program could ptrace), and
            # its /tmp has an inode cap.
            inodes = limits.max_files
            options.insert(0, f"isolate={limits.tmp_mb * 1024 * 1024}:{inodes}")
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
        call = _Call(
            _PipeReader(out_read, limits),
            _PipeReader(err_read, limits),
            started,
            before,
            command[0],
        )
        try:
            return await self._supervise(process, status_read, call)
        except Exception as exc:  # never let a sandbox problem escape as an exception
            _kill_group(process)
            return _failed(f"{type(exc).__name__}: {exc}")
        finally:
            self._processes.discard(process)
            call.close()
            os.close(status_read)

    async def _supervise(
        self,
        process: asyncio.subprocess.Process,
        status_fd: int,
        call: _Call,
    ) -> ExecResult:
        waiter = asyncio.ensure_future(_exit_or_report(process, status_fd))
        stop = await _until_end_or_overflow(waiter, call, self.limits, self.host_workdir)
        backstop = not waiter.done() and stop is None
        if process.returncode is None:
            # Past a limit, or the launcher reported (the call is over, its processes are
            # gone): bubblewrap's own PID 1 may be held stopped by a ptrace from the program,
            # so it is not waited for.
            _kill_group(process)
        waiter.cancel()
        await process.wait()
        # The launcher is gone: its report, if it wrote one, is all in the pipe.
        status = _read_status(status_fd)

        def failure() -> str | None:
            if status is None and not backstop and stop is None:
                tail = call.stderr.capture.tail.strip()[-500:]
                return f"the launcher ended without a report: {tail}"
            return None

        return await self._result(call, stop, status, backstop, failure)

    async def _result(
        self,
        call: _Call,
        stop: Literal["output", "disk"] | None,
        status: _common.LauncherStatus | None,
        backstop: bool,
        failure: Callable[[], str | None],
    ) -> ExecResult:
        """The result of a call that is over, whichever way it ran (zygote or launcher).

        Reads the output still in flight, removes what a call past the disk limit wrote, and
        names the failure (``failure()`` is asked once the output is read).
        """
        # Output still in flight: read it, but never wait long for a writer that lingers.
        await asyncio.wait({call.stdout.eof, call.stderr.eof}, timeout=_DRAIN_SECONDS)
        duration_ms = (time.perf_counter() - call.started) * 1000
        if stop == "disk":
            await asyncio.to_thread(remove_changed_since, self.host_workdir, call.before)
        return _launcher_result(
            call.stdout,
            call.stderr,
            self.limits,
            duration_ms,
            status,
            backstop=backstop,
            overflow=stop == "output",
            disk_full=stop == "disk",
            program=call.program,
            failure="the session was closed during the call" if self._closed else failure(),
        )


@dataclass
class _Call:
    """One call under way: its output pipes, when it started, the files before it, its program."""

    stdout: _PipeReader
    stderr: _PipeReader
    started: float
    before: FileStates
    program: str

    def close(self) -> None:
        """Stop reading both pipes."""
        self.stdout.close()
        self.stderr.close()


class _PipeReader:
    """Reads one output pipe on the event loop into an ``_common.OutputCapture``, to its end."""

    def __init__(self, fd: int, limits: SandboxLimits) -> None:
        self.fd = fd
        self.capture = _common.OutputCapture(limits.max_output_chars, limits.kill_output_chars)
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


def directory_bytes(root: Path) -> int:
    """Bytes a directory tree occupies on disk (allocated blocks; symlinks not followed)."""
    return directory_usage(root)[0]


def directory_usage(root: Path) -> tuple[int, int]:
    """Bytes a directory tree occupies on disk, and its entries (inodes) below ``root``."""
    total = count = 0
    pending = [str(root)]
    while pending:
        try:
            with os.scandir(pending.pop()) as entries:
                for entry in entries:
                    count += 1  # empty files take no block, but an inode each
                    try:
                        total += entry.stat(follow_symlinks=False).st_blocks * 512
                        if entry.is_dir(follow_symlinks=False):
                            pending.append(entry.path)
                    except OSError:
                        continue
        except OSError:
            continue
    return total, count


FileStates = dict[str, tuple[int, int, int]]
"""Each regular file under a directory: its path and (inode, mtime in ns, size); each
subdirectory: its path and (inode, -1, -1)."""


def file_states(root: Path) -> FileStates:
    """The files and directories under ``root`` as they are now (symlinks not followed)."""
    states: FileStates = {}
    for directory, _, files in os.walk(root):
        if directory != str(root):
            with contextlib.suppress(OSError):
                states[directory] = (os.lstat(directory).st_ino, -1, -1)
        for name in files:
            path = os.path.join(directory, name)
            with contextlib.suppress(OSError):
                stat = os.lstat(path)
                states[path] = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
    return states


def remove_changed_since(root: Path, before: FileStates) -> None:
    """Delete the files under ``root`` that are new or changed since ``before`` was taken.

    Compared by inode, mtime and size rather than by clock: file timestamps come from the
    kernel's coarse clock, so a file written just before the call can carry the call's start time.
    New directories go too once empty (a call may make its many inodes directories).
    """
    for directory, _, files in os.walk(root, topdown=False):
        for name in files:
            path = os.path.join(directory, name)
            with contextlib.suppress(OSError):
                stat = os.lstat(path)
                if before.get(path) != (stat.st_ino, stat.st_mtime_ns, stat.st_size):
                    os.unlink(path)
        if directory != str(root) and directory not in before:
            with contextlib.suppress(OSError):
                os.rmdir(directory)


async def _disk_exceeded(workdir: Path, limit_bytes: int, limit_entries: int) -> None:
    """Return once the working directory holds more than ``limit_bytes`` or ``limit_entries``."""
    while True:
        await asyncio.sleep(_DISK_POLL_SECONDS)
        used, entries = await asyncio.to_thread(directory_usage, workdir)
        if used > limit_bytes or entries > limit_entries:
            return


async def _until_end_or_overflow(
    waiter: asyncio.Future[Any],
    call: _Call,
    limits: SandboxLimits,
    workdir: Path,
) -> Literal["output", "disk"] | None:
    """Wait for the call's end, its wall limit (plus a backstop), an output or disk overflow.

    Returns which overflow happened (output, or the working directory past its quota), if any.
    """
    stdout, stderr = call.stdout, call.stderr
    overflowed = asyncio.ensure_future(_first_overflow(stdout, stderr))
    disk_full = asyncio.ensure_future(
        _disk_exceeded(workdir, limits.disk_mb * 1024 * 1024, limits.max_files)
    )
    await asyncio.wait(
        {waiter, overflowed, disk_full},
        timeout=limits.wall_seconds + _BACKSTOP_SECONDS,
        return_when=asyncio.FIRST_COMPLETED,
    )
    overflowed.cancel()
    disk_full.cancel()
    if stdout.overflow.is_set() or stderr.overflow.is_set():
        return "output"
    if disk_full.done() and not disk_full.cancelled():
        return "disk"
    return None


def _launcher_result(
    stdout: _PipeReader,
    stderr: _PipeReader,
    limits: SandboxLimits,
    duration_ms: float,
    status: _common.LauncherStatus | None,
    *,
    backstop: bool,
    overflow: bool,
    disk_full: bool = False,
    program: str,
    failure: str | None,
) -> ExecResult:
    """The call's result from its output and the launcher's report (an empty one when none came).

    ``backstop``: the call outlived its wall limit and was killed from outside.
    """
    status = status or _common.LauncherStatus()
    return _common.build_result(
        stdout=stdout.capture,
        stderr=stderr.capture,
        duration_ms=duration_ms,
        limits=limits,
        exit_code=status.exit_code,
        signal_number=status.signal,
        cpu_seconds=status.cpu_seconds,
        timed_out=backstop or status.timed_out,
        output_overflow=overflow,
        disk_overflow=disk_full,
        spawn_error=status.spawn_error(program),
        failure=failure,
    )


async def _exit_or_report(process: asyncio.subprocess.Process, status_fd: int) -> None:
    """Return when the sandbox's process exits or the launcher's report can be read."""
    loop = asyncio.get_running_loop()
    reported = asyncio.Event()
    loop.add_reader(status_fd, reported.set)
    try:
        exited = asyncio.ensure_future(process.wait())
        report = asyncio.ensure_future(reported.wait())
        await asyncio.wait({exited, report}, return_when=asyncio.FIRST_COMPLETED)
        exited.cancel()
        report.cancel()
    finally:
        loop.remove_reader(status_fd)


def _kill_group(process: asyncio.subprocess.Process) -> None:
    # The call runs in its own session (start_new_session); with bubblewrap, killing bwrap also
    # tears down the PID namespace, which takes every sandboxed process with it.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def _read_status(fd: int) -> _common.LauncherStatus | None:
    os.set_blocking(fd, False)
    data = b""
    with contextlib.suppress(BlockingIOError):
        while chunk := os.read(fd, 65536):
            data += chunk
    return _common.LauncherStatus.parse(data)


def _failed(reason: str, *, exit_code: int | None = None) -> ExecResult:
    return ExecResult(stdout="", stderr="", exit_code=exit_code, duration_ms=0.0, reason=reason)
