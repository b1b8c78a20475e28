"""The task as evaluated in one run: its expected values replaced by their references.

A reference (:class:`~datagouv_eval_pipeline.core.tasks.references.Reference`) is an expected value
recomputed from the catalog the run used. Everything that compares an answer with the number
must see the reference: the value check, the deterministic judge's value hints (linked to a
criterion through the number its text states) and an LLM judge reading the criterion text.
"""

from __future__ import annotations

from collections.abc import Mapping

from datagouv_eval_pipeline.core.metrics.numbers import find_value
from datagouv_eval_pipeline.core.tasks import (
    Criterion,
    EvaluationCriteria,
    ExpectedValue,
    Reference,
    TaskSpec,
)


def _number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _restated(criterion: Criterion, moved: Mapping[float, float]) -> Criterion:
    """The criterion with each moved number its text states replaced by the new one.

    Its ``patterns`` are dropped when the text changed: they spell the old figure, and the
    value hint (linked through the restated number) now checks the new one.
    """
    text = criterion.criteria
    changed = False
    for old, new in moved.items():
        reading = find_value(text, old, 0.0)
        if reading is None:
            continue
        end = reading.start + len(reading.text)
        text = text[: reading.start] + _number_text(new) + text[end:]
        changed = True
    if not changed:
        return criterion
    return criterion.model_copy(update={"criteria": text, "patterns": []})


def with_references(task: TaskSpec, references: Mapping[str, Reference]) -> TaskSpec:
    """The task with each recomputed expected value replaced by its reference.

    Values without a reference (or whose recompute failed) keep the spec's number. Criteria
    stating a moved number are restated with the new one. The copy's ``spec_hash`` differs
    from the original's: keep the original for provenance.
    """
    if not references:
        return task
    values: list[ExpectedValue] = []
    moved: dict[float, float] = {}
    for expected in task.expected_values:
        ref = references.get(expected.name)
        if ref is not None and ref.value is not None and ref.value != expected.value:
            values.append(expected.model_copy(update={"value": ref.value}))
            moved[expected.value] = ref.value
        else:
            values.append(expected)
    if not moved:
        return task
    criteria = EvaluationCriteria(
        minimal=[_restated(c, moved) for c in task.evaluation_criteria.minimal],
        optimal=[_restated(c, moved) for c in task.evaluation_criteria.optimal],
    )
    return task.model_copy(update={"expected_values": values, "evaluation_criteria": criteria})
