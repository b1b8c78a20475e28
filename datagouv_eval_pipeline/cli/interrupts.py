"""Ctrl-C and SIGTERM always stop ``datagouv-eval experiment``: the main thread owns them.

The run goes in a worker thread while the main thread only waits, with its own handlers for
SIGINT and SIGTERM that nothing else replaces (Dagster swaps the handlers of the thread it runs
in, and a library that catches the exception a handler raises would lose the interrupt). The
first signal sets the run's :class:`CancelToken`, which every stage watches: the stage in
progress stops, finished work is kept, and no later stage starts. A long DuckDB query does not
watch it: the query in progress on every warehouse connection is interrupted instead, at the
signal and again every 0.2 s while the run stops (``pipeline/warehouse/connections.py``). If the run
has not stopped ``grace`` seconds later, or on a second signal, the process stops at once: its
children are killed and it exits 130, leaving what a ``kill -9`` leaves (the next run cleans it
and resumes).

The worker thread blocks SIGINT, and the processes it starts inherit that: a terminal's Ctrl-C
(sent to the whole process group) reaches only this process, not Dagster's log-mirroring
helpers (which printed a ``KeyboardInterrupt`` traceback each) nor dbt or a sandbox, which the
run stops itself.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Generic, NoReturn, TypeVar

from datagouv_eval_pipeline.cli.experiment_summary import EXIT_INTERRUPTED
from datagouv_eval_pipeline.pipeline.agents import CancelToken, record_interrupt, run_token_set
from datagouv_eval_pipeline.pipeline.warehouse import interrupt_queries

GRACE_SECONDS = 9.0
"""How long a stage may take to stop after the first signal before the process stops at once."""

_SIGNALS = (signal.SIGINT, signal.SIGTERM)

_T = TypeVar("_T")


def _kill_children() -> None:
    import psutil  # type: ignore[import-untyped]  # no stubs in the lock

    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            child.kill()


class Stoppable(Generic[_T]):
    """Runs ``work(token)`` in a worker thread; the main thread turns signals into the token."""

    def __init__(
        self,
        work: Callable[[CancelToken], _T],
        *,
        grace: float = GRACE_SECONDS,
        on_hard_stop: Callable[[str], str] | None = None,
    ) -> None:
        """Prepare the run (nothing starts before :meth:`run`).

        Args:
            work: The run; it watches the token it is given.
            grace: Seconds between the first signal and the hard stop.
            on_hard_stop: Given the reason, returns the line printed before a hard stop.
        """
        self._work = work
        self._grace = grace
        self._on_hard_stop = on_hard_stop
        self.token = CancelToken()
        self._stopped_at: float | None = None
        self._value: _T | None = None
        self._error: BaseException | None = None
        # The terminal, before Dagster points stdout and stderr at its compute-log files.
        self._stdout = os.dup(1)
        self._stderr = os.dup(2)

    def _body(self) -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            with run_token_set(self.token):
                self._value = self._work(self.token)
        except BaseException as error:  # handed to the main thread, which raises it
            self._error = error

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if self.token.cancelled:
            self._hard_stop(f"second {name}")
        reason = f"interrupted by {name}"
        record_interrupt(reason)
        self.token.cancel(reason)
        self._stopped_at = time.monotonic()
        interrupt_queries()
        self._say(
            f"stopping ({reason}): the stage in progress stops, finished work is kept "
            f"(a second Ctrl-C stops at once)"
        )

    def _say(self, line: str) -> None:
        os.write(self._stderr, (line + "\n").encode("utf-8", errors="replace"))

    def _hard_stop(self, why: str) -> None:
        line = f"stopped at once ({why})"
        if self._on_hard_stop is not None:
            line = self._on_hard_stop(why)
        _kill_children()
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(self._stdout, 1)
        os.dup2(self._stderr, 2)
        self._say(line)
        os._exit(EXIT_INTERRUPTED)

    def exit(self, code: int) -> NoReturn:
        """End the command with ``code``; after a stop, without waiting for anything.

        A stopped run may leave worker processes still starting (the interpreter's exit would
        wait for them) and the helpers of a stage it cut short: they are killed, the output
        is flushed, and the process exits at once. Everything worth keeping is on disk.
        """
        if not self.token.cancelled:
            sys.exit(code)
        sys.stdout.flush()
        sys.stderr.flush()
        _kill_children()
        os._exit(code)

    def run(self) -> _T:
        """Run the work to its end (or to a stop) and return its value.

        Raises:
            BaseException: What the work raised.
        """
        previous = {signum: signal.getsignal(signum) for signum in _SIGNALS}
        for signum in _SIGNALS:
            signal.signal(signum, self._handle)
        worker = threading.Thread(target=self._body, name="experiment-run")
        try:
            worker.start()
            while worker.is_alive():
                worker.join(0.2)
                stopped = self._stopped_at
                if stopped is None:
                    continue
                if time.monotonic() - stopped > self._grace:
                    self._hard_stop(f"{self.token.reason}; still running {self._grace:.0f} s later")
                # A query started after the signal (the stage's next one) is cut short too.
                interrupt_queries()
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]  # set when no error was raised
