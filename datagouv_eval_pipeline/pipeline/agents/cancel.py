"""Stopping a running experiment on Ctrl-C or SIGTERM, without losing what finished.

A :class:`CancelToken` is set by the first SIGINT or SIGTERM (``cancel_on_signals``); the cell
runner watches it, cancels its in-flight task runs (they end as ``cancelled`` with the token's
reason) and returns, and the stages stop before the next cell. A second signal stops at once
(``KeyboardInterrupt``), for when the first one is not enough.

``datagouv-eval experiment`` owns the signals for the whole run instead: it sets one token for
the run (:func:`run_token_set`) that every stage watches (:func:`current_token`), so an
interrupt is seen whatever stage is going, not only by the stage that installed a handler.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TypeVar

_T = TypeVar("_T")

_SIGNALS = (signal.SIGINT, signal.SIGTERM)

_last_reason: str | None = None
_run_token: CancelToken | None = None


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

    def wait(self, timeout: float | None = None) -> bool:
        """Block until a stop is requested or ``timeout`` passes; whether it was requested."""
        return self._event.wait(timeout)


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


def record_interrupt(reason: str) -> None:
    """Remember ``reason`` as the last interrupt (for :func:`last_interrupt`)."""
    global _last_reason
    _last_reason = reason


@contextmanager
def run_token_set(token: CancelToken) -> Iterator[CancelToken]:
    """Make ``token`` the run's stop request while the block runs (see :func:`current_token`)."""
    global _run_token
    previous, _run_token = _run_token, token
    try:
        yield token
    finally:
        _run_token = previous


def current_token() -> CancelToken | None:
    """The run's stop request, when a caller owns the signals for the whole run (else None)."""
    return _run_token


async def until_cancelled(work: Awaitable[_T], token: CancelToken | None) -> _T:
    """Await ``work``; when ``token`` is set first, cancel it and raise :class:`RunCancelled`."""
    job = asyncio.ensure_future(work)
    if token is None:
        return await job
    while not job.done():
        if token.cancelled:
            job.cancel()
            # It stops either way; how it ended is of no interest once the run is interrupted.
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await job
            raise RunCancelled(token.reason)
        await asyncio.wait({job}, timeout=0.1)
    return job.result()


@contextmanager
def cancel_on_signals(token: CancelToken | None = None) -> Iterator[CancelToken]:
    """Set a token on the first SIGINT or SIGTERM while the block runs.

    When the run's signals are owned by its caller (:func:`run_token_set`), the run's token is
    returned and no handler is installed. Only the main thread can install signal handlers;
    elsewhere the token is returned unwired (the caller may still set it). The previous
    handlers come back when the block ends.
    """
    if _run_token is not None:
        yield _run_token
        return
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
