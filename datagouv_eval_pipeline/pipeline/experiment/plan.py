"""Which cells and tasks an experiment covers, and what it should cost (the dry run)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from datagouv_eval_pipeline.core.benchmark import (
    BENCHMARK_CONFIG_DIR,
    Cell,
    SelectionError,
    load_benchmark_config,
    select_cells,
)
from datagouv_eval_pipeline.core.tasks import TASK_SPECS_DIR, TaskSpec, TaskStatus, load_task_specs
from datagouv_eval_pipeline.pipeline.experiment.cache import AgentRunCache
from datagouv_eval_pipeline.pipeline.experiment.estimate import CellEstimate, estimate_cells

__all__ = ["ExperimentPlan", "SelectionError", "plan_experiment", "select_tasks"]


@dataclass(frozen=True)
class ExperimentPlan:
    """The cells and tasks of one experiment.

    Attributes:
        cells: Every selected cell (of the selected evaluation types and models).
        tasks: The selected active tasks, in id order.
        repeats: Runs per (cell, task).
        evaluation_types: The selected types (empty: every active type).
        chosen: Whether models or cells were chosen by name (``--models``, ``--cells``): the
            run then covers exactly ``cells``, not every cell of their partition range.
    """

    cells: tuple[Cell, ...]
    tasks: tuple[TaskSpec, ...]
    repeats: int = 1
    evaluation_types: tuple[str, ...] = field(default=())
    chosen: bool = False

    @property
    def cell_keys(self) -> list[str]:
        """The cell keys, in configuration order."""
        return [cell.key for cell in self.cells]

    @property
    def task_runs(self) -> int:
        """Cells × tasks × repeats."""
        return len(self.cells) * len(self.tasks) * self.repeats

    def estimate(
        self,
        *,
        cache: AgentRunCache | None = None,
        snapshot_id: str | None = None,
        rerun: bool = False,
        live: bool = False,
    ) -> list[CellEstimate]:
        """Task runs, cached runs, requests, tokens and cost per cell (``experiment.estimate``).

        Args:
            cache: The agent-run cache to consult (None: nothing counts as cached).
            snapshot_id: The twin snapshot the runs would read; None for a live run.
            rerun: The run ignores the cache.
            live: A live run (offline-only cells skipped, nothing cached).
        """
        return estimate_cells(
            self.cells,
            self.tasks,
            repeats=self.repeats,
            cache=cache,
            snapshot_id=snapshot_id,
            rerun=rerun,
            live=live,
        )


def select_tasks(specs: Sequence[TaskSpec], task_ids: Sequence[str] = ()) -> list[TaskSpec]:
    """The active tasks, or exactly ``task_ids`` (inactive ones included when named).

    Raises:
        SelectionError: An id matches no spec.
    """
    if not task_ids:
        return sorted(
            (spec for spec in specs if spec.meta.status == TaskStatus.ACTIVE),
            key=lambda spec: spec.task_id,
        )
    by_id = {spec.task_id: spec for spec in specs}
    unknown = [task_id for task_id in task_ids if task_id not in by_id]
    if unknown:
        raise SelectionError(
            f"unknown task id(s): {', '.join(unknown)}; known: {', '.join(sorted(by_id))}"
        )
    return [by_id[task_id] for task_id in dict.fromkeys(task_ids)]


def plan_experiment(
    *,
    evaluation_types: Sequence[str] = (),
    task_ids: Sequence[str] = (),
    repeats: int = 1,
    config_dir: Path = BENCHMARK_CONFIG_DIR,
    tasks_dir: Path = TASK_SPECS_DIR,
    models: Sequence[str] = (),
    cells: Sequence[str] = (),
) -> ExperimentPlan:
    """Load the YAML and select the experiment's cells and tasks.

    Args:
        evaluation_types: Restrict to these types (inactive ones included when named).
        task_ids: Restrict to these tasks (default: every active task).
        repeats: Runs per (cell, task), at least 1.
        config_dir: The benchmark configuration directory.
        tasks_dir: The task specs directory.
        models: ``PROVIDER/MODEL`` names or globs, active or not, in place of the active
            models (``benchmark.selection``).
        cells: Keep only these cell keys (exact, of any type and model) or globs.

    Raises:
        SelectionError: Unknown evaluation type, model, cell or task id, or repeats below 1.
        SpecErrors: Invalid task specs or benchmark YAML (every problem listed).
    """
    if repeats < 1:
        raise SelectionError(f"repeats must be at least 1, got {repeats}")
    config = load_benchmark_config(config_dir)
    try:
        selected = select_cells(
            config, evaluation_types=evaluation_types, models=models, cells=cells
        )
    except SelectionError:
        raise
    except ValueError as error:
        raise SelectionError(str(error), "--evaluation-type") from error
    tasks = select_tasks(load_task_specs([tasks_dir]), task_ids)
    return ExperimentPlan(
        tuple(selected),
        tuple(tasks),
        repeats,
        tuple(evaluation_types),
        chosen=bool(models or cells),
    )
