"""One exclusive lock per file, shared by processes that prepare or use the same thing on disk."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path


class LockHeldError(RuntimeError):
    """Another process holds the lock (``holder``: its process id as it wrote it, or "")."""

    def __init__(self, path: Path, holder: str) -> None:
        super().__init__(f"{path}: held by {holder or 'another process'}")
        self.path = path
        self.holder = holder


@contextlib.contextmanager
def exclusive_lock(path: Path, *, wait: bool = True) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created if missing) for the ``with`` block.

    Two processes that build the same certificate authority or the same MCP build environment
    take turns instead of writing over each other; the lock goes with the process if it dies.

    Args:
        path: The lock file.
        wait: Wait for the lock (the default); otherwise fail at once when it is held, and
            write this process's id in the file for the next one to name.

    Raises:
        LockHeldError: ``wait`` is false and another process holds the lock.
    """
    with path.open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            handle.seek(0)
            raise LockHeldError(path, handle.read(32).strip()) from None
        try:
            if not wait:
                handle.truncate(0)
                handle.write(f"{os.getpid()}\n")
                handle.flush()
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
