"""Time the report stage (report page, Markdown, results browser) on the default experiment.

Reads a warehouse the pipeline wrote (``./dev run`` first; default ``data/warehouse.duckdb``
and ``data/run_store``), copies it, and times :func:`build_report` with its sources, as the
``experiment_report`` asset runs it, in a fresh process per round (matplotlib and Jinja start-up
included, as in a run). Then it builds a copy with ``--scale`` times the rows (each cell copied
under another model name, dbt marts and statistics rebuilt) and times that too.

    python3 -m uv run python bench/bench_report.py            # 3 rounds, scale 10
    python3 -m uv run python bench/bench_report.py --rounds 5 --scale 10
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

from datagouv_eval_pipeline.pipeline.warehouse.error_bars import compute_statistics
from datagouv_eval_pipeline.pipeline.warehouse.schema import SCHEMA, TABLES

ROOT = Path(__file__).resolve().parents[1]

_ONE_ROUND = """
import json, sys, time
from pathlib import Path
start = time.perf_counter()
from datagouv_eval_pipeline.core.benchmark.cells import expand_cells
from datagouv_eval_pipeline.core.benchmark.loader import load_benchmark_config
from datagouv_eval_pipeline.pipeline.report import build_report, read_sources
from datagouv_eval_pipeline.core.tasks import TASK_SPECS_DIR, load_task_specs
imported = time.perf_counter()
db, store, out = map(Path, sys.argv[1:4])
sources = read_sources(store_root=store, specs=load_task_specs([TASK_SPECS_DIR]),
                       cells=expand_cells(load_benchmark_config()))
built = build_report(db, out, sources)
done = time.perf_counter()
size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
print(json.dumps({"imports": imported - start, "build": done - imported, "total": done - start,
                  "pages": built.pages, "runs": len(built.view.data.runs),
                  "cells": len(built.view.data.cells), "megabytes": size / 1e6}))
"""


def _one_round(db: Path, store: Path, out: Path) -> dict[str, float]:
    shutil.rmtree(out, ignore_errors=True)
    completed = subprocess.run(
        [sys.executable, "-c", _ONE_ROUND, str(db), str(store), str(out)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    result: dict[str, float] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


def _scaled_copy(source: Path, target: Path, scale: int, work: Path) -> None:
    """Copy ``source`` with every cell repeated ``scale`` times under other model names."""
    shutil.copy(source, target)
    with duckdb.connect(str(target)) as conn:
        for copy in range(1, scale):
            suffix = f"-x{copy}"
            for table in TABLES:
                columns = table.column_names
                if "cell_key" not in columns:
                    continue
                replace = [f"cell_key || '{suffix}' AS cell_key"]
                if "run_id" in columns:
                    replace.append(f"replace(run_id, cell_key, cell_key || '{suffix}') AS run_id")
                if "model_name" in columns:
                    replace.append(f"model_name || '{suffix}' AS model_name")
                conn.execute(
                    f"INSERT INTO {SCHEMA}.{table.name} SELECT * REPLACE ({', '.join(replace)}) "
                    f"FROM {SCHEMA}.{table.name} WHERE cell_key NOT LIKE '%-x%'"
                )
        compute_statistics(conn)
    project = ROOT / "dbt_metrics"
    subprocess.run(
        [
            str(Path(sys.executable).with_name("dbt")),
            "run",
            "--project-dir",
            str(project),
            "--profiles-dir",
            str(project),
            "--target-path",
            str(work / "target"),
            "--log-path",
            str(work / "logs"),
            "--quiet",
        ],
        env={**os.environ, "DATAGOUV_EVAL_DUCKDB": str(target)},
        check=True,
    )


def _summary(label: str, rounds: list[dict[str, float]]) -> str:
    totals = [r["total"] for r in rounds]
    builds = [r["build"] for r in rounds]
    first = rounds[0]
    return (
        f"{label}: {int(first['cells'])} cells, {int(first['runs'])} runs, "
        f"{int(first['pages'])} pages, {first['megabytes']:.1f} MB; "
        f"total best {min(totals):.2f} s (median {statistics.median(totals):.2f} s), "
        f"of which build best {min(builds):.2f} s (median {statistics.median(builds):.2f} s)"
    )


def main() -> None:
    """Run the benchmark and print one line per scale."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=ROOT / "data" / "warehouse.duckdb")
    parser.add_argument("--run-store", type=Path, default=ROOT / "data" / "run_store")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scale", type=int, default=10)
    args = parser.parse_args()
    if not args.db.exists():
        sys.exit(f"{args.db}: no warehouse; run `./dev run` first")
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        work = Path(tmp)
        db = work / "warehouse.duckdb"
        shutil.copy(args.db, db)
        rounds = [_one_round(db, args.run_store, work / "out") for _ in range(args.rounds)]
        print(_summary("default experiment", rounds), flush=True)
        scaled = work / "scaled.duckdb"
        started = time.perf_counter()
        _scaled_copy(db, scaled, args.scale, work)
        print(f"(scaled copy built in {time.perf_counter() - started:.1f} s)", flush=True)
        rounds = [_one_round(scaled, args.run_store, work / "out") for _ in range(args.rounds)]
        print(_summary(f"{args.scale}x rows", rounds))


if __name__ == "__main__":
    main()
