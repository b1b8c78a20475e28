"""Which cells and tasks an experiment covers, and what it should cost (the dry run)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from datagouv_eval_pipeline.benchmark.cells import Cell, expand_cells
from datagouv_eval_pipeline.benchmark.loader import BENCHMARK_CONFIG_DIR, load_benchmark_config
from datagouv_eval_pipeline.tasks.loader import TASK_SPECS_DIR, load_task_specs
from datagouv_eval_pipeline.tasks.spec import TaskSpec, TaskStatus

# A dry-run estimate cannot know how an agent will behave; these are the stated assumptions.
ESTIMATED_INPUT_TOKENS_PER_REQUEST = 4_000
ESTIMATED_OUTPUT_TOKENS_PER_REQUEST = 300


class SelectionError(ValueError):
    """A filter names an evaluation type or task that does not exist."""


@dataclass(frozen=True)
class CellEstimate:
    """What one cell should cost.

    Attributes:
        cell_key: The cell.
        model: ``provider/name``.
        is_llm: False for offline baselines.
        task_runs: Tasks × repeats.
        requests: Estimated model requests (one per required action of the optimal chain,
            plus the final answer).
        input_tokens: Estimated input tokens.
        output_tokens: Estimated output tokens.
        cost: Estimated cost in the model's currency; None when the model is unpriced.
        currency: ISO 4217 code.
    """

    cell_key: str
    model: str
    is_llm: bool
    task_runs: int
    requests: int
    input_tokens: int
    output_tokens: int
    cost: float | None
    currency: str


@dataclass(frozen=True)
class ExperimentPlan:
    """The cells and tasks of one experiment.

    Attributes:
        cells: Every cell of the selected evaluation types.
        tasks: The selected active tasks, in id order.
        repeats: Runs per (cell, task).
        evaluation_types: The selected types (empty: every active type).
    """

    cells: tuple[Cell, ...]
    tasks: tuple[TaskSpec, ...]
    repeats: int = 1
    evaluation_types: tuple[str, ...] = field(default=())

    @property
    def cell_keys(self) -> list[str]:
        """The cell keys, in configuration order."""
        return [cell.key for cell in self.cells]

    @property
    def task_runs(self) -> int:
        """Cells × tasks × repeats."""
        return len(self.cells) * len(self.tasks) * self.repeats

    def estimate(self) -> list[CellEstimate]:
        """Requests, tokens and cost per cell (see the module's stated assumptions)."""
        requests_per_round = sum(
            len(task.chain("optimal").required_actions) + 1 for task in self.tasks
        )
        out: list[CellEstimate] = []
        for cell in self.cells:
            requests = requests_per_round * self.repeats
            tokens_in = requests * ESTIMATED_INPUT_TOKENS_PER_REQUEST
            tokens_out = requests * ESTIMATED_OUTPUT_TOKENS_PER_REQUEST
            model = cell.model
            cost = None
            if model.input_price_per_mtok is not None and model.output_price_per_mtok is not None:
                cost = (
                    tokens_in * model.input_price_per_mtok
                    + tokens_out * model.output_price_per_mtok
                ) / 1_000_000
            out.append(
                CellEstimate(
                    cell_key=cell.key,
                    model=f"{model.provider}/{model.name}",
                    is_llm=model.is_llm,
                    task_runs=len(self.tasks) * self.repeats,
                    requests=requests,
                    input_tokens=tokens_in,
                    output_tokens=tokens_out,
                    cost=cost,
                    currency=model.currency,
                )
            )
        return out


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
) -> ExperimentPlan:
    """Load the YAML and select the experiment's cells and tasks.

    Args:
        evaluation_types: Restrict to these types (inactive ones included when named).
        task_ids: Restrict to these tasks (default: every active task).
        repeats: Runs per (cell, task), at least 1.
        config_dir: The benchmark configuration directory.
        tasks_dir: The task specs directory.

    Raises:
        SelectionError: Unknown evaluation type or task id, or repeats below 1.
        SpecErrors: Invalid task specs or benchmark YAML (every problem listed).
    """
    if repeats < 1:
        raise SelectionError(f"repeats must be at least 1, got {repeats}")
    config = load_benchmark_config(config_dir)
    try:
        cells = expand_cells(config, list(evaluation_types) or None)
    except ValueError as error:
        raise SelectionError(str(error)) from error
    tasks = select_tasks(load_task_specs([tasks_dir]), task_ids)
    return ExperimentPlan(tuple(cells), tuple(tasks), repeats, tuple(evaluation_types))
