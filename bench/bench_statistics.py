"""Time the statistics stage on the default experiment's warehouse and on 10x its rows.

Usage (after ``./dev run``, which writes ``data/warehouse.duckdb``)::

    python3 -m uv run python bench/bench_statistics.py [WAREHOUSE] [--scale 10] [--rounds 3]

Works on copies in a temporary directory; the given file is only read. For each size it times
``compute_statistics`` (``eval.metric_estimates`` + ``eval.comparisons``) and the gate
(``evaluate_gate`` + ``write_gate_results``) against a second experiment run. The bigger copy
adds ``scale - 1`` extra repeats of every run (values of bounded metrics flipped or jittered
at random, 10 % of them, so that pairs differ) to the latest tables and to both experiments'
history, which multiplies the rows the stage reads by ``scale``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import duckdb

from datagouv_eval_pipeline.pipeline.warehouse.error_bars import compute_statistics
from datagouv_eval_pipeline.pipeline.warehouse.gate import evaluate_gate, write_gate_results
from datagouv_eval_pipeline.pipeline.warehouse.history import latest_experiment

SECOND = "bench-second-run"


def _second_experiment(conn: duckdb.DuckDBPyConnection) -> None:
    """Record a copy of the latest experiment as a later run (the gate then has pairs)."""
    first = latest_experiment(conn)
    if first is None:
        raise SystemExit("the warehouse has no experiment recorded: run ./dev run first")
    conn.execute(
        "INSERT INTO eval.experiments SELECT * REPLACE (? AS experiment_id, "
        "recorded_at + INTERVAL 1 HOUR AS recorded_at) FROM eval.experiments "
        "WHERE experiment_id = ?",
        [SECOND, first],
    )
    for table in ("runs_history", "metrics_history"):
        conn.execute(
            f"INSERT INTO eval.{table} SELECT * REPLACE (? AS experiment_id) FROM eval.{table} "
            "WHERE experiment_id = ?",
            [SECOND, first],
        )


def _perturbed(column: str = "value") -> str:
    return (
        f"CASE WHEN bounded AND {column} IS NOT NULL AND random() < 0.1 "
        f"THEN CASE WHEN {column} IN (0, 1) THEN 1 - {column} ELSE random() END "
        f"ELSE {column} END"
    )


def _scale(conn: duckdb.DuckDBPyConnection, factor: int) -> None:
    """Add ``factor - 1`` repeats of every run and metric row (latest tables and history)."""
    for k in range(1, factor):
        offset = 1000 * k
        rid = f"cell_key || '|' || task_id || '|' || (repeat_index + {offset})"
        conn.execute(
            f"INSERT INTO eval.runs SELECT * REPLACE (repeat_index + {offset} AS repeat_index, "
            f"{rid} AS run_id) FROM eval.runs WHERE repeat_index < 1000"
        )
        conn.execute(
            f"INSERT INTO eval.metrics SELECT * REPLACE (repeat_index + {offset} AS repeat_index, "
            f"{rid} AS run_id, {_perturbed()} AS value) FROM eval.metrics "
            "WHERE repeat_index < 1000"
        )
        conn.execute(
            "INSERT INTO eval.runs_history SELECT * REPLACE (repeat_index + "
            f"{offset} AS repeat_index, {rid} AS run_id) FROM eval.runs_history "
            "WHERE repeat_index < 1000"
        )
        conn.execute(
            "INSERT INTO eval.metrics_history SELECT * REPLACE (repeat_index + "
            f"{offset} AS repeat_index, {rid} AS run_id, {_perturbed()} AS value) "
            "FROM eval.metrics_history WHERE repeat_index < 1000"
        )


def _time(db: Path, rounds: int) -> dict[str, object]:
    stats_times, gate_times = [], []
    with duckdb.connect(str(db)) as conn:
        metric_rows = conn.execute("SELECT count(*) FROM eval.metrics").fetchone()
        for _ in range(rounds):
            started = time.perf_counter()
            result = compute_statistics(conn)
            stats_times.append(time.perf_counter() - started)
            started = time.perf_counter()
            report = evaluate_gate(conn)
            write_gate_results(conn, report)
            gate_times.append(time.perf_counter() - started)
    return {
        "metric_rows": metric_rows[0] if metric_rows else 0,
        "estimates": result.estimates,
        "comparisons": result.comparisons // 2,
        "gate_comparisons": len(report.comparisons),
        "gate_passed": report.passed,
        "statistics_s": stats_times,
        "gate_s": gate_times,
    }


def main(argv: list[str] | None = None) -> int:
    """Print the figures of both sizes."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("warehouse", nargs="?", default="data/warehouse.duckdb", type=Path)
    parser.add_argument("--scale", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    if not args.warehouse.exists():
        print(f"{args.warehouse}: no warehouse; run ./dev run first", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        for factor in (1, args.scale):
            db = Path(tmp) / f"x{factor}.duckdb"
            shutil.copy(args.warehouse, db)
            with duckdb.connect(str(db)) as conn:
                _second_experiment(conn)
                _scale(conn, factor)
            figures = _time(db, args.rounds)
            stats_s = ", ".join(f"{t:.2f}" for t in figures["statistics_s"])  # type: ignore[attr-defined]
            gate_s = ", ".join(f"{t:.2f}" for t in figures["gate_s"])  # type: ignore[attr-defined]
            print(
                f"x{factor}: {figures['metric_rows']} metric rows, {figures['estimates']} "
                f"estimates, {figures['comparisons']} pair comparisons, "
                f"{figures['gate_comparisons']} gate comparisons (passed: "
                f"{figures['gate_passed']}); statistics {stats_s} s; gate {gate_s} s"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
