"""Wall time of the whole default experiment: through Dagster, and as a plain Python loop.

Three measurements, each in a fresh process with its own empty run store, DuckDB file and Dagster
instance (temporary directories), so nothing is cached between them:

1. ``pipeline``: ``datagouv-eval experiment`` (the README's main command): one Dagster run of every
   asset over every cell, dbt and the report included;
2. ``plain loop``: the same work calling the same functions (``experiment.stages``) in a loop:
   start the twin, pre-flight, the cells on the same lanes as the pipeline, map + judge each
   cell, load DuckDB, the statistics, ``dbt build``, the report;
3. ``incremental``: after (1), one task spec's prompt is edited and the pipeline runs again on the
   same store; the number of agent task runs executed should equal the number of cells.

The overhead is pipeline / plain loop (goal ≤ 1.25); the goal for (1) is under 3 minutes on 2 cores
for the grown experiment (about 50 tasks).

``--copies N`` simulates a larger task set: N synthetic copies of every active task
(``task_9xxx``, same prompt and references, another id) are written into ``task_specs/`` for the
duration of the bench and removed afterwards (also on failure). Each measurement prints its wall
time and the CPU time of the process tree (user + system), the steadier figure on a shared
machine.

Run: ``python3 -m uv run python bench/bench_pipeline.py [--copies 2] [--skip-loop]
[--skip-incremental]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINES = ROOT / "snapshots" / "baselines"
EDITED_SPEC = ROOT / "task_specs" / "task_0001.yml"
CLI = str(Path(sys.executable).parent / "datagouv-eval")

LOOP = r"""
import subprocess, sys, os, time
T0 = time.perf_counter()
from pathlib import Path
from datagouv_eval_pipeline.core.benchmark.cells import expand_cells
from datagouv_eval_pipeline.core.benchmark.loader import load_benchmark_config
from datagouv_eval_pipeline.pipeline.experiment import stages
from datagouv_eval_pipeline.pipeline.experiment.plan import select_tasks
from datagouv_eval_pipeline.core.judges.deterministic import DeterministicJudge
from datagouv_eval_pipeline.core.semantic.registry import load_registry
from datagouv_eval_pipeline.core.tasks import TASK_SPECS_DIR, load_task_specs
from datagouv_eval_pipeline.world.api.server import TwinServer
from datagouv_eval_pipeline.pipeline.preflight.validator import ValidatorConfig, active, validate
from datagouv_eval_pipeline.pipeline.warehouse.loader import load_experiment

phases = {"imports": time.perf_counter() - T0}
mark = time.perf_counter()
specs = load_task_specs([TASK_SPECS_DIR])
tasks = select_tasks(specs)
by_id = {s.task_id: s for s in specs}
cells = expand_cells(load_benchmark_config())
registry, judge = load_registry(), DeterministicJudge()
loads = []
with TwinServer() as urls:
    import datagouv_eval_pipeline.world.catalogue.catalog as catalog
    store = catalog.CatalogStore.load()
    report = validate(active(specs), ValidatorConfig(urls=urls, now=store.now))
    ok = [t for t in tasks if t.task_id not in set(report.quarantined)]
    phases["specs, twin, pre-flight"] = time.perf_counter() - mark
    # The agent stage on the same lanes as the pipeline's (a second lane in a worker process),
    # so the ratio compares orchestration, not parallelism.
    from datagouv_eval_pipeline.core.benchmark.config import ProviderKind
    from datagouv_eval_pipeline.pipeline.experiment.lanes import plan_lanes, provider_slots,
    running_lanes
    mark = time.perf_counter()
    slots = provider_slots(load_benchmark_config())
    offline = {c.model.provider for c in cells if c.model.kind == ProviderKind.OFFLINE}
    plans = {
        name: plan_lanes(name, slots[name], max_per_cell=8, offline=name in offline)
        for name in dict.fromkeys(c.model.provider for c in cells)
    }
    arguments = {"tasks": ok, "twin_urls": urls, "snapshot_id": store.snapshot_id}

    def here(cell, settings, cancel):
        return stages.run_agents(cell, settings=settings, cancel=cancel, **arguments)

    with running_lanes(cells, plans, here, lambda cell: arguments,
                       needs_parent=lambda cell: cell.mcp_build is not None) as futures:
        results = {key: future.result() for key, future in futures.items()}
    agents = time.perf_counter() - mark
    later = 0.0
    for cell in cells:
        runs = results[cell.key].document
        mark = time.perf_counter()
        mappings = stages.map_actions(runs, registry)
        scores = stages.judge_cell(runs, mappings, by_id, judge)
        loads.append(stages.cell_load(runs, mappings, scores))
        later += time.perf_counter() - mark
    phases["agent runs"] = agents
    phases["mapping + judging"] = later
mark = time.perf_counter()
db = os.environ["DATAGOUV_EVAL_DUCKDB"]
load_experiment(db, loads, [c.key for c in cells], tasks=specs)
phases["warehouse load"] = time.perf_counter() - mark
mark = time.perf_counter()
from datagouv_eval_pipeline.pipeline.warehouse.error_bars import compute_statistics
from datagouv_eval_pipeline.pipeline.warehouse.loader import connect
with connect(db) as conn:
    compute_statistics(conn)
phases["statistics"] = time.perf_counter() - mark
mark = time.perf_counter()
dbt = str(Path(sys.executable).parent / "dbt")
subprocess.run([dbt, "build", "--quiet", "--project-dir", "dbt_metrics",
                "--profiles-dir", "dbt_metrics"], check=True, cwd=os.getcwd())
phases["dbt build"] = time.perf_counter() - mark
mark = time.perf_counter()
from datagouv_eval_pipeline.pipeline.report import build_report
build_report(Path(db))
phases["report"] = time.perf_counter() - mark
print("task runs", sum(len(l.runs) for l in loads))
print("phases: " + ", ".join(f"{k} {v:.1f} s" for k, v in phases.items()))
"""


def _env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    env |= {
        "DAGSTER_HOME": str(tmp / "dagster_home"),
        "DATAGOUV_EVAL_RUN_STORE": str(tmp / "run_store"),
        "DATAGOUV_EVAL_DUCKDB": str(tmp / "warehouse.duckdb"),
    }
    (tmp / "dagster_home").mkdir(parents=True, exist_ok=True)
    home_config = ROOT / "dagster_home" / "dagster.yaml"
    if home_config.exists():
        shutil.copy(home_config, tmp / "dagster_home" / "dagster.yaml")
    return env


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    started, cpu = time.perf_counter(), _cpu()
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-4000:] + done.stderr[-4000:])
        raise SystemExit(f"{' '.join(command[:3])}... failed ({done.returncode})")
    print(f"  [{elapsed:.1f} s wall, {_cpu() - cpu:.1f} s CPU, load {os.getloadavg()[0]:.1f}]")
    return elapsed, done.stdout


def _write_copies(copies: int) -> list[Path]:
    """``copies`` synthetic copies of every active task (``task_9xxx``) and of its baselines.

    Returns the files and directories written.
    """
    import yaml

    written: list[Path] = []
    sources = sorted((ROOT / "task_specs").glob("task_0*.yml"))
    number = 9001
    for _ in range(copies):
        for source in sources:
            text = source.read_text(encoding="utf-8")
            if not re.search(r"^\s+status: active$", text, re.MULTILINE):
                continue
            stem = f"task_{number}"
            original = yaml.safe_load(text)["task_id"]
            target = source.with_name(f"{stem}.yml")
            target.write_text(
                text.replace(f"task_id: {original}", f"task_id: {stem}", 1), encoding="utf-8"
            )
            written.append(target)
            # The pre-flight compares each task's objects with its own reviewed baselines.
            baselines = BASELINES / original
            if baselines.is_dir():
                (BASELINES / stem).mkdir()
                written.append(BASELINES / stem)
                for baseline in baselines.glob("*.json"):
                    record = json.loads(baseline.read_text(encoding="utf-8"))
                    record["task_id"] = stem
                    (BASELINES / stem / baseline.name).write_text(
                        json.dumps(record, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
                    )
            number += 1
    return written


def main() -> None:
    """Run the measurements and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=0, help="synthetic copies of each task")
    parser.add_argument("--skip-loop", action="store_true", help="no plain-loop measurement")
    parser.add_argument("--skip-incremental", action="store_true", help="no incremental run")
    args = parser.parse_args()
    python = sys.executable
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; "
        f"Python {platform.python_version()}"
    )
    copies = _write_copies(args.copies)
    try:
        _measure(python, args, len(copies))
    finally:
        for path in copies:
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)


def _measure(python: str, args: argparse.Namespace, copies: int) -> None:
    if copies:
        print(f"{copies} synthetic task files and baselines written (removed at the end)")
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        env_pipeline = _env(Path(a))
        pipeline_s, out = _timed([CLI, "experiment"], env_pipeline)
        executed = re.search(r"agent task runs: (\d+) executed, (\d+) reused", out)
        print(
            f"pipeline (datagouv-eval experiment): {pipeline_s:6.1f} s  "
            f"[{executed.group(0) if executed else 'n/a'}]"
        )
        if not args.skip_loop:
            loop_s, out = _timed([python, "-c", LOOP], _env(Path(b)))
            print(f"plain loop, same functions:          {loop_s:6.1f} s")
            print("  " + out.strip().splitlines()[-1])
            ratio = pipeline_s / loop_s
            print(f"orchestration overhead:              {ratio:6.2f}x (goal <= 1.25)")
        if args.skip_incremental:
            return
        original = EDITED_SPEC.read_text(encoding="utf-8")
        try:
            EDITED_SPEC.write_text(
                original.replace("prompt: >", "prompt: >\n  Dites-moi :", 1), encoding="utf-8"
            )
            incremental_s, out = _timed([CLI, "experiment"], env_pipeline)
        finally:
            EDITED_SPEC.write_text(original, encoding="utf-8")
        executed = re.search(r"agent task runs: (\d+) executed, (\d+) reused", out)
        print(
            f"incremental (one spec edited):       {incremental_s:6.1f} s  "
            f"[{executed.group(0) if executed else 'n/a'}]"
        )


if __name__ == "__main__":
    main()
