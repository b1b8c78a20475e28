"""The analysts' `duckdb` shell (`duckdb-cli`) opens the warehouse the project writes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from datagouv_eval_pipeline.pipeline.warehouse import connect
from datagouv_eval_pipeline.pipeline.warehouse.storage import STORAGE_VERSION, storage_version

SHELL = Path(sys.executable).parent / "duckdb"


def _shell(db: Path, query: str) -> subprocess.CompletedProcess[str]:
    if not SHELL.exists():
        pytest.fail(f"{SHELL}: the duckdb shell of the project's environment is missing")
    return subprocess.run(
        [str(SHELL), "-readonly", "-csv", str(db), "-c", query],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_shell_reads_a_warehouse_written_by_the_loader(tmp_path: Path) -> None:
    db = tmp_path / "warehouse.duckdb"
    with connect(db) as conn:
        conn.execute(
            "INSERT INTO eval.tasks (task_id, spec_hash, task_version, task_name, language, "
            "expected_behaviour, status, source) "
            "VALUES ('task_0001', 'abc', 1, 'une tâche', 'fr', 'answer', 'active', 'forum')"
        )
    shell = _shell(db, "SELECT task_id, task_name FROM eval.tasks")
    assert shell.returncode == 0, shell.stderr
    assert shell.stdout.splitlines() == ["task_id,task_name", 'task_0001,"une tâche"']


def test_a_warehouse_in_the_newer_format_is_converted_when_opened_for_writing(
    tmp_path: Path,
) -> None:
    db = tmp_path / "warehouse.duckdb"
    # A file written by an earlier release of the project: the package's default format.
    with duckdb.connect(str(db)) as old:
        old.execute("CREATE SCHEMA notes; CREATE TABLE notes.kept AS SELECT 42 AS answer")
        assert storage_version(old) != f"{STORAGE_VERSION}+"
    refused = _shell(db, "SELECT 1")
    assert refused.returncode != 0
    assert "version number" in refused.stderr + refused.stdout

    with connect(db) as conn:
        assert storage_version(conn) == f"{STORAGE_VERSION}+"
        assert conn.execute("SELECT answer FROM notes.kept").fetchall() == [(42,)]

    shell = _shell(db, "SELECT answer FROM notes.kept")
    assert shell.returncode == 0, shell.stderr
    assert shell.stdout.splitlines() == ["answer", "42"]
    assert not (tmp_path / ".warehouse.duckdb.converting").exists()
