"""The local Dagster instance's SQLite files: commits without an fsync each.

Dagster's SQLite storages open a new connection for every event they store (SQLAlchemy's
``NullPool``) in WAL mode, with SQLite's default ``synchronous=FULL``: each event costs an fsync
at commit and a checkpoint with two more when the connection closes. On the shared 2-core VM
that was 13–18 ms per event against 0.7 ms without syncing, and a default experiment stores
several hundred events: about 28 s of a 194 s run went into commits and closes (py-spy,
``bench/README.md``, "Pipeline").

``synchronous=OFF`` keeps every committed event across a crash or ``kill -9`` of the process
(the OS still has the pages); only an OS crash or a power cut can lose the last events or, at
worst, corrupt the local instance, which holds run history and no results (those are in the
run store and DuckDB). The deploy instance runs on PostgreSQL and is not touched. Set
``DATAGOUV_EVAL_DAGSTER_SQLITE_SYNC`` to ``NORMAL`` or ``FULL`` to keep SQLite's guarantees.
"""

import os
import sqlite3
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.pool import Pool

SYNC_ENV = "DATAGOUV_EVAL_DAGSTER_SQLITE_SYNC"
"""Environment variable: SQLite ``synchronous`` for the instance's files (default ``OFF``)."""

_MODES = ("OFF", "NORMAL", "FULL", "EXTRA")
_installed = False


def sqlite_sync_mode() -> str:
    """The ``synchronous`` mode asked for (``OFF`` unless the environment says otherwise).

    Raises:
        ValueError: The variable holds something other than a SQLite mode.
    """
    mode = os.environ.get(SYNC_ENV, "OFF").strip().upper() or "OFF"
    if mode not in _MODES:
        raise ValueError(f"{SYNC_ENV}={mode!r}: expected one of {', '.join(_MODES)}")
    return mode


def _under_dagster_home(connection: sqlite3.Connection) -> bool:
    home = os.environ.get("DAGSTER_HOME")
    if not home:
        return False
    root = Path(home).resolve()
    for _, name, file in connection.execute("PRAGMA database_list").fetchall():
        if name == "main" and file:
            return Path(file).resolve().is_relative_to(root)
    return False


def _on_connect(dbapi_connection: Any, _record: Any) -> None:
    if isinstance(dbapi_connection, sqlite3.Connection) and _under_dagster_home(dbapi_connection):
        dbapi_connection.execute(f"PRAGMA synchronous={sqlite_sync_mode()}")


def relax_instance_sqlite() -> None:
    """Apply the ``synchronous`` mode to every SQLite connection into ``$DAGSTER_HOME``.

    Idempotent; other SQLite files and other databases are left alone. Called when the code
    location loads, so the CLI's runs and the run workers of the UI and the daemon both get it.
    """
    global _installed
    if _installed:
        return
    sqlite_sync_mode()  # a bad value fails at load, naming the variable
    event.listen(Pool, "connect", _on_connect)
    _installed = True
