"""Shared pieces of the pipeline tests: resources on temporary paths, jobs, counters.

Every test runs against the real twin (started by ``CatalogResource`` on first use) with the
offline baselines and the deterministic judge, on one or two tasks and MCP cells only: code
cells need the sandbox, which is slow.
"""

from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
import pytest

from datagouv_eval_pipeline.core.benchmark.cells import Cell
from datagouv_eval_pipeline.core.tasks import TASK_SPECS_DIR
from datagouv_eval_pipeline.core.tasks.spec import TaskSpec
from datagouv_eval_pipeline.defs import agent_runs as agent_runs_module
from datagouv_eval_pipeline.defs import catalog_validation as catalog_validation_module
from datagouv_eval_pipeline.defs import checks as checks_module
from datagouv_eval_pipeline.defs import judge_scores as judge_scores_module
from datagouv_eval_pipeline.defs import task_specs as task_specs_module
from datagouv_eval_pipeline.defs import versions as versions_module
from datagouv_eval_pipeline.defs import warehouse as warehouse_module
from datagouv_eval_pipeline.defs.action_mappings import action_mappings
from datagouv_eval_pipeline.defs.agent_runs import agent_runs
from datagouv_eval_pipeline.defs.judge_scores import judge_scores
from datagouv_eval_pipeline.defs.partitions import CELLS, register_cells
from datagouv_eval_pipeline.defs.resources import (
    CatalogResource,
    ExperimentSettings,
    JudgeResource,
    RunStoreResource,
    WarehouseResource,
)
from datagouv_eval_pipeline.defs.warehouse import warehouse
from datagouv_eval_pipeline.pipeline.agents.runner import CellRun, execute_cell
from datagouv_eval_pipeline.pipeline.experiment import stages
from datagouv_eval_pipeline.pipeline.experiment.store import RunStore

TASK_IDS = ["task_0002", "task_0003"]
"""Two quick tasks (a few calls each for the offline baselines)."""

MCP_CELLS = [cell.key for cell in CELLS if cell.capabilities == ("mcp",)]
"""The nine MCP-only cells, contiguous in partition order."""

CELL_STAGES = [agent_runs, action_mappings, judge_scores]
STAGE_NAMES = ["agent_runs", "action_mappings", "judge_scores"]

# Modules that read the task specs directory at run time (patched to a temporary copy).
SPEC_READERS = (
    task_specs_module,
    catalog_validation_module,
    agent_runs_module,
    judge_scores_module,
    warehouse_module,
    checks_module,
    versions_module,
)

RANGE_START = "dagster/asset_partition_range_start"
RANGE_END = "dagster/asset_partition_range_end"


@dataclass
class Paths:
    """Where one test's run store and warehouse live."""

    root: Path

    @property
    def store_root(self) -> Path:
        return self.root / "run_store"

    @property
    def db(self) -> Path:
        return self.root / "warehouse.duckdb"

    @property
    def store(self) -> RunStore:
        return RunStore(self.store_root)


def resources(paths: Paths, task_ids: Sequence[str] = TASK_IDS, **settings: Any) -> dict[str, Any]:
    """The pipeline's resources on temporary paths, the twin as catalog."""
    # Cells run in this process unless a test asks otherwise: the counters below wrap the
    # runner here, and a worker process would not see them.
    settings.setdefault("worker_processes", 0)
    return {
        "experiment": ExperimentSettings(task_ids=list(task_ids), **settings),
        "catalog": CatalogResource(),
        "run_store": RunStoreResource(root=str(paths.store_root)),
        "warehouse": WarehouseResource(path=str(paths.db)),
        "judge": JudgeResource(),
    }


def cells_job_defs(paths: Paths, **settings: Any) -> dg.Definitions:
    """The cell stages, the warehouse and their checks, with one job over all of them."""
    job = dg.define_asset_job(
        "cells_and_warehouse",
        selection=dg.AssetSelection.assets(*CELL_STAGES, warehouse),
    )
    return dg.Definitions(
        assets=[*CELL_STAGES, warehouse],
        asset_checks=[
            checks_module.transcripts_present,
            checks_module.no_duplicate_runs,
            checks_module.cells_succeeded,
            checks_module.runs_match_partitions,
        ],
        jobs=[job],
        resources=resources(paths, **settings),
        executor=dg.in_process_executor,
    )


def cells_instance(*keys: str) -> dg.DagsterInstance:
    """An ephemeral instance whose partitions are the active cells and ``keys``."""
    instance = dg.DagsterInstance.ephemeral()
    register_cells(instance, keys)
    return instance


def run_range(
    defs: dg.Definitions, first: str, last: str, instance: dg.DagsterInstance
) -> dg.ExecuteInProcessResult:
    """One Dagster run over the partition range ``first``…``last`` (the backfill policy)."""
    register_cells(instance, [first, last])
    return defs.resolve_job_def("cells_and_warehouse").execute_in_process(
        instance=instance, tags={RANGE_START: first, RANGE_END: last}, raise_on_error=False
    )


def materialize_cell(paths: Paths, key: str, **settings: Any) -> dg.ExecuteInProcessResult:
    """The three cell stages of one partition."""
    return dg.materialize(
        CELL_STAGES,
        partition_key=key,
        resources=resources(paths, **settings),
        instance=cells_instance(key),
        raise_on_error=False,
    )


def materialize_warehouse(paths: Paths) -> dg.ExecuteInProcessResult:
    """The warehouse tables from whatever the run store holds."""
    return dg.materialize([warehouse], resources=resources(paths))


def query(db: Path, sql: str) -> list[tuple[Any, ...]]:
    """Rows of a read-only query on the warehouse file."""
    with duckdb.connect(str(db), read_only=True) as conn:
        return conn.execute(sql).fetchall()


def check_evaluation(result: dg.ExecuteInProcessResult, name: str) -> dg.AssetCheckEvaluation:
    """The evaluation of the check called ``name`` in a run."""
    found = [e for e in result.get_asset_check_evaluations() if e.check_name == name]
    assert len(found) == 1, [e.check_name for e in result.get_asset_check_evaluations()]
    return found[0]


@dataclass
class TaskRunCounter:
    """Agent task runs executed (a model asked; skipped runs cost nothing and do not count)."""

    fail_cells: set[str] = field(default_factory=set)
    per_cell: Counter[str] = field(default_factory=Counter)
    per_task: Counter[str] = field(default_factory=Counter)

    @property
    def total(self) -> int:
        return sum(self.per_cell.values())

    def reset(self) -> None:
        self.per_cell.clear()
        self.per_task.clear()


@contextmanager
def counting_task_runs(monkeypatch: pytest.MonkeyPatch) -> Iterator[TaskRunCounter]:
    """Wrap the agent runner the stage calls; cells in ``fail_cells`` raise instead."""
    counter = TaskRunCounter()
    real = execute_cell

    def wrapper(cell: Cell, tasks: Sequence[TaskSpec], **options: Any) -> CellRun:
        if cell.key in counter.fail_cells:
            raise RuntimeError(f"provider exploded for {cell.key}")
        run = real(cell, tasks, **options)
        for trace in run.traces:
            if trace.status != "skipped":
                counter.per_cell[cell.key] += 1
                counter.per_task[trace.task_id] += 1
        return run

    monkeypatch.setattr(stages, "execute_cell", wrapper)
    yield counter


def copy_task_specs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy of ``task_specs/`` that the assets read instead of the real one."""
    import shutil

    copy = tmp_path / "task_specs"
    shutil.copytree(TASK_SPECS_DIR, copy)
    for module in SPEC_READERS:
        monkeypatch.setattr(module, "TASK_SPECS_DIR", copy)
    return copy
