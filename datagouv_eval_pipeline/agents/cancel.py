"""Stopping a running experiment on Ctrl-C or SIGTERM, without losing what finished.

A :class:`CancelToken` is set by the first SIGINT or SIGTERM (``cancel_on_signals``); the cell
runner watches it, cancels its in-flight task runs (they end as ``cancelled`` with the token's
reason) and returns, and the stages stop before the next cell. A second signal stops at once
(``KeyboardInterrupt``), for when the first one is not enough.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

_SIGNALS = (signal.SIGINT, signal.SIGTERM)

_last_reason: str | None = None


class CancelToken:
    """A stop request shared between a signal handler and the code that does the work."""

    def __init__(self) -> None:
        """A token nobody has set yet."""
        self._event = threading.Event()
        self._reason: str | None = None

    def cancel(self, reason: str) -> None:
        """Ask the work to stop; the first reason is kept."""
        if not self._event.is_set():
            self._reason = reason
            self._event.set()

    @property
    def cancelled(self) -> bool:
        """Whether a stop was requested."""
        return self._event.is_set()

    @property
    def reason(self) -> str:
        """Why the work stops (empty while it does not)."""
        return self._reason or ""


class RunCancelled(Exception):
    """The work stopped because its token was set; finished results are kept."""

    def __init__(self, reason: str, *, cancelled_runs: int = 0) -> None:
        """Record why, and how many task runs were cut short."""
        super().__init__(reason)
        self.reason = reason
        self.cancelled_runs = cancelled_runs


def last_interrupt() -> str | None:
    """The reason of the last signal a :func:`cancel_on_signals` block received, if any."""
    return _last_reason


@contextmanager
def cancel_on_signals(token: CancelToken | None = None) -> Iterator[CancelToken]:
    """Set a token on the first SIGINT or SIGTERM while the block runs.

    Only the main thread can install signal handlers; elsewhere the token is returned unwired
    (the caller may still set it). The previous handlers come back when the block ends.
    """
    token = token or CancelToken()
    if threading.current_thread() is not threading.main_thread():
        yield token
        return

    def handle(signum: int, _frame: FrameType | None) -> None:
        global _last_reason
        name = signal.Signals(signum).name
        if token.cancelled:
            raise KeyboardInterrupt(f"second {name}: stopping now")
        _last_reason = f"interrupted by {name}"
        token.cancel(_last_reason)

    previous = {signum: signal.getsignal(signum) for signum in _SIGNALS}
    for signum in _SIGNALS:
        signal.signal(signum, handle)
    try:
        yield token
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
