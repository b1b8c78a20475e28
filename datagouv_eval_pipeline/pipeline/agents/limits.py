"""What one task run may spend before it is ended with status ``budget_exceeded``.

Provider rate limits and the retry policy are shared with the judges: see
:mod:`datagouv_eval_pipeline.core.providers`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RunBudget:
    """What one task run may spend.

    Attributes:
        max_requests: Model requests per run (the final-answer request included).
        max_tokens: Input plus output tokens per run; None for no limit.
        wall_timeout_s: Wall-clock seconds per run, rate-limit waits not counted.
    """

    max_requests: int = 25
    max_tokens: int | None = 400_000
    wall_timeout_s: float = 600.0

    def __post_init__(self) -> None:
        if self.max_requests < 1:
            raise ValueError(f"RunBudget.max_requests must be >= 1, got {self.max_requests}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError(f"RunBudget.max_tokens must be >= 1 or None, got {self.max_tokens}")
        if self.wall_timeout_s <= 0:
            raise ValueError(f"RunBudget.wall_timeout_s must be > 0, got {self.wall_timeout_s}")


_WALL_CLOCK = "wall-clock budget of "


def wall_clock_reason(seconds: float) -> str:
    """The ``status_reason`` of a run ended by its wall-clock budget."""
    return f"{_WALL_CLOCK}{seconds:g} s exceeded"
