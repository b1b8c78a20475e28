"""Host-side step used when the backend runs as root: give up root before the sandbox starts.

A sandboxed process whose host uid is 0 is exempt from the kernel's process-count limit and is
the owner of every root-owned file, capabilities or not. So when the backend runs as root, each
call goes through this script (standard library only), which

1. if some paths the sandbox needs (typically the Python installation under ``/root``) are not
   reachable by the sandbox uid, enters a private mount namespace, covers the first blocking
   directory with an empty tmpfs and binds only the needed paths back at their own location (the
   host's mount table is not touched, and the rest of that directory stays hidden);
2. drops all groups and switches to the unprivileged sandbox uid and gid;
3. executes the rest of its arguments (``bwrap ...`` or the launcher).

Run as ``python -I -S _enter.py UID GID N PATH_1 ... PATH_N COMMAND...`` where the N paths are
the ones to expose.
"""

from __future__ import annotations

import ctypes
import os
import stat
import sys

_CLONE_NEWNS = 0x00020000
_MS_BIND = 4096
_MS_REC = 16384
_MS_PRIVATE = 1 << 18


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def blocking_ancestor(path: str, uid: int, gid: int) -> str | None:
    """The first directory on the way to ``path`` that ``uid``/``gid`` may not traverse."""
    current = "/"
    for part in [p for p in path.split("/") if p]:
        info = os.stat(current)
        if not _may_traverse(info, uid, gid):
            return current
        current = os.path.join(current, part)
    return None


def _may_traverse(info: os.stat_result, uid: int, gid: int) -> bool:
    if info.st_uid == uid:
        return bool(info.st_mode & stat.S_IXUSR)
    if info.st_gid == gid:
        return bool(info.st_mode & stat.S_IXGRP)
    return bool(info.st_mode & stat.S_IXOTH)


def expose(paths: list[str], uid: int, gid: int) -> None:
    """Make ``paths`` reachable by ``uid`` in a new private mount namespace."""
    libc = ctypes.CDLL(None, use_errno=True)
    _check(libc.unshare(_CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    _check(libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None), "make / private")
    handles = {path: os.open(path, os.O_PATH) for path in paths}
    covers = sorted({a for p in paths if (a := blocking_ancestor(p, uid, gid)) is not None})
    for cover in covers:
        _check(libc.mount(b"tmpfs", cover.encode(), b"tmpfs", 0, b"mode=0755"), f"tmpfs on {cover}")
    old_umask = os.umask(0o022)
    for path, handle in handles.items():
        os.makedirs(path, exist_ok=True)
        source = f"/proc/self/fd/{handle}".encode()
        _check(libc.mount(source, path.encode(), None, _MS_BIND | _MS_REC, None), f"bind {path}")
        os.close(handle)
    os.umask(old_umask)


def main(argv: list[str]) -> None:
    """Expose, drop privileges, exec; see the module doc."""
    uid, gid, count = int(argv[0]), int(argv[1]), int(argv[2])
    paths, command = argv[3 : 3 + count], argv[3 + count :]
    if paths:
        expose(paths, uid, gid)
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    os.execv(command[0], command)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except OSError as exc:
        sys.stderr.write(f"sandbox: cannot enter the sandbox: {exc}\n")
        sys.exit(125)
