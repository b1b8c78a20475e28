"""Property tests: metric bounds, the maximum matching, and what the trajectory walk guarantees."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from datagouv_eval_pipeline.core.metrics.trajectory import trajectory_adherence
from datagouv_eval_pipeline.core.metrics.usage import (
    action_instance_score,
    action_type_score,
    arguments_match,
)
from datagouv_eval_pipeline.core.metrics.values import MetricValue
from datagouv_eval_pipeline.core.semantic.instances import ActionInstance
from datagouv_eval_pipeline.core.tasks.chain import Action, ChainNode, Parallel, Sequence
from datagouv_eval_pipeline.core.tasks.spec import RequiredAction
from tests.metrics.metrics_factories import inst

ACTIONS = ["search.datasets", "get.dataset.info", "get.data", "get.resource.info"]
IDS = ["a", "b", "c"]

INSTANCES = st.lists(
    st.builds(
        lambda name, dataset_id, errored: inst(name, errored=errored, dataset_id=dataset_id),
        st.sampled_from(ACTIONS),
        st.sampled_from([*IDS, None]),
        st.booleans(),
    ),
    max_size=7,
)


def _required(name: str, arg: str | None) -> RequiredAction:
    if arg is None:
        return RequiredAction(name=name)
    if arg == "*":
        return RequiredAction.model_validate(
            {"name": name, "args": [{"name": "dataset_id", "criteria": "any"}]}
        )
    return RequiredAction.model_validate(
        {"name": name, "args": [{"name": "dataset_id", "strict_value": arg}]}
    )


REQUIRED = st.lists(
    st.builds(_required, st.sampled_from(ACTIONS), st.sampled_from([*IDS, "*", None])),
    max_size=6,
)


def _bounded(value: MetricValue) -> bool:
    if value.value is None:
        return bool(value.reason)
    return 0.0 <= value.value <= 1.0


def _f1_between(p: MetricValue, r: MetricValue, f: MetricValue) -> bool:
    if p.value is None and r.value == 0.0:
        return f.value == 0.0  # no instance at all while actions were required: F1 0
    if p.value is None or r.value is None:
        return f.value is None and bool(f.reason)
    assert f.value is not None
    return min(p.value, r.value) - 1e-12 <= f.value <= max(p.value, r.value) + 1e-12


@given(REQUIRED, INSTANCES)
def test_usage_metrics_are_bounded_and_f1_lies_between_p_and_r(
    required: list[RequiredAction], instances: list[ActionInstance]
) -> None:
    for score in (
        action_type_score(required, instances),
        action_instance_score(required, instances),
    ):
        assert _bounded(score.precision) and _bounded(score.recall) and _bounded(score.f1)
        assert _f1_between(score.precision, score.recall, score.f1)
        assert 0 <= score.matched <= min(score.required, score.actual)


def _brute_force_matching(required: list[RequiredAction], instances: list[ActionInstance]) -> int:
    """Largest set of disjoint compatible pairs, by trying every assignment."""
    compatible = [
        {
            i
            for i, instance in enumerate(instances)
            if instance.action == action.name
            and not instance.errored
            and arguments_match(action, instance) is not None
        }
        for action in required
    ]
    best = 0
    for choice in itertools.product(*[[None, *sorted(c)] for c in compatible]):
        used = [i for i in choice if i is not None]
        if len(used) == len(set(used)):
            best = max(best, len(used))
    return best


@settings(max_examples=200)
@given(REQUIRED, INSTANCES)
def test_instance_matching_is_maximum(
    required: list[RequiredAction], instances: list[ActionInstance]
) -> None:
    score = action_instance_score(required, instances)
    assert score.matched == _brute_force_matching(required, instances)
    # the reported pairs are a valid one-to-one matching
    assert len({p.instance_index for p in score.pairs}) == len(score.pairs)
    assert len({p.required_index for p in score.pairs}) == len(score.pairs)


# --- trajectory --------------------------------------------------------------------------------


def _group(children: st.SearchStrategy[ChainNode]) -> st.SearchStrategy[ChainNode]:
    many = st.lists(children, min_size=2, max_size=3).map(tuple)
    return st.one_of(many.map(Sequence), many.map(Parallel))


CHAINS: st.SearchStrategy[ChainNode] = st.recursive(
    st.sampled_from(ACTIONS).map(Action), _group, max_leaves=7
)
NAME_LISTS = st.lists(st.sampled_from([*ACTIONS, "get.metrics"]), max_size=8)


def _instances(names: list[str]) -> list[ActionInstance]:
    return [inst(name, f"c{i}") for i, name in enumerate(names)]


def _adherence(chain: ChainNode, names: list[str]) -> float:
    value = trajectory_adherence(chain, _instances(names)).adherence.value
    assert value is not None  # a parsed chain always has at least one action
    return value


def _linearise(node: ChainNode, data: st.DataObject) -> list[str]:
    """One order of the chain's actions that respects it (branches interleaved at random)."""
    if isinstance(node, Action):
        return [node.name]
    if isinstance(node, Sequence):
        return [name for child in node.children for name in _linearise(child, data)]
    queues = [_linearise(branch, data) for branch in node.branches]
    out: list[str] = []
    while any(queues):
        pick = data.draw(st.sampled_from([q for q in queues if q]))
        out.append(pick.pop(0))
    return out


@given(CHAINS, NAME_LISTS)
def test_adherence_is_bounded(chain: ChainNode, names: list[str]) -> None:
    assert 0.0 <= _adherence(chain, names) <= 1.0


@given(CHAINS, st.data())
def test_any_order_the_chain_allows_scores_one(chain: ChainNode, data: st.DataObject) -> None:
    assert _adherence(chain, _linearise(chain, data)) == 1.0


@given(CHAINS, NAME_LISTS, NAME_LISTS)
def test_prepending_instances_never_lowers_adherence(
    chain: ChainNode, names: list[str], prefix: list[str]
) -> None:
    assert _adherence(chain, prefix + names) >= _adherence(chain, names)


@given(CHAINS, NAME_LISTS, st.lists(st.just("get.metrics"), max_size=3))
def test_appending_unrelated_actions_changes_nothing(
    chain: ChainNode, names: list[str], extra: list[str]
) -> None:
    assert _adherence(chain, names + extra) == _adherence(chain, names)


@given(CHAINS, st.data(), NAME_LISTS)
def test_appending_to_a_perfect_walk_keeps_it_perfect(
    chain: ChainNode, data: st.DataObject, suffix: list[str]
) -> None:
    assert _adherence(chain, _linearise(chain, data) + suffix) == 1.0
