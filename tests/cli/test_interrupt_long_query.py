"""Ctrl-C during one long DuckDB query: the query is interrupted, the step ends "stopped".

Before, the query went on until the 9 s hard stop killed the process. The stage is a real
Dagster step run as ``datagouv-eval experiment`` runs its job (``long_query_stage.py``), in a
subprocess that gets a real SIGINT; the warehouse file is opened afterwards to check that the
interrupted transaction left nothing behind.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import duckdb

from datagouv_eval_pipeline.pipeline.warehouse.loader import connect

SCRIPT = Path(__file__).with_name("long_query_stage.py")


def test_sigint_interrupts_a_long_query_and_the_warehouse_stays_intact(tmp_path: Path) -> None:
    db = tmp_path / "warehouse.duckdb"
    with connect(db) as conn:  # the schema, and one committed row
        conn.execute("CREATE TABLE main.kept (note VARCHAR)")
        conn.execute("INSERT INTO main.kept VALUES ('committed')")
    process = subprocess.Popen(
        [sys.executable, str(SCRIPT), str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    assert process.stdout is not None
    lines: list[str] = []
    try:
        for line in process.stdout:
            lines.append(line.rstrip("\n"))
            if line.startswith("query started"):
                process.send_signal(signal.SIGINT)
                break
        lines += process.stdout.read().splitlines()
        code = process.wait(timeout=300)  # generous: only a hang fails here
    finally:
        if process.poll() is None:
            process.kill()
    output = "\n".join(lines)
    assert code == 130, output
    assert "Traceback" not in output
    # Stopped by the interrupt, not by the hard stop 9 s later.
    assert "HARD STOP" not in output
    assert "stopping (interrupted by SIGINT)" in output
    steps = [line for line in lines if line.startswith("step warehouse: ")]
    assert len(steps) == 1, output
    assert steps[0].startswith("step warehouse: INTERRUPT: ")  # stopped, not failed
    assert steps[0].endswith(
        "interrupted by SIGINT: the query in progress was interrupted, nothing was loaded"
    )
    assert "run CANCELED" in output, output
    # The interrupted transaction was rolled back; the file opens and holds what was committed.
    with duckdb.connect(str(db), read_only=True) as conn:
        assert conn.execute("SELECT note FROM main.kept").fetchall() == [("committed",)]
