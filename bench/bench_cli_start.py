"""Wall time of `datagouv-eval --help` and `datagouv-eval sql "select 1"`, each in a new process.

Usage: python3 -m uv run python bench/bench_cli_start.py [ROUNDS]   (default 7)

Prints the best and median wall time of each command over ROUNDS runs, after one warm-up run
(the first start after an install also compiles bytecode). The `sql` rounds run against a small
DuckDB file written for the purpose, so no experiment is needed.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

COMMAND = str(Path(sys.executable).parent / "datagouv-eval")


def _time(args: list[str], rounds: int) -> list[float]:
    subprocess.run([COMMAND, *args], capture_output=True, check=True)
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run([COMMAND, *args], capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    """Time both commands and print one line each."""
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "warehouse.duckdb"
        duckdb.connect(str(db)).close()
        for label, args in (
            ("datagouv-eval --help", ["--help"]),
            ('datagouv-eval sql "select 1"', ["sql", "--db", str(db), "select 1"]),
        ):
            times = _time(args, rounds)
            print(
                f"{label:32} best {min(times):.2f} s, median {statistics.median(times):.2f} s "
                f"({rounds} rounds)"
            )


if __name__ == "__main__":
    main()
