"""The DuckDB connections open on the warehouse, so that a stop request can cut their queries.

A stage's single long query (a load, the statistics, the report's reads) does not look at the
run's stop request: on Ctrl-C, ``datagouv-eval experiment`` calls :func:`interrupt_queries`,
which interrupts the query in progress on every connection opened through :func:`track`.
DuckDB then raises ``duckdb.InterruptException`` in the stage and rolls the query's
transaction back, so the file keeps what the last committed statement left.
"""

from __future__ import annotations

import threading
import weakref

import duckdb

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
