"""What tokens cost at a model's prices (``models.yml``): one rule for every cost figure.

A trace's cost (the agent runner) and the dry run's estimate (``pipeline/experiment/estimate.py``)
both
price tokens here. A model without prices costs None, never 0.
"""

from __future__ import annotations

from datagouv_eval_pipeline.core.benchmark.cells import CellModel


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
