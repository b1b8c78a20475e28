from __future__ import annotations

import json
from pathlib import Path

import pytest

from datagouv_eval_pipeline.core.metrics.catalog import CatalogObject, StaticCatalogLookup
from datagouv_eval_pipeline.core.metrics.scorer import TIER_METRICS, score_trace
from datagouv_eval_pipeline.core.metrics.values import MetricValue
from datagouv_eval_pipeline.core.semantic.mapper import map_trace
from datagouv_eval_pipeline.core.tasks.loader import load_task_specs
from datagouv_eval_pipeline.core.tasks.spec import TaskSpec
from datagouv_eval_pipeline.core.traces import Trace, load_trace
from tests.metrics.metrics_factories import inst, make_task, make_trace, req

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture(scope="module")
def task() -> TaskSpec:
    return load_task_specs([FIXTURES / "tasks" / "task_0002.yml"])[0]


def trace(name: str) -> Trace:
    return load_trace(FIXTURES / "traces" / f"task_0002_{name}.json")


def test_mcp_trace_end_to_end(task: TaskSpec) -> None:
    # The mapper turns the 4 MCP calls (JSON-string arguments) into 4 instances:
    #   search.datasets, get.dataset.info, get.dataset.resources, get.data (filters set).
    catalog = StaticCatalogLookup.of(
        [
            CatalogObject(
                "dataset", "5d13a8b6634f41070a43dff3", "catalogue-des-donnees-de-data-gouv-fr"
            )
        ]
    )
    score = score_trace(task, trace("mcp"), catalog=catalog)
    minimal, optimal = score.minimal, score.optimal
    # minimal requires {search.datasets, get.dataset.resources, get.data}; 4 distinct names used.
    #   type level:     matched 3, P = 3/4, R = 3/3, F1 = 2*.75*1/1.75 = 6/7
    #   instance level: 3 pairs of 4 instances and 3 required: P = 3/4, R = 1, F1 = 6/7
    #   chain s > r > d over [s, i, r, d]: s@0, r@2, d@3 -> 3/3
    #   criteria accepted unverified: search.query + get.data.filters = 2
    assert minimal.action_type_precision.value == pytest.approx(3 / 4)
    assert minimal.action_type_recall.value == 1.0
    assert minimal.action_type_f1.value == pytest.approx(6 / 7)
    assert minimal.action_precision.value == pytest.approx(3 / 4)
    assert minimal.action_recall.value == 1.0
    assert minimal.action_f1.value == pytest.approx(6 / 7)
    assert minimal.trajectory_adherence.value == 1.0
    assert minimal.unverified_criteria == 2
    # optimal adds get.dataset.info and get.resource.info: 5 required, get.resource.info missing.
    #   type level:     matched 4, P = 4/4, R = 4/5, F1 = 2*1*.8/1.8 = 8/9
    #   instance level: 4 pairs: P = 4/4, R = 4/5, F1 = 8/9
    #   chain s > i > r > ri > d: s@0, i@1, r@2, ri unmatched (cursor 3), d@3 -> 4/5
    assert optimal.action_type_precision.value == 1.0
    assert optimal.action_type_recall.value == pytest.approx(4 / 5)
    assert optimal.action_f1.value == pytest.approx(8 / 9)
    assert optimal.trajectory_adherence.value == pytest.approx(4 / 5)
    assert optimal.missing_action_types == ["get.resource.info"]
    assert {name: check.passed for name, check in score.checks.items()} == {
        "tools": True,
        "value": True,  # "2\u202f076" in the answer
        "citation": True,  # slug URL, learned from the get_dataset_info result
        "behaviour": True,
        "grounded_ids": None,  # the answer states no id
    }
    # net latency = 8450 - 1200 = 7250 ms; tokens = 9120 + 412 = 9532
    assert score.efficiency.latency_ms.value == 7250
    assert score.efficiency.total_tokens == 9532


def test_code_trace_end_to_end(task: TaskSpec) -> None:
    # 3 execute_python calls with httpx; the v1 dataset body counts as info and resources, so
    # the instances are search.datasets, get.dataset.info, get.dataset.resources, get.data.
    score = score_trace(task, trace("code"))
    assert [action.action for action in score.actions] == [
        "search.datasets",
        "get.dataset.info",
        "get.dataset.resources",
        "get.data",
    ]
    # same instance names as the MCP trace: minimal P = 3/4, R = 1; optimal R = 4/5
    assert score.minimal.action_precision.value == pytest.approx(3 / 4)
    assert score.minimal.action_recall.value == 1.0
    assert score.optimal.action_recall.value == pytest.approx(4 / 5)
    # the ids stated in the answer (dataset in the URL, resource in the text) appear in the code
    assert score.checks["grounded_ids"].passed is True
    assert score.checks["tools"].details["available_families"] == ["api"]
    assert score.checks["citation"].passed is True


def test_failing_trace_end_to_end(task: TaskSpec) -> None:
    # instances: search.datasets, get.data (errored: ToolCall.error), search.datasets
    score = score_trace(task, trace("mcp_wrong"))
    minimal = score.minimal
    # type level: names used {search.datasets, get.data} = 2, performed {search.datasets}:
    #   matched 1, P = 1/2, R = 1/3
    assert minimal.action_type_precision.value == pytest.approx(1 / 2)
    assert minimal.action_type_recall.value == pytest.approx(1 / 3)
    # instance level: the search criterion matches the first search: 1 pair; P = 1/3, R = 1/3
    assert minimal.action_precision.value == pytest.approx(1 / 3)
    assert minimal.action_recall.value == pytest.approx(1 / 3)
    # chain s > r > d: s@0, r unmatched, d only errored -> 1/3
    assert minimal.trajectory_adherence.value == pytest.approx(1 / 3)
    checks = {name: check.passed for name, check in score.checks.items()}
    assert checks == {
        "tools": False,
        "value": False,  # "1 500", not 2076
        "citation": False,  # no URL
        "behaviour": True,
        "grounded_ids": False,  # 0123456789abcdef01234567 was never seen
    }


def test_unknown_mcp_version_gives_null_metrics_with_the_reason(task: TaskSpec) -> None:
    local = trace("mcp").model_copy(update={"mcp_version": "local"})
    score = score_trace(task, local)
    assert score.mapping.error is not None and "'local'" in score.mapping.error
    for tier in (score.minimal, score.optimal):
        for name in TIER_METRICS:
            value = getattr(tier, name)
            assert value.value is None
            assert value.reason is not None and "local" in value.reason
        assert tier.unverified_criteria is None
    assert score.minimal.required_actions == 3  # what the task requires is still known
    assert score.checks["tools"].passed is None
    assert score.checks["value"].passed is True  # answer checks do not need the mapping
    document = score.model_dump(mode="json")
    assert document["actions"] == []
    assert document["mapping"]["error"] == score.mapping.error


def test_mapping_or_instances_can_be_given(task: TaskSpec) -> None:
    run = trace("mcp")
    mapping = map_trace(run)
    from_mapping = score_trace(task, run, mapping=mapping)
    assert from_mapping == score_trace(task, run)
    from_instances = score_trace(task, run, instances=mapping.instances)
    assert from_instances.minimal == from_mapping.minimal
    assert from_instances.mapping.mapped_fraction.value is None
    with pytest.raises(ValueError, match="not both"):
        score_trace(task, run, mapping=mapping, instances=mapping.instances)


def test_trace_for_another_task_is_rejected(task: TaskSpec) -> None:
    with pytest.raises(ValueError, match="task_0003"):
        score_trace(task, trace("mcp").model_copy(update={"task_id": "task_0003"}))


def test_no_calls_with_tools_available_gives_undefined_precisions_and_an_f1_of_zero() -> None:
    spec = make_task("search.datasets > get.data", [req("search.datasets"), req("get.data")])
    score = score_trace(spec, make_trace(answer="2076", capabilities=["mcp"]))
    # P = 0/0 undefined; R = 0/2 = 0; F1 0 (recall 0, nothing done: not left out of the mean);
    # trajectory 0/2 = 0
    assert score.minimal.action_type_precision.value is None
    assert score.minimal.action_type_precision.reason == "the trace has no action instances"
    assert score.minimal.action_recall.value == 0.0
    assert score.minimal.action_f1 == MetricValue(
        0.0, "no action instance: precision is undefined and recall 0, so F1 0"
    )
    assert score.minimal.trajectory_adherence.value == 0.0
    assert score.mapping.mapped_fraction.value is None


def test_a_run_without_any_tool_is_not_applicable_not_zero() -> None:
    # Capability set none: the agent could not act. Every usage metric and the trajectory are
    # NULL "not applicable" in both tiers (0 would score a failure the agent could not avoid);
    # the counts stay.
    spec = make_task("search.datasets > get.data", [req("search.datasets"), req("get.data")])
    score = score_trace(spec, make_trace(answer="2076", capabilities=[]))
    reason = "not applicable: no tool available (capability set none)"
    for tier in (score.minimal, score.optimal):
        assert {getattr(tier, name) for name in TIER_METRICS} == {MetricValue(None, reason)}
        assert (tier.required_actions, tier.actual_actions, tier.chain_actions) == (2, 0, 2)


def test_accuracy_reaches_efficiency(task: TaskSpec) -> None:
    score = score_trace(task, trace("mcp"), accuracy={"minimal": 1.0, "optimal": 0.5})
    # 1.0 / (9532 / 1000) and 0.5 / (7250 / 60000)
    assert score.efficiency.token_efficiency["minimal"].value == pytest.approx(1000 / 9532)
    assert score.efficiency.time_efficiency["optimal"].value == pytest.approx(0.5 * 60000 / 7250)


def test_json_document_shape(task: TaskSpec) -> None:
    document = score_trace(task, trace("mcp")).model_dump(mode="json")
    assert list(document) == [
        "task_id",
        "minimal",
        "optimal",
        "checks",
        "efficiency",
        "mapping",
        "actions",
        "provenance",
    ]
    for tier in ("minimal", "optimal"):
        for name in (*TIER_METRICS, "unverified_criteria", "matched_actions", "required_actions"):
            assert name in document[tier]
        assert set(document[tier]["action_f1"]) == {"value", "reason"}
    assert document["actions"][3]["args"]["filters"] == "created_at__strictly_less=2012-06-28"
    assert document["provenance"]["spec_hash"] == task.spec_hash()
    assert document["provenance"]["mcp_version"] == "0.2.26"
    assert document["provenance"]["code_version"]["package"] == "0.1.0"
    json.dumps(document)  # serialisable as is


def test_instances_by_hand_with_a_parallel_chain() -> None:
    spec = make_task(
        "(search.datasets > get.dataset.info) + search.dataservices",
        [req("search.datasets"), req("get.dataset.info"), req("search.dataservices")],
    )
    instances = [inst("search.dataservices"), inst("search.datasets"), inst("get.dataset.info")]
    score = score_trace(spec, make_trace(), instances=instances)
    # every required action once, branches in the other order: all metrics 1
    assert all(getattr(score.minimal, name).value == 1.0 for name in TIER_METRICS)
    # no optimal block: optimal = minimal
    assert score.optimal == score.minimal


def test_tools_check_follows_the_mcp_version() -> None:
    # The dataservice tools only exist from MCP 0.2.15: at 0.2.5 search.dataservices cannot be
    # expected from an MCP-only agent, so only search.datasets is checked.
    spec = make_task(
        "search.datasets + search.dataservices",
        [req("search.datasets"), req("search.dataservices")],
    )
    old = make_trace(capabilities=["mcp"], mcp_version="0.2.5")
    score = score_trace(spec, old, instances=[inst("search.datasets")])
    assert score.checks["tools"].passed is True
    assert score.checks["tools"].details["unreachable"] == ["search.dataservices"]
    recent = old.model_copy(update={"mcp_version": "0.2.26"})
    score = score_trace(spec, recent, instances=[inst("search.datasets")])
    assert score.checks["tools"].passed is False
    assert score.checks["tools"].details["missing"] == ["search.dataservices"]


def test_each_task_object_gets_its_own_plan() -> None:
    # Two specs with the same id but different chains must not share a cached plan.
    first = make_task("search.datasets > get.data", [req("search.datasets"), req("get.data")])
    second = make_task("get.data > search.datasets", [req("search.datasets"), req("get.data")])
    instances = [inst("search.datasets"), inst("get.data")]
    # first: s@0, d@1 -> 1; second: d@1 (cursor 2), s has nothing after -> 1/2
    assert score_trace(first, make_trace(), instances=instances).minimal.trajectory_adherence == (
        MetricValue(1.0)
    )
    second_score = score_trace(second, make_trace(), instances=instances)
    assert second_score.minimal.trajectory_adherence.value == 0.5
