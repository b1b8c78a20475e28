from __future__ import annotations

import pytest

from datagouv_eval_pipeline.core.metrics.usage import (
    action_instance_score,
    action_type_score,
    arguments_match,
    normalise_value,
)
from datagouv_eval_pipeline.core.metrics.values import MetricValue, f1
from datagouv_eval_pipeline.core.tasks.spec import RequiredAction
from datagouv_eval_pipeline.core.traces import ToolCall
from tests.metrics.metrics_factories import Criteria, inst, make_task, req

DS = "5d13a8b6634f41070a43dff3"
RID = "f868cca6-8da1-4369-a78d-47463f19a9a3"


def required(*actions: dict[str, object]) -> list[RequiredAction]:
    return [RequiredAction.model_validate(action) for action in actions]


# --- action-type level -------------------------------------------------------------------------


def test_type_level_counts_distinct_names() -> None:
    need = required(
        req("search.datasets"), req("get.dataset.info"), req("get.data"), req("get.data")
    )
    actual = [
        inst("search.datasets"),
        inst("search.datasets"),
        inst("get.dataset.info"),
        inst("get.resource.info"),
    ]
    score = action_type_score(need, actual)
    # required names {search.datasets, get.dataset.info, get.data} = 3
    # actual names {search.datasets, get.dataset.info, get.resource.info} = 3
    # matched = |{search.datasets, get.dataset.info}| = 2
    # P = 2/3, R = 2/3, F1 = 2*(2/3)*(2/3)/(4/3) = 2/3
    assert (score.matched, score.required, score.actual) == (2, 3, 3)
    assert score.precision.value == pytest.approx(2 / 3)
    assert score.recall.value == pytest.approx(2 / 3)
    assert score.f1.value == pytest.approx(2 / 3)
    assert score.missing == ("get.data",)
    assert score.extra == ("get.resource.info",)


def test_type_level_errored_name_counts_as_tried_not_performed() -> None:
    need = required(req("search.datasets"), req("get.data"))
    actual = [inst("search.datasets"), inst("get.data", errored=True)]
    score = action_type_score(need, actual)
    # actual names {search.datasets, get.data} = 2, performed {search.datasets}: matched = 1
    # P = 1/2, R = 1/2, F1 = 1/2
    assert score.precision.value == pytest.approx(0.5)
    assert score.recall.value == pytest.approx(0.5)
    assert score.f1.value == pytest.approx(0.5)


def test_type_level_no_calls_gives_undefined_precision() -> None:
    score = action_type_score(required(req("search.datasets")), [])
    # P = 0/0 -> undefined; R = 0/1 = 0; F1 = 0: the tier required an action and the run did
    # nothing (an undefined F1 would drop the run out of the F1 mean)
    assert score.precision == MetricValue(None, "the trace has no action instances")
    assert score.recall.value == 0.0
    assert score.f1 == MetricValue(
        0.0, "no action instance: precision is undefined and recall 0, so F1 0"
    )


def test_type_level_no_required_actions_gives_undefined_recall() -> None:
    score = action_type_score([], [inst("search.datasets")])
    # P = 0/1 = 0, R = 0/0 -> undefined
    assert score.precision.value == 0.0
    assert score.recall == MetricValue(None, "not applicable: the tier requires no actions")
    # F1 is undefined with it (precision 0 says nothing when nothing was asked).
    assert score.f1.value is None and "not applicable" in (score.f1.reason or "")


def test_f1_of_two_zeros_is_zero_with_reason() -> None:
    result = f1(MetricValue(0.0), MetricValue(0.0))
    assert result == MetricValue(0.0, "precision and recall are both 0")


# --- argument normalisation --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("  Jeux   de\tDonnées ", "jeux de données"),
        ('"5d13a8b6634f41070a43dff3"', "5D13A8B6634F41070A43DFF3"),
        ("«catalogue»", "catalogue"),
        (5, "5"),
        (5.0, "5"),
        ("20", 20),
        (True, "true"),
        ("007", 7),
        ("1e3", 1000),
        ({"b": 1, "a": "x"}, {"a": "x", "b": 1}),
    ],
)
def test_normalise_value_equal(left: object, right: object) -> None:
    assert normalise_value(left) == normalise_value(right)


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("5.5", 5),
        ("abc", "abd"),
        (None, "none"),
        (True, 1),
        # all-digit ids longer than a float's precision must stay distinct
        ("123456789012345678901234", "123456789012345678901235"),
    ],
)
def test_normalise_value_different(left: object, right: object) -> None:
    assert normalise_value(left) != normalise_value(right)


def test_json_string_arguments_compare_like_objects() -> None:
    # OpenAI-style models send arguments as a JSON string; ToolCall parses it on load.
    call = ToolCall(id="c1", name="get_dataset_info", arguments=f'{{"dataset_id": " {DS} "}}')
    action = RequiredAction.model_validate(req("get.dataset.info", dataset_id=DS))
    instance = inst("get.dataset.info", **call.arguments)
    assert arguments_match(action, instance) == ()


def test_criteria_argument_needs_a_present_value() -> None:
    action = RequiredAction.model_validate(
        req("search.datasets", query=Criteria("about the catalogue"))
    )
    assert arguments_match(action, inst("search.datasets", query="catalogue")) == ("query",)
    assert arguments_match(action, inst("search.datasets", query="  ")) is None
    assert arguments_match(action, inst("search.datasets")) is None


# --- action-instance level ---------------------------------------------------------------------


def test_instance_level_maximum_matching_beats_greedy() -> None:
    # Required r0 accepts any query; r1 needs query "catalogue". Instances: i0 "catalogue", i1 "x".
    # Greedy (r0 takes the first fitting instance i0) would leave r1 unmatched: 1 pair.
    # The maximum matching is r0-i1, r1-i0: 2 pairs.
    need = required(
        req("search.datasets", query=Criteria("any query")),
        req("search.datasets", query="catalogue"),
    )
    actual = [
        inst("search.datasets", "i0", query="Catalogue"),
        inst("search.datasets", "i1", query="x"),
    ]
    score = action_instance_score(need, actual)
    # matched = 2; P = 2/2 = 1; R = 2/2 = 1; one criteria arg (r0.query) on a matched pair
    assert score.matched == 2
    assert score.precision.value == 1.0
    assert score.recall.value == 1.0
    assert score.f1.value == 1.0
    assert score.unverified_criteria == 1
    assert {(p.required_index, p.call_id) for p in score.pairs} == {(0, "i1"), (1, "i0")}


def test_instance_level_repeated_calls_match_once() -> None:
    need = required(req("get.dataset.info", dataset_id=DS))
    actual = [
        inst("get.dataset.info", "a", dataset_id=DS),
        inst("get.dataset.info", "b", dataset_id=DS),
        inst("get.dataset.info", "c", dataset_id=DS),
    ]
    score = action_instance_score(need, actual)
    # one required action can pair with one instance: matched = 1
    # P = 1/3, R = 1/1, F1 = 2*(1/3)*1/(4/3) = 0.5
    assert score.matched == 1
    assert score.precision.value == pytest.approx(1 / 3)
    assert score.recall.value == 1.0
    assert score.f1.value == pytest.approx(0.5)
    assert score.pairs[0].call_id == "a"


def test_instance_level_full_example() -> None:
    need = required(
        req("search.datasets", query=Criteria("about the catalogue")),
        req("get.dataset.info", dataset_id=DS),
        req("get.dataset.resources", dataset_id=DS),
        req("get.data", resource_id=RID, filters=Criteria("created_at before 2012-06-28")),
    )
    actual = [
        inst("search.datasets", "c1", query="catalogue"),
        inst("get.dataset.info", "c2", dataset_id="000000000000000000000000"),  # wrong id
        inst("get.dataset.info", "c3", dataset_id=DS),
        inst("get.data", "c4", errored=True, resource_id=RID, filters="x"),  # errored
        inst("get.data", "c5", resource_id=RID),  # no filters: the criterion is not met
        inst("get.data", "c6", resource_id=RID, filters={"created_at__less": "2012-06-28"}),
    ]
    score = action_instance_score(need, actual)
    # pairs: r0-c1, r1-c3, r3-c6; r2 (get.dataset.resources) has no instance
    # matched = 3; P = 3/6 = 0.5; R = 3/4 = 0.75; F1 = 2*0.5*0.75/1.25 = 0.6
    # unverified criteria on pairs: r0.query + r3.filters = 2
    assert score.matched == 3
    assert score.precision.value == pytest.approx(0.5)
    assert score.recall.value == pytest.approx(0.75)
    assert score.f1.value == pytest.approx(0.6)
    assert score.unverified_criteria == 2
    assert score.unmatched_required == (2,)
    assert [p.call_id for p in score.pairs] == ["c1", "c3", "c6"]


def test_errored_instance_cannot_match() -> None:
    need = required(req("get.dataset.info", dataset_id=DS))
    score = action_instance_score(need, [inst("get.dataset.info", errored=True, dataset_id=DS)])
    # matched = 0; P = 0/1 = 0; R = 0/1 = 0; F1 = 0 (both zero)
    assert score.matched == 0
    assert score.precision.value == 0.0
    assert score.f1 == MetricValue(0.0, "precision and recall are both 0")


def test_instance_level_zero_denominators() -> None:
    empty = action_instance_score(required(req("search.datasets")), [])
    assert empty.precision.value is None and empty.precision.reason
    assert empty.recall.value == 0.0
    nothing_required = action_instance_score([], [inst("search.datasets")])
    assert nothing_required.recall.value is None and nothing_required.recall.reason
    assert nothing_required.f1.value is None


def test_optimal_tier_requires_minimal_plus_additions() -> None:
    task = make_task(
        "search.datasets > get.dataset.info",
        [req("search.datasets"), req("get.dataset.info", dataset_id=DS)],
        optimal_chain="search.datasets > get.dataset.info > get.dataset.resources",
        optimal_required=[req("get.dataset.resources", dataset_id=DS)],
    )
    actual = [inst("search.datasets"), inst("get.dataset.info", dataset_id=DS)]
    minimal = action_instance_score(task.chain("minimal").required_actions, actual)
    optimal = action_instance_score(task.chain("optimal").required_actions, actual)
    # minimal: 2 of 2 required matched -> R = 1; optimal: 2 of 3 -> R = 2/3
    assert minimal.recall.value == 1.0
    assert optimal.recall.value == pytest.approx(2 / 3)
