"""Experiment selection (the estimate itself: ``test_estimate.py``)."""

import pytest

from datagouv_eval_pipeline.core.tasks import TASK_SPECS_DIR, TaskSpec, TaskStatus, load_task_specs
from datagouv_eval_pipeline.pipeline.experiment.plan import (
    SelectionError,
    plan_experiment,
    select_tasks,
)


@pytest.fixture(scope="module")
def specs() -> list[TaskSpec]:
    return load_task_specs([TASK_SPECS_DIR])


def test_an_unknown_task_id_is_named(specs: list[TaskSpec]) -> None:
    with pytest.raises(SelectionError, match="task_9999") as error:
        select_tasks(specs, ["task_0002", "task_9999"])
    assert "task_0002" not in str(error.value).split(";")[0]


def test_an_unknown_evaluation_type_is_named() -> None:
    with pytest.raises(SelectionError, match="no_such_type"):
        plan_experiment(evaluation_types=["no_such_type"])


def test_repeats_below_one_are_refused() -> None:
    with pytest.raises(SelectionError, match="repeats must be at least 1, got 0"):
        plan_experiment(repeats=0)


def test_selection_keeps_the_given_order_once(specs: list[TaskSpec]) -> None:
    chosen = select_tasks(specs, ["task_0003", "task_0002", "task_0003"])
    assert [s.task_id for s in chosen] == ["task_0003", "task_0002"]


def test_no_selection_means_every_active_task_in_id_order(specs: list[TaskSpec]) -> None:
    chosen = [s.task_id for s in select_tasks(specs)]
    active = sorted(s.task_id for s in specs if s.meta.status == TaskStatus.ACTIVE)
    assert chosen == active
    assert "task_0000" not in chosen  # the example spec is not active


def test_plan_of_one_evaluation_type_and_two_tasks() -> None:
    plan = plan_experiment(
        evaluation_types=["data_contamination"], task_ids=["task_0002", "task_0003"], repeats=3
    )
    # data_contamination: 3 offline baselines × the empty capability set × one prompt.
    assert len(plan.cells) == 3
    assert all(cell.capabilities == () for cell in plan.cells)
    assert plan.task_runs == 3 * 2 * 3
    assert [e.task_runs for e in plan.estimate()] == [6, 6, 6]
