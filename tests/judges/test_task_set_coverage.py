"""The deterministic judge's criterion coverage of the active task set (issue 25's target)."""

from __future__ import annotations

import pytest

from datagouv_eval_pipeline.core.judges.deterministic import (
    DeterministicJudge,
    is_link_criterion,
    linked_values,
)
from datagouv_eval_pipeline.core.judges.protocol import CriterionInput
from datagouv_eval_pipeline.core.judges.verdict import VerdictStatus
from datagouv_eval_pipeline.core.tasks.spec import TIERS, Criterion, TaskSpec, TaskStatus
from tests.judges.judges_factories import real_tasks

JUDGE = DeterministicJudge()
# Answers of every style the rules must decide on: a non-answer, an empty answer, a wrong one.
ANSWERS = ("Je ne sais pas.", "", "Le Gers compte 1 023 équipements : https://www.data.gouv.fr/")
TARGET = {"minimal": 0.75, "optimal": 0.5}


def machine_checkable(criterion: Criterion, task: TaskSpec) -> bool:
    """Whether the spec gives the rules something to check (worked out from the spec alone)."""
    return bool(
        criterion.assertion is not None
        or criterion.keywords
        or criterion.patterns
        or linked_values(criterion, task)
        or (task.expected_sources and is_link_criterion(criterion))
    )


@pytest.mark.parametrize("answer", ANSWERS)
def test_every_machine_checkable_criterion_is_decided_and_the_coverage_meets_the_target(
    answer: str,
) -> None:
    active = [t for t in real_tasks().values() if t.meta.status is TaskStatus.ACTIVE]
    assert len(active) >= 65
    for tier in TIERS:
        criteria = [(task, c) for task in active for c in task.criteria(tier)]
        decided = [
            (task.task_id, c.criteria)
            for task, c in criteria
            if JUDGE.criterion_sync(CriterionInput(task.prompt, answer, c, [], task=task)).status
            is VerdictStatus.OK
        ]
        checkable = [
            (task.task_id, c.criteria) for task, c in criteria if machine_checkable(c, task)
        ]
        # An assertion is never undecidable (an expected value it names always exists), and the
        # value hints of criteria without assertion are decided on answers stating no number.
        assert decided == checkable
        assert len(decided) / len(criteria) >= TARGET[tier], tier
