"""Ctrl-C stops a long query of ``datagouv-eval sql`` at once.

Before, DuckDB ran the query on the main thread, where Python cannot run a signal handler until
the query returns: Ctrl-C did nothing for as long as the query lasted (a cross join of two
billion-row ranges: hours). The command is run as a user runs it, in a subprocess that gets a
real SIGINT once the query is burning CPU.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import psutil  # type: ignore[import-untyped]  # no stubs in the lock

ENDLESS = "select count(*) from range(1000000000) a, range(1000000000) b"

BUSY_CPU_S = 1.5
"""CPU seconds after which the query is surely running (starting the command costs < 0.5 s)."""


def test_ctrl_c_interrupts_a_long_query_without_a_traceback(tmp_path: Path) -> None:
    db = tmp_path / "warehouse.duckdb"
    duckdb.connect(str(db)).close()
    process = subprocess.Popen(
        [str(Path(sys.executable).with_name("datagouv-eval")), "sql", "--db", str(db), ENDLESS],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        watched = psutil.Process(process.pid)
        while process.poll() is None:
            cpu = watched.cpu_times()
            if cpu.user + cpu.system > BUSY_CPU_S:
                break
            time.sleep(0.1)
        assert process.poll() is None, "the query ended on its own"
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=120)  # generous: only a hang fails here
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, err
    assert err.strip() == "interrupted: the query was stopped, nothing was changed"
    assert out == ""
