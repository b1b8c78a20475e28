"""The DuckDB connections open on the warehouse, so that a stop request can cut their queries.

A stage's single long query (a load, the statistics, the report's reads) does not look at the
run's stop request: on Ctrl-C, ``datagouv-eval experiment`` calls :func:`interrupt_queries`,
which interrupts the query in progress on every connection opened through :func:`track`.
DuckDB then raises ``duckdb.InterruptException`` in the stage and rolls the query's
transaction back, so the file keeps what the last committed statement left.

The read-only commands (``sql``, ``gate``, ``review``) run their queries through
:func:`run_interruptibly`, so that Ctrl-C stops a long one at once.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import TypeVar

import duckdb

_T = TypeVar("_T")

_LIVE: weakref.WeakSet[duckdb.DuckDBPyConnection] = weakref.WeakSet()
_LOCK = threading.Lock()


def track(conn: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """Remember ``conn`` (until it is garbage) for :func:`interrupt_queries`; returns it."""
    with _LOCK:
        _LIVE.add(conn)
    return conn


def interrupt_queries() -> int:
    """Interrupt the query in progress on every tracked connection; how many were open.

    A connection with no query running is left as it is; a closed one is forgotten.
    """
    with _LOCK:
        live = list(_LIVE)
    count = 0
    for conn in live:
        try:
            conn.interrupt()
        except duckdb.Error:  # closed already
            with _LOCK:
                _LIVE.discard(conn)
            continue
        count += 1
    return count


class QueryInterrupted(Exception):
    """Ctrl-C stopped a query run by :func:`run_interruptibly` (DuckDB rolled it back)."""


def run_interruptibly(
    conn: duckdb.DuckDBPyConnection, work: Callable[[duckdb.DuckDBPyConnection], _T]
) -> _T:
    """``work(conn)``, stopped by Ctrl-C even in the middle of one long query.

    Python runs a signal handler only between bytecodes of the main thread, and DuckDB does not
    look at signals while a query runs: a query on the main thread ignores Ctrl-C until it ends.
    So the work runs in a worker thread while the main thread waits, where Ctrl-C raises
    ``KeyboardInterrupt`` at once; the connection's query is then interrupted. Off the main
    thread (no signal reaches it) the work simply runs.

    Raises:
        QueryInterrupted: Ctrl-C was pressed; the query was interrupted and rolled back.
    """
    if threading.current_thread() is not threading.main_thread():
        return work(conn)
    outcome: list[_T] = []
    failure: list[BaseException] = []
    # An Event, not Thread.join: a KeyboardInterrupt inside join() can leave the thread
    # reported dead while it still runs (seen on CPython 3.11), and closing the connection then
    # fails as busy.
    done = threading.Event()

    def target() -> None:
        try:
            outcome.append(work(conn))
        except BaseException as error:  # handed to the caller's thread as it is
            failure.append(error)
        finally:
            done.set()

    threading.Thread(target=target, name="warehouse-query", daemon=True).start()
    try:
        while not done.wait(0.2):
            pass
    except KeyboardInterrupt:
        conn.interrupt()
        done.wait(_STOP_WAIT_S)
        raise QueryInterrupted("interrupted: the query was stopped, nothing was changed") from None
    if failure:
        raise failure[0]
    return outcome[0]


_STOP_WAIT_S = 10.0
"""How long an interrupted query may take to give the thread back (DuckDB: milliseconds)."""
