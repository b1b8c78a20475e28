"""A rough cost estimate of running every task through every cell (agent tokens only)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from datagouv_eval_pipeline.benchmark.cells import Cell, CellModel


@dataclass(frozen=True)
class TokenBudget:
    """Tokens an agent is expected to spend on one task.

    Attributes:
        input_tokens: Prompt tokens over all model requests of the task.
        output_tokens: Completion tokens over all model requests of the task.
    """

    input_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class CostEstimate:
    """What a run of the cells would cost, judge calls excluded.

    Attributes:
        agent_runs: Number of (cell, task) runs.
        priced_total: Sum over the cells whose prices are known, by currency.
        per_cell: Cost of each cell, None when its model's prices are unknown.
        unpriced: Keys of the cells whose model has no price.
    """

    agent_runs: int
    priced_total: dict[str, float]
    per_cell: dict[str, float | None]
    unpriced: tuple[str, ...]

    @property
    def total(self) -> dict[str, float] | None:
        """The total by currency, or None when any cell's price is unknown."""
        return None if self.unpriced else self.priced_total


def token_cost(model: CellModel, input_tokens: int, output_tokens: int) -> float | None:
    """The price of ``input_tokens`` + ``output_tokens`` at the model's rates (``models.yml``).

    Returns:
        The cost in ``model.currency``; None when either price is unknown (never 0 then).
    """
    if model.input_price_per_mtok is None or model.output_price_per_mtok is None:
        return None
    return (
        input_tokens * model.input_price_per_mtok + output_tokens * model.output_price_per_mtok
    ) / 1_000_000


def estimate_cost(
    cells: Sequence[Cell], n_tasks: int, tokens_per_task: TokenBudget
) -> CostEstimate:
    """Estimate the agent cost of running ``n_tasks`` tasks through every cell.

    Args:
        cells: The cells (``expand_cells``).
        n_tasks: Number of tasks run per cell.
        tokens_per_task: Expected tokens per task, the same for every model.

    Returns:
        The estimate; cells without prices are listed rather than counted as free.
    """
    per_cell: dict[str, float | None] = {}
    totals: dict[str, float] = {}
    unpriced: list[str] = []
    for cell in cells:
        per_task = token_cost(
            cell.model, tokens_per_task.input_tokens, tokens_per_task.output_tokens
        )
        if per_task is None:
            per_cell[cell.key] = None
            unpriced.append(cell.key)
            continue
        cost = per_task * n_tasks
        per_cell[cell.key] = cost
        totals[cell.model.currency] = totals.get(cell.model.currency, 0.0) + cost
    return CostEstimate(len(cells) * n_tasks, totals, per_cell, tuple(unpriced))
