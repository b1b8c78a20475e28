"""Experiment selection and the dry-run estimate."""

from dataclasses import replace

import pytest

from datagouv_eval_pipeline.benchmark.cells import Cell, expand_cells
from datagouv_eval_pipeline.benchmark.loader import load_benchmark_config
from datagouv_eval_pipeline.experiment.plan import (
    ExperimentPlan,
    SelectionError,
    plan_experiment,
    select_tasks,
)
from datagouv_eval_pipeline.tasks import TASK_SPECS_DIR, TaskSpec, TaskStatus, load_task_specs
from datagouv_eval_pipeline.tasks.spec import ActionChainLevel, ActionChains, RequiredAction


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


def _task(base: TaskSpec, task_id: str, minimal: list[str], additions: list[str]) -> TaskSpec:
    optimal = None
    if additions:
        optimal = ActionChainLevel(
            chain=" > ".join(minimal + additions),
            required_actions=[RequiredAction(name=n) for n in additions],
        )
    chains = ActionChains(
        minimal=ActionChainLevel(
            chain=" > ".join(minimal), required_actions=[RequiredAction(name=n) for n in minimal]
        ),
        optimal=optimal,
    )
    return base.model_copy(update={"task_id": task_id, "action_chain": chains})


def test_estimate_worked_out_by_hand(specs: list[TaskSpec]) -> None:
    cells = expand_cells(load_benchmark_config())
    base_cell: Cell = cells[0]
    priced = replace(
        base_cell,
        key="priced",
        model=replace(base_cell.model, input_price_per_mtok=2.0, output_price_per_mtok=6.0),
    )
    unpriced = replace(
        base_cell,
        key="unpriced",
        model=replace(base_cell.model, input_price_per_mtok=None, output_price_per_mtok=6.0),
    )
    base = specs[0]
    # Optimal chain of t1 = 2 minimal + 1 addition = 3 actions, +1 answer = 4 requests.
    t1 = _task(base, "task_0901", ["search.datasets", "get.data"], ["get.dataset.resources"])
    # t2 has no optimal tier: its minimal chain (1 action) + 1 answer = 2 requests.
    t2 = _task(base, "task_0902", ["search.datasets"], [])
    plan = ExperimentPlan(cells=(priced, unpriced), tasks=(t1, t2), repeats=2)

    assert plan.task_runs == 2 * 2 * 2
    first, second = plan.estimate()
    # (4 + 2) requests per round × 2 repeats = 12 requests.
    assert (first.cell_key, first.task_runs, first.requests) == ("priced", 4, 12)
    assert first.input_tokens == 12 * 4_000 == 48_000
    assert first.output_tokens == 12 * 300 == 3_600
    # (48 000 × 2.0 + 3 600 × 6.0) / 1 000 000 = 0.0960 + 0.0216
    assert first.cost == pytest.approx(0.1176)
    assert (second.cell_key, second.requests, second.cost) == ("unpriced", 12, None)
