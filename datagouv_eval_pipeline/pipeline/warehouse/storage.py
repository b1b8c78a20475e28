"""The warehouse file's storage format: one the released DuckDB shell can open.

The Python package writes files in its newest storage format by default, which the newest
``duckdb`` shell published as a package (``duckdb-cli``, installed with the project) refuses
("version number 69 … only … 64 and 68"). The warehouse is therefore written in the format of
``STORAGE_VERSION``, a property DuckDB records in the file itself: once a file is created that
way, every later writer (the loader, dbt) keeps it. A file written in a newer format by an older
release of this project is copied once into the readable format when it is next opened for
writing.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import duckdb

from datagouv_eval_pipeline.pipeline.warehouse.connections import track

STORAGE_VERSION = "v1.4.0"
"""The storage format of the warehouse: the newest one ``duckdb-cli`` (1.5.x) reads."""

_CONFIG: dict[str, str | bool | int | float | list[str]] = {
    "storage_compatibility_version": STORAGE_VERSION
}


def storage_version(conn: duckdb.DuckDBPyConnection) -> str | None:
    """The storage format recorded in the main database of ``conn`` (e.g. ``v1.4.0+``)."""
    row = conn.execute(
        "SELECT tags['storage_version'] FROM duckdb_databases() WHERE database_name = "
        "current_database()"
    ).fetchone()
    return None if row is None or row[0] is None else str(row[0])


def _readable(version: str | None) -> bool:
    return version is not None and version.rstrip("+") == STORAGE_VERSION


def open_writable(path: Path) -> duckdb.DuckDBPyConnection:
    """Open (or create) the warehouse file for writing, in the shell-readable format.

    Args:
        path: The DuckDB file; its parent directory must exist.

    Returns:
        An open read-write connection whose file is in ``STORAGE_VERSION``'s format.
    """
    conn = track(duckdb.connect(str(path), config=_CONFIG))
    if _readable(storage_version(conn)):
        return conn
    conn.close()
    _convert(path)
    return track(duckdb.connect(str(path), config=_CONFIG))


def _convert(path: Path) -> None:
    """Copy ``path`` into a new file of the readable format, then put it in its place."""
    converted = path.with_name(f".{path.name}.converting")
    converted.unlink(missing_ok=True)
    with track(duckdb.connect(str(converted), config=_CONFIG)) as conn:
        target = conn.execute("SELECT current_database()").fetchone()
        assert target is not None
        conn.execute(f"ATTACH '{_quoted(path)}' AS previous (READ_ONLY)")
        conn.execute(f'COPY FROM DATABASE previous TO "{target[0]}"')
        conn.execute("DETACH previous")
        conn.execute("CHECKPOINT")
    # The rename is atomic: a crash leaves either the old file or the converted one, whole.
    os.replace(converted, path)
    Path(f"{path}.wal").unlink(missing_ok=True)


def _quoted(path: Path) -> str:
    return str(path).replace("'", "''")


_LOCK_HOLDER = re.compile(r"\(PID (\d+)\)")


def describe_open_error(path: Path, error: Exception) -> str:
    """One line saying why the warehouse file could not be opened, and what to do.

    Args:
        path: The warehouse file.
        error: What ``duckdb.connect`` (or a first query) raised.
    """
    text = str(error)
    if "lock" in text.lower():
        holder = _LOCK_HOLDER.search(text)
        who = f"process {holder.group(1)}" if holder else "another process"
        return (
            f"{path}: the warehouse is locked by {who} (a `duckdb` shell, even -readonly, or "
            "another run); close it and run again"
        )
    if "not a valid DuckDB database" in text or "Could not read enough bytes" in text:
        return (
            f"{path}: not a readable DuckDB warehouse (corrupt, cut short or another program's "
            "file); move it away and run `./dev run` to write a new one"
        )
    first_line = text.strip().splitlines()[0] if text.strip() else type(error).__name__
    return f"{path}: cannot open the warehouse: {first_line}"
