"""The first program that runs inside a sandbox; it starts the agent's command and reports on it.

Standard library only: it is copied into sandboxes and into the Docker image, where the project
is not installed. It is run as ``python -I -S launcher.py OPTION=VALUE... -- COMMAND...`` (see
``main``) and

1. when ``proxy_socket`` is set, listens on a free ``127.0.0.1`` port and relays each connection
   to that Unix socket (the backend's allow-listing proxy, outside the sandbox), and points the
   usual proxy variables at the port: the sandbox has no other route out;
2. starts the command with the resource limits (``setrlimit``) in place;
3. kills the command and everything it started when it ends or when ``wall_seconds`` has passed
   (it is a child subreaper, so even processes that left their session are found);
4. writes one JSON status line to ``status_fd`` (exit code or signal, CPU time, timeout), or
   when there is no status fd, exits with the command's status (``128 + signal`` if killed).

The launcher itself runs without the limits, so that the relay keeps working while the command
is near them. It shares the sandbox user with the command, so its report is trusted only as far
as the command is; the backends never rely on it for isolation.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import resource
import selectors
import signal
import socket
import struct
import sys
import time
from typing import Any

_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_DUMPABLE = 4
_PR_SET_PDEATHSIG = 1
_PR_CAPBSET_DROP = 24
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_CAPABILITY_VERSION_3 = 0x20080522
_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_MS_NOSUID = 2
_MS_NODEV = 4
_MS_NOEXEC = 8
_MS_REC = 16384
_MS_PRIVATE = 1 << 18
_ISOLATION_FAILED = 125
_RELAY_CHUNK = 65536
_CA_BUNDLE = "ca-bundle.pem"
_CA_BUNDLE_VARS = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")
_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
_RLIMITS = {
    "cpu": resource.RLIMIT_CPU,
    "as": resource.RLIMIT_AS,
    "nproc": resource.RLIMIT_NPROC,
    "fsize": resource.RLIMIT_FSIZE,
    "core": resource.RLIMIT_CORE,
    "nofile": resource.RLIMIT_NOFILE,
}


def _become_subreaper() -> None:
    # Orphans re-parent to us instead of to init, so that nothing the command starts escapes.
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _not_dumpable() -> None:
    # The command (same uid, no capability) must not ptrace this launcher, which would stop its
    # relay, its wall-clock kill and its report. The command's exec makes it dumpable again.
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)


def _fail(what: str) -> None:
    number = ctypes.get_errno()
    raise OSError(number, f"{what}: {os.strerror(number)}")


def _isolate(tmp_bytes: int, tmp_inodes: int) -> None:
    """Make this launcher the (non-dumpable) init of a new PID namespace, with a capped /tmp.

    It also forbids nested user namespaces; only the init returns. For a sandbox whose own
    PID 1 the command could otherwise ptrace (bubblewrap's, in the per-call mode), and whose
    /tmp cannot be mounted with ``nr_inodes`` from outside. A new user namespace (the same uid
    and gid, nothing else) gives the capabilities to mount; they are all dropped before this
    returns, and the command's exec could not keep them. The process that called this waits
    for the init and exits with its status.

    Raises:
        OSError: A step failed (the call must not run without it).
    """
    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS | _CLONE_NEWPID) != 0:
        _fail("unshare")
    maps = (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1"))
    for name, text in maps:
        with open(f"/proc/self/{name}", "w") as handle:
            handle.write(text)

    def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str) -> None:
        encoded = [item.encode() if item else None for item in (source, target, fstype, data)]
        if libc.mount(encoded[0], encoded[1], encoded[2], flags, encoded[3]) != 0:
            _fail(f"mount {target}")

    mount(None, "/", None, _MS_REC | _MS_PRIVATE, "")
    mount(
        "tmpfs",
        "/tmp",
        "tmpfs",
        _MS_NOSUID | _MS_NODEV,
        (f"size={tmp_bytes},mode=1777,nr_inodes={tmp_inodes}"),
    )
    # No user namespace may be created inside (``unshare -Ur`` fails): set in this namespace
    # while this process holds its capabilities there.
    with open("/proc/sys/user/max_user_namespaces", "w") as handle:
        handle.write("0")
    pid = os.fork()
    if pid != 0:
        # Outside the new PID namespace, invisible from it: wait, and pass the status on.
        _not_dumpable()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        while True:
            try:
                _, status = os.waitpid(pid, 0)
                break
            except InterruptedError:
                continue
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
    # PID 1 of the new namespace: ends with the launcher it forked from, and ignores what it
    # does not handle (so no KeyboardInterrupt from a ``kill -INT 1``).
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        _fail("parent death signal")
    # The launcher lists and kills processes by /proc: it must show this namespace's.
    mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, "")
    _not_dumpable()
    for cap in range(64):
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            break  # past the last capability the kernel knows
    libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = struct.pack("Ii", _CAPABILITY_VERSION_3, 0)
    if libc.capset(header, bytes(24)) != 0:  # two empty {effective, permitted, inheritable}
        _fail("capset")


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        # The command name may contain spaces and parentheses: split after the last ")".
        fields = stat[stat.rfind(b")") + 2 :].split()
        children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    queue = [root]
    while queue:
        for child in children.get(queue.pop(), []):
            found.append(child)
            queue.append(child)
    return found


def _kill_descendants() -> None:
    me = os.getpid()
    for _ in range(200):
        pids = _descendants(me)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.005)
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass


class _Relay:
    """Byte relay between local TCP clients and the proxy's Unix socket, on one selector."""

    def __init__(self, selector: selectors.BaseSelector, proxy_socket: str) -> None:
        self.selector = selector
        self.proxy_socket = proxy_socket
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(128)
        self.listener.setblocking(False)
        self.port: int = self.listener.getsockname()[1]
        self.peers: dict[socket.socket, socket.socket] = {}
        selector.register(self.listener, selectors.EVENT_READ, self.accept)

    def accept(self) -> None:
        try:
            client, _ = self.listener.accept()
        except OSError:
            return
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(self.proxy_socket)
        except OSError:
            client.close()
            upstream.close()
            return
        for sock in (client, upstream):
            # A bounded blocking send: a peer that stops reading stalls only until this timeout.
            sock.settimeout(10)
        self.peers[client] = upstream
        self.peers[upstream] = client
        self.selector.register(client, selectors.EVENT_READ, lambda: self.pump(client))
        self.selector.register(upstream, selectors.EVENT_READ, lambda: self.pump(upstream))

    def pump(self, source: socket.socket) -> None:
        target = self.peers.get(source)
        if target is None:
            return
        try:
            data = source.recv(_RELAY_CHUNK)
            if data:
                target.sendall(data)
                return
            # One side finished sending: pass the half-close on and stop watching it.
            self.selector.unregister(source)
            target.shutdown(socket.SHUT_WR)
            if not self._watched(target):
                self.close_pair(source)
        except OSError:
            self.close_pair(source)

    def _watched(self, sock: socket.socket) -> bool:
        try:
            self.selector.get_key(sock)
        except (KeyError, ValueError):
            return False
        return True

    def close_pair(self, sock: socket.socket) -> None:
        other = self.peers.pop(sock, None)
        for item in (sock, other):
            if item is None:
                continue
            self.peers.pop(item, None)
            if self._watched(item):
                self.selector.unregister(item)
            item.close()


def _parse(argv: list[str]) -> tuple[dict[str, str], dict[str, tuple[int, int]], list[str]]:
    options: dict[str, str] = {}
    rlimits: dict[str, tuple[int, int]] = {}
    for index, token in enumerate(argv):
        if token == "--":
            return options, rlimits, argv[index + 1 :]
        key, _, value = token.partition("=")
        if key == "rlimit":
            name, soft, hard = value.split(":")
            rlimits[name] = (int(soft), int(hard))
        else:
            options[key] = value
    raise SystemExit("launcher: expected OPTIONS -- COMMAND...")


def _spawn(command: list[str], env: dict[str, str], rlimits: dict[str, tuple[int, int]]) -> int:
    """Fork and exec ``command`` with the limits; the errno as a negative number if exec fails."""
    # os.pipe() descriptors are close-on-exec: the pipe reads empty once exec has succeeded.
    errors_read, errors_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(errors_read)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            for name, (soft, hard) in rlimits.items():
                resource.setrlimit(_RLIMITS[name], (soft, hard))
            os.execvpe(command[0], command, env)
        except OSError as exc:
            os.write(errors_write, str(exc.errno or 0).encode())
        finally:
            os._exit(127)
    os.close(errors_write)
    report = os.read(errors_read, 64)
    os.close(errors_read)
    if report:
        os.waitpid(pid, 0)
        return -int(report)
    return pid


def ca_bundle_env(control: str) -> dict[str, str]:
    """``SSL_CERT_FILE`` & co. at the session's CA bundle, when there is one (the front's).

    Python's ssl (urllib, httpx), requests and curl each read one of the three.
    """
    bundle = os.path.join(control, _CA_BUNDLE)
    return dict.fromkeys(_CA_BUNDLE_VARS, bundle) if os.path.isfile(bundle) else {}


def main(argv: list[str]) -> int:
    """Run the command described by ``argv`` (``OPTION=VALUE... -- COMMAND...``).

    Options: ``status_fd=N``, ``proxy=SOCKET_PATH``, ``wall=SECONDS``,
    ``isolate=TMP_BYTES:TMP_INODES`` (see ``_isolate``) and, repeated,
    ``rlimit=NAME:SOFT:HARD`` with NAME one of cpu, as, nproc, fsize, core, nofile.
    """
    options, rlimits, command = _parse(argv)
    status_fd = int(options["status_fd"]) if "status_fd" in options else None
    if status_fd is not None:
        os.set_inheritable(status_fd, False)  # the command must not be able to forge a report
    if options.get("isolate"):
        tmp_bytes, tmp_inodes = (int(part) for part in options["isolate"].split(":"))
        try:
            _isolate(tmp_bytes, tmp_inodes)
        except OSError as exc:
            # No report: the backend says the launcher ended without one, with this line.
            sys.stderr.write(f"sandbox: cannot isolate the call: {exc}\n")
            return _ISOLATION_FAILED
    wall = float(options["wall"]) if "wall" in options else None
    env = dict(os.environ)
    selector = selectors.DefaultSelector()
    if options.get("proxy"):
        relay = _Relay(selector, options["proxy"])
        url = f"http://127.0.0.1:{relay.port}"
        env.update(dict.fromkeys(_PROXY_VARS, url))
        env["NO_PROXY"] = env["no_proxy"] = ""
        env.update(ca_bundle_env(os.path.dirname(options["proxy"])))
    _become_subreaper()
    _not_dumpable()
    status: dict[str, int | float | bool | None] = {"exit_code": None, "signal": None}
    status["timed_out"] = False
    started = time.monotonic()
    pid = _spawn(command, env, rlimits) if command else -errno.ENOENT
    if pid < 0:
        status["spawn_errno"] = -pid
        status["exit_code"] = 127 if -pid == errno.ENOENT else 126
        return _report(status, status_fd)
    pidfd: int | None = None
    with contextlib.suppress(OSError, AttributeError):
        pidfd = os.pidfd_open(pid)
        selector.register(pidfd, selectors.EVENT_READ, None)
    result: tuple[int, int, Any] | None = None
    while result is None:
        timeout = 0.05 if pidfd is None else None
        if wall is not None:
            left = started + wall - time.monotonic()
            if left <= 0:
                status["timed_out"] = True
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                result = os.wait4(pid, 0)
                break
            timeout = left if timeout is None else min(timeout, left)
        for key, _ in selector.select(timeout):
            if key.data is not None:
                key.data()
        found, wait_status, usage = os.wait4(pid, os.WNOHANG)
        if found:
            result = (found, wait_status, usage)
    _, wait_status, usage = result
    if os.WIFSIGNALED(wait_status):
        status["signal"] = os.WTERMSIG(wait_status)
    else:
        status["exit_code"] = os.WEXITSTATUS(wait_status)
    status["cpu_seconds"] = round(usage.ru_utime + usage.ru_stime, 3)
    _kill_descendants()
    return _report(status, status_fd)


def _report(status: dict[str, int | float | bool | None], status_fd: int | None) -> int:
    if status_fd is not None:
        # Numbers, booleans and null only: JSON without importing json (it is slow to import).
        fields = ", ".join(f'"{k}": {_json_scalar(v)}' for k, v in status.items())
        os.write(status_fd, ("{" + fields + "}\n").encode())
        return 0
    if status.get("spawn_errno"):
        sys.stderr.write(
            f"sandbox: cannot run the command: {os.strerror(int(status['spawn_errno'] or 0))}\n"
        )
    if status["signal"] is not None:
        return 128 + int(status["signal"])
    return int(status["exit_code"] or 0)


def _json_scalar(value: int | float | bool | None) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
