"""The warm parent of every call of one local sandbox (bwrap mode): imports once, forks per call.

Standard library only: it runs inside the sandbox's namespace (copied next to ``_launcher.py``,
whose relay it reuses). The backend starts it once per ``LocalSandbox`` inside ``bwrap`` as
``python _zygote.py CONTROL_FD CONFIG_JSON``; it imports the libraries agent code uses (httpx,
the command modules) and then serves requests that arrive on the ``SOCK_SEQPACKET`` socket
``CONTROL_FD``, one JSON object per message:

* ``{"op": "run", "id": N, "session": SID, "mode": "python"|"module"|"exec", "target": ...,
  "argv": [...], "env": {...}, "wall": S, "tmp_bytes": B, "rlimits": {...}, "proxy": bool}``
  with the call's stdout and stderr pipes attached (``SCM_RIGHTS``);
* ``{"op": "kill", "ids": [N, ...]}``.

For each call it answers ``{"id": N, "status": {...}}`` (the launcher's status fields) once the
call is over. A call is a chain of three processes, none of which can reach the zygote:

1. the **call process** forks from the zygote, keeps only its two pipes and a status pipe, and
   enters new user, mount, PID, network, IPC and UTS namespaces. In its mount namespace it binds
   its session's working directory at ``/sandbox`` and its session's control directory
   (program file, proxy socket; read-only) at ``/opt/sandbox/session``, covers the directory of
   all sessions with an empty read-only tmpfs and mounts a fresh ``/tmp``;
2. the **call init** (PID 1 of the new PID namespace) mounts that namespace's ``/proc``, brings
   up the loopback, relays a loopback port to the session's proxy, starts the program and
   reports its status; when it exits, the kernel kills everything left in the namespace;
3. the **program** drops every capability, gets the resource limits, and runs: a Python
   script or a ``-m`` module in this already-warm interpreter, or any other command by ``exec``.

The zygote kills a call at its wall-clock limit (through the call process, which kills the call
init, which takes the PID namespace with it), so the limit does not depend on anything the
program can touch.
"""

from __future__ import annotations

import builtins
import contextlib
import ctypes
import errno
import fcntl
import importlib
import json
import os
import resource
import selectors
import signal
import socket
import struct
import sys
import time
import types
from dataclasses import dataclass, field
from typing import Any

if __package__:
    from datagouv_eval_pipeline.world.sandbox import _launcher
else:  # copied into the sandbox next to _launcher.py
    import _launcher  # type: ignore[import-not-found, no-redef]

SESSIONS_RW = "/run/dgeval/rw"
SESSIONS_RO = "/run/dgeval/ro"
SESSIONS_ROOT = "/run/dgeval"
SESSION_MOUNT = "/opt/sandbox/session"
WORKDIR = "/sandbox"
_MAX_MESSAGE = 1 << 20
_IDLE_SECONDS = 1.0

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUTS = 0x04000000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNET = 0x40000000
_MS_RDONLY = 1
_MS_NOSUID = 2
_MS_NODEV = 4
_MS_NOEXEC = 8
_MS_BIND = 4096
_MS_REC = 16384
_MS_PRIVATE = 1 << 18
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_DUMPABLE = 4
_PR_CAPBSET_DROP = 24
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_CAPABILITY_VERSION_3 = 0x20080522
_SIOCSIFFLAGS = 0x8914
_IFF_UP_LOOPBACK_RUNNING = 0x1 | 0x8 | 0x40
_STATUS_FD = 3

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{what}: {os.strerror(number)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    _check(
        _libc.mount(
            source.encode() if source else None,
            target.encode(),
            fstype.encode() if fstype else None,
            flags,
            data.encode() if data else None,
        ),
        f"mount {target}",
    )


def _close_other_fds(keep: set[int]) -> None:
    for entry in os.listdir("/proc/self/fd"):
        fd = int(entry)
        if fd not in keep:
            with contextlib.suppress(OSError):
                os.close(fd)


def _drop_capabilities() -> None:
    """Leave the program no capability at all, even inside its own user namespace."""
    for cap in range(64):
        if _libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            break  # past the last capability the kernel knows
    _libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = struct.pack("Ii", _CAPABILITY_VERSION_3, 0)
    data = bytes(24)  # two empty {effective, permitted, inheritable} sets
    _check(_libc.capset(header, data), "capset")
    _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


# ------------------------------------------------------------------------------ the program


def _run_python(path: str) -> int:
    """Run a script like ``python PATH`` would, in this interpreter; its exit status."""
    with open(path, encoding="utf-8") as handle:
        source = handle.read()
    main = types.ModuleType("__main__")
    main.__dict__.update({"__file__": path, "__builtins__": builtins, "__cached__": None})
    sys.modules["__main__"] = main
    sys.argv = [path]
    sys.path[0] = os.path.dirname(path)
    code = compile(source, path, "exec")
    exec(code, main.__dict__)
    return 0


def _run_module(module: str, args: list[str]) -> int:
    """Run a module like ``python -m MODULE ARGS`` would, in this interpreter."""
    import runpy

    sys.argv = ["-m", *args]
    sys.path[0] = os.getcwd()
    runpy.run_module(module, run_name="__main__", alter_sys=True)
    return 0


def _finish(run: Any, *args: Any) -> int:
    """Call ``run`` as the interpreter's main program: exit status, traceback, atexit."""
    try:
        status = int(run(*args))
    except SystemExit as exc:
        status = _exit_status(exc)
    except BaseException as exc:
        # Leave out our own frames: the traceback starts at the program's code, as usual.
        trace = exc.__traceback__
        while trace is not None and trace.tb_frame.f_code.co_filename == __file__:
            trace = trace.tb_next
        sys.excepthook(type(exc), exc.with_traceback(trace), trace)
        status = 1
    try:
        import threading

        threading._shutdown()  # type: ignore[attr-defined]  # wait for non-daemon threads
        import atexit

        atexit._run_exitfuncs()
    except SystemExit as exc:
        status = _exit_status(exc)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    return status


def _exit_status(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    with contextlib.suppress(Exception):
        sys.stderr.write(f"{exc.code}\n")
    return 1


def _program(request: dict[str, Any], env: dict[str, str], errors_write: int) -> None:
    """The call's program: no capabilities, the limits, the working directory; never returns."""
    status = 127
    try:
        _close_other_fds({0, 1, 2, errors_write})
        signal.signal(signal.SIGINT, signal.default_int_handler)
        # The init's non-dumpable flag came with the fork: the program itself is ordinary.
        _libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)
        _drop_capabilities()
        os.chdir(WORKDIR)
        os.environ.clear()
        os.environ.update(env)
        for name, (soft, hard) in request["rlimits"].items():
            resource.setrlimit(_launcher._RLIMITS[name], (soft, hard))
        mode = request["mode"]
        if mode == "exec":
            argv = request["argv"]
            os.execvpe(argv[0], argv, env)
        os.close(errors_write)
        if mode == "python":
            status = _finish(_run_python, request["target"])
        else:
            status = _finish(_run_module, request["target"], request["argv"][1:])
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.write(errors_write, str(exc.errno or errno.EIO).encode())
    finally:
        os._exit(status)


# ----------------------------------------------------------------------------- the call init


def _call_init(request: dict[str, Any]) -> None:
    """PID 1 of the call's PID namespace: start the program, relay, reap, report; never returns."""
    report: dict[str, Any] = {"exit_code": None, "signal": None, "timed_out": False}
    try:
        # Not dumpable: the program (same uid, no capability) cannot ptrace this init, which
        # would stop its relay and its report until the wall-clock limit, nor read its memory.
        _check(_libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0), "not dumpable")
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # PID 1 ignores what it does not handle
        _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
        with socket.socket() as sock:
            fcntl.ioctl(
                sock, _SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", _IFF_UP_LOOPBACK_RUNNING)
            )
        # Nothing in the call's namespaces keeps a capability, this init included.
        _drop_capabilities()
        env = dict(request["env"])
        selector = selectors.DefaultSelector()
        if request.get("proxy"):
            relay = _launcher._Relay(selector, f"{SESSION_MOUNT}/proxy.sock")
            url = f"http://127.0.0.1:{relay.port}"
            env.update(dict.fromkeys(_launcher._PROXY_VARS, url))
            env["NO_PROXY"] = env["no_proxy"] = ""
            env.update(_launcher.ca_bundle_env(SESSION_MOUNT))
        errors_read, errors_write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(errors_read)
            _program(request, env, errors_write)
        os.close(errors_write)
        # Only the program writes the call's output: its end is the end of the streams.
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.close(null)
        failed = os.read(errors_read, 64)
        os.close(errors_read)
        if failed:
            report["spawn_errno"] = int(failed)
            report["exit_code"] = 127 if int(failed) == errno.ENOENT else 126
            os.waitpid(pid, 0)
        else:
            _wait_program(pid, selector, report)
        # The call is over: end whatever it left running before reporting, so that the report
        # means nothing of the call is left (the namespace's teardown would kill them anyway).
        with contextlib.suppress(OSError):
            os.kill(-1, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            while True:
                os.wait()
    except Exception as exc:  # reported as a sandbox failure by the backend
        report["failure"] = f"call init: {type(exc).__name__}: {exc}"
    with contextlib.suppress(OSError):
        os.write(_STATUS_FD, (json.dumps(report) + "\n").encode())
    os._exit(0)


def _wait_program(pid: int, selector: selectors.BaseSelector, report: dict[str, Any]) -> None:
    pidfd = os.pidfd_open(pid)
    selector.register(pidfd, selectors.EVENT_READ, None)
    while True:
        # Orphans re-parent to this PID 1: reap them as they end, and the program with them.
        for key, _ in selector.select(0.5):
            if key.data is not None:
                key.data()
        while True:
            try:
                found, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                found = 0
            if not found:
                break
            if found == pid:
                if os.WIFSIGNALED(status):
                    report["signal"] = os.WTERMSIG(status)
                else:
                    report["exit_code"] = os.WEXITSTATUS(status)
                report["cpu_seconds"] = round(usage.ru_utime + usage.ru_stime, 3)
                return


# ----------------------------------------------------------------------------- the call process


def _call_process(request: dict[str, Any], out: int, err: int, status: int) -> None:
    """Enter the call's namespaces, mount its view, start its init and wait; never returns."""
    init_pid = 0

    def stop(*_: object) -> None:
        # Sent by the zygote at the wall-clock limit or on a kill request.
        if init_pid:
            with contextlib.suppress(OSError):
                os.kill(init_pid, signal.SIGKILL)
        else:
            os._exit(1)

    signal.signal(signal.SIGTERM, stop)
    try:
        os.setsid()
        moved = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (out, err, status)]
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(moved[0], 1)
        os.dup2(moved[1], 2)
        os.dup2(moved[2], _STATUS_FD, inheritable=False)
        _close_other_fds({0, 1, 2, _STATUS_FD})
        _enter_namespaces(request)
        # A stop request that comes during the fork waits until the init's pid is known.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        init_pid = os.fork()
        if init_pid == 0:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
            _call_init(request)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        for fd in (1, 2, _STATUS_FD):
            os.close(fd)
        while True:
            try:
                os.waitpid(init_pid, 0)
                break
            except ChildProcessError:
                break
        os._exit(0)
    except BaseException as exc:
        with contextlib.suppress(BaseException):
            failure = {"failure": f"call setup: {type(exc).__name__}: {exc}"}
            os.write(_STATUS_FD, (json.dumps(failure) + "\n").encode())
        os._exit(125)


def _unshare() -> None:
    uid, gid = os.getuid(), os.getgid()
    flags = _CLONE_NEWUSER | _CLONE_NEWNS | _CLONE_NEWPID | _CLONE_NEWNET
    _check(_libc.unshare(flags | _CLONE_NEWIPC | _CLONE_NEWUTS), "unshare")
    # The same uid and gid as the zygote (the sandbox user), and nothing else.
    maps = (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1"))
    for name, text in maps:
        with open(f"/proc/self/{name}", "w") as handle:
            handle.write(text)
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)


def _enter_namespaces(request: dict[str, Any]) -> None:
    _unshare()
    session = request["session"]
    if not session or "/" in session or session.startswith("."):
        raise ValueError(f"bad session name {session!r}")
    _mount(f"{SESSIONS_RW}/{session}/work", WORKDIR, None, _MS_BIND)
    _mount(f"{SESSIONS_RO}/{session}/ctl", SESSION_MOUNT, None, _MS_BIND)
    hidden = _MS_RDONLY | _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
    _mount("tmpfs", SESSIONS_ROOT, "tmpfs", hidden, "size=4k,mode=0555")
    tmp = _MS_NOSUID | _MS_NODEV
    size, inodes = int(request["tmp_bytes"]), int(request.get("tmp_inodes") or 0)
    options = f"size={size},mode=1777" + (f",nr_inodes={inodes}" if inodes > 0 else "")
    _mount("tmpfs", "/tmp", "tmpfs", tmp, options)
    # No user namespace may be created inside the call's (``unshare -Ur`` fails): a nested one
    # would give the program every capability there, and with them the kernel's less-trodden
    # paths. The limit is the call's own namespace's, set while this process holds its caps.
    with open("/proc/sys/user/max_user_namespaces", "w") as handle:
        handle.write("0")


# ----------------------------------------------------------------------------- the zygote


@dataclass
class _Call:
    id: int
    session: str
    pid: int
    pidfd: int
    status_read: int
    deadline: float
    timed_out: bool = False
    answered: bool = False
    output: bytearray = field(default_factory=bytearray)


class Zygote:
    """The request loop; see the module doc."""

    def __init__(self, control: socket.socket, later: list[str] | None = None) -> None:
        self.control = control
        self.later = list(later or [])
        self.last_activity = time.monotonic()
        self.selector = selectors.DefaultSelector()
        self.calls: dict[int, _Call] = {}
        self.selector.register(control, selectors.EVENT_READ, self._on_request)

    def serve(self) -> None:
        """Serve until the backend closes the control socket."""
        while True:
            now = time.monotonic()
            for call in list(self.calls.values()):
                if not call.timed_out and now >= call.deadline:
                    call.timed_out = True
                    self._stop(call)
            deadlines = [c.deadline for c in self.calls.values() if not c.timed_out]
            timeout = max(0.0, min(deadlines) - now) if deadlines else None
            idle_from = self.last_activity + _IDLE_SECONDS
            if self.later and not self.calls:
                timeout = max(0.0, idle_from - now)
            events = self.selector.select(timeout)
            if not events and self.later and not self.calls and time.monotonic() >= idle_from:
                # Idle for a while (the agent is thinking): import the next module worth
                # having loaded. A call that comes meanwhile waits for this one import.
                _preload([self.later.pop(0)])
                self.last_activity = time.monotonic()
            for key, _ in events:
                try:
                    keep_going = key.data()
                except Exception as exc:  # one call's trouble must not end the zygote
                    sys.stderr.write(f"zygote: {type(exc).__name__}: {exc}\n")
                    keep_going = True
                if keep_going is False:
                    self._shutdown()
                    return

    def _on_request(self) -> bool:
        self.last_activity = time.monotonic()
        try:
            message, fds, _, _ = socket.recv_fds(self.control, _MAX_MESSAGE, 4)
        except OSError:
            return False
        if not message:
            for fd in fds:
                os.close(fd)
            return False
        request: dict[str, Any] = {}
        try:
            request = json.loads(message)
            if request.get("op") == "kill":
                for call_id in request.get("ids", []):
                    if call_id in self.calls:
                        self._stop(self.calls[call_id])
            elif request.get("op") == "run":
                self._start(request, fds)
        except Exception as exc:  # a bad request or a failed fork ends that call only
            if request.get("op") == "run" and isinstance(request.get("id"), int):
                self._answer(request["id"], {"failure": f"zygote: {type(exc).__name__}: {exc}"})
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
        return True

    def _start(self, request: dict[str, Any], fds: list[int]) -> None:
        call_id = int(request["id"])
        if len(fds) != 2:
            self._answer(call_id, {"failure": "a call needs its stdout and stderr pipes"})
            return
        status_read, status_write = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(status_read)
            os.close(status_write)
            raise
        if pid == 0:
            os.close(status_read)
            _call_process(request, fds[0], fds[1], status_write)
        os.close(status_write)
        os.set_blocking(status_read, False)
        pidfd = os.pidfd_open(pid)
        deadline = time.monotonic() + float(request["wall"])
        call = _Call(call_id, str(request["session"]), pid, pidfd, status_read, deadline)
        self.calls[call_id] = call
        self.selector.register(pidfd, selectors.EVENT_READ, lambda: self._ended(call))
        self.selector.register(status_read, selectors.EVENT_READ, lambda: self._status(call))

    def _status(self, call: _Call) -> bool:
        try:
            chunk = os.read(call.status_read, 65536)
        except BlockingIOError:
            return True
        except OSError:
            chunk = b""
        if chunk:
            call.output += chunk[: 65536 - len(call.output)]
            if call.output.endswith(b"\n") and not call.timed_out:
                # The init reports once everything else of the call has ended: answer now,
                # without waiting for the namespaces to be torn down.
                self._answer_call(call)
        else:
            self.selector.unregister(call.status_read)
        return True

    def _stop(self, call: _Call) -> None:
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(call.pidfd, signal.SIGTERM)

    def _ended(self, call: _Call) -> bool:
        os.waitpid(call.pid, 0)
        self.selector.unregister(call.pidfd)
        os.close(call.pidfd)
        with contextlib.suppress(BlockingIOError, OSError):
            while chunk := os.read(call.status_read, 65536):
                call.output += chunk
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(call.status_read)
        os.close(call.status_read)
        del self.calls[call.id]
        self._answer_call(call)
        return True

    def _answer_call(self, call: _Call) -> None:
        if call.answered:
            return
        call.answered = True
        lines = bytes(call.output).decode(errors="replace").strip().splitlines()
        status: dict[str, Any] = {}
        with contextlib.suppress(json.JSONDecodeError, IndexError):
            status = json.loads(lines[-1])
        if call.timed_out:
            status = {**status, "timed_out": True}
        self._answer(call.id, status)

    def _answer(self, call_id: int, status: dict[str, Any]) -> None:
        self.last_activity = time.monotonic()
        with contextlib.suppress(OSError):
            self.control.send(json.dumps({"id": call_id, "status": status}).encode())

    def _shutdown(self) -> None:
        for call in list(self.calls.values()):
            self._stop(call)
        for call in list(self.calls.values()):
            with contextlib.suppress(OSError):
                os.waitpid(call.pid, 0)


def _preload(modules: list[str]) -> None:
    # Imported once here, so every call starts with them already loaded.
    for module in modules:
        with contextlib.suppress(Exception):
            importlib.import_module(module)
    if "httpx" in sys.modules:
        with contextlib.suppress(Exception):
            _share_httpx_tls_context()


def _share_httpx_tls_context() -> None:
    """Build httpx's default TLS context once, here, instead of in every client of every call.

    Parsing the CA bundle costs OpenSSL about 0.2 s, and httpx does it for each transport it
    builds: one per client, plus one per proxy variable (three are set in the sandbox). Only
    the default settings (``verify=True``, no client certificate) are shared; the context is
    keyed on the variables that change it, and each call gets its own copy (fork).
    """
    from httpx import _config
    from httpx._transports import default

    create = _config.create_ssl_context
    shared: dict[tuple[bool, str | None, str | None], Any] = {}

    def create_ssl_context(verify: Any = True, cert: Any = None, trust_env: bool = True) -> Any:
        if verify is not True or cert or os.environ.get("SSLKEYLOGFILE"):
            return create(verify=verify, cert=cert, trust_env=trust_env)
        key = (
            trust_env,
            os.environ.get("SSL_CERT_FILE") if trust_env else None,
            os.environ.get("SSL_CERT_DIR") if trust_env else None,
        )
        if key not in shared:
            shared[key] = create(verify=verify, cert=cert, trust_env=trust_env)
        return shared[key]

    _config.create_ssl_context = create_ssl_context
    default.create_ssl_context = create_ssl_context  # type: ignore[attr-defined]
    import httpx

    # A first client imports what httpx loads lazily (httpcore, h11) and builds the context.
    httpx.Client().close()


def probe_nesting() -> str | None:
    """Check that a call's namespaces can be made here; None when they can, else why not."""
    problem_read, problem_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(problem_read)
        try:
            _unshare()
            _mount("tmpfs", "/tmp", "tmpfs", _MS_NOSUID | _MS_NODEV, "size=4k")
            init = os.fork()
            if init == 0:
                try:
                    _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
                except BaseException as exc:
                    os.write(problem_write, str(exc).encode())
                os._exit(0)
            os.waitpid(init, 0)
        except BaseException as exc:
            os.write(problem_write, str(exc).encode())
        os._exit(0)
    os.close(problem_write)
    problem = os.read(problem_read, 4096).decode(errors="replace")
    os.close(problem_read)
    os.waitpid(pid, 0)
    return problem or None


def main(argv: list[str]) -> int:
    """Start serving; see the module doc."""
    control = socket.socket(fileno=int(argv[0]))
    config = json.loads(argv[1])
    os.set_inheritable(control.fileno(), False)
    del sys.path[0]  # this script's directory: calls set their own first entry
    sys.path.insert(0, WORKDIR)
    problem = probe_nesting()
    if problem is None:
        _preload(list(config.get("preload", [])))
    control.send(json.dumps({"ready": True, "problem": problem}).encode())
    if problem is not None:
        return 1
    Zygote(control, list(config.get("later", []))).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
