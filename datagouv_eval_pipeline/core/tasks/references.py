"""References: expected values recomputed from the catalog a run used.

A task's ``expected_values[].value`` is the figure its author saw. When the entry has a
``recompute``, the pre-flight computes it again from raw data (the twin's snapshot, or the live
Tabular API in a live run) and the scoring compares answers with that number, so an agent that
gives the catalog's current figure is right even after the data changed.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict


class Reference(BaseModel):
    """One expected value as recomputed for a run.

    Attributes:
        task_id: The task.
        name: The expected value's ``name``.
        spec_value: The value written in the task spec.
        value: The recomputed value, or None when it could not be recomputed (then ``error``
            says why and the spec's value stands).
        source: Where it was computed from (catalog label and Tabular API base URL).
        error: Why it could not be recomputed.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    task_id: str
    name: str
    spec_value: float
    value: float | None
    source: str
    error: str | None = None

    @property
    def changed(self) -> bool:
        """Whether the recomputed value differs from the spec's."""
        return self.value is not None and self.value != self.spec_value

    @property
    def effective(self) -> float:
        """The value answers are compared with: the recomputed one, else the spec's."""
        return self.value if self.value is not None else self.spec_value


def references_by_name(
    references: Iterable[Reference] | None, task_id: str
) -> dict[str, Reference]:
    """The references of one task, by expected-value name."""
    return {ref.name: ref for ref in references or () if ref.task_id == task_id}
