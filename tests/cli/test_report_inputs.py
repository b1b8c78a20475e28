"""`datagouv-eval report` on a warehouse it cannot read, or a port it cannot use: one clear line."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner, Result

from datagouv_eval_pipeline.cli import main


def _report(args: list[str], db: Path) -> Result:
    return CliRunner().invoke(
        main, ["report", *args], env={"DATAGOUV_EVAL_DUCKDB": str(db)}, catch_exceptions=False
    )


def _only_error(result: Result) -> str:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    return lines[0]


def _real_warehouse(path: Path) -> None:
    with duckdb.connect(str(path)) as conn:
        conn.execute("CREATE TABLE t AS SELECT range AS x FROM range(100000)")


@pytest.mark.parametrize("damage", ["garbage", "cut to a third", "cut to 100 bytes"])
def test_report_build_on_a_damaged_warehouse(tmp_path: Path, damage: str) -> None:
    db = tmp_path / "warehouse.duckdb"
    if damage == "garbage":
        db.write_text("not a database\n", encoding="utf-8")
    else:
        _real_warehouse(db)
        data = db.read_bytes()
        db.write_bytes(data[: len(data) // 3] if damage == "cut to a third" else data[:100])
    line = _only_error(_report(["build"], db))
    assert line == (
        f"Error: {db}: not a readable DuckDB warehouse (corrupt, cut short or another "
        "program's file); move it away and run `./dev run` to write a new one"
    )


def test_report_build_on_a_warehouse_locked_by_a_writer(tmp_path: Path) -> None:
    db = tmp_path / "warehouse.duckdb"
    _real_warehouse(db)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); "
            "print('open', flush=True); time.sleep(60)",
            str(db),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        line = _only_error(_report(["build"], db))
    finally:
        holder.kill()
        holder.wait()
    assert line.startswith(f"Error: {db}: the warehouse is locked by process {holder.pid}")


def test_report_serve_on_a_busy_port(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        line = _only_error(_report(["serve", "--no-build", "--port", str(port)], tmp_path / "w"))
    assert line == (
        f"Error: port {port} on 127.0.0.1 is already in use by another program; choose another "
        "one with --port (0 = any free port)"
    )
