from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from datagouv_eval_pipeline.core.judges.deterministic import DeterministicJudge
from datagouv_eval_pipeline.core.judges.judgement_record import JudgementRecord
from datagouv_eval_pipeline.core.judges.runner import (
    CONFIDENCE_JUDGE,
    judge_trace,
    judge_trace_sync,
    merge_classifications,
)
from datagouv_eval_pipeline.core.judges.verdict import VerdictStatus, outcome
from datagouv_eval_pipeline.core.metrics.catalog import with_catalog_slugs
from datagouv_eval_pipeline.core.metrics.scorer import score_trace
from datagouv_eval_pipeline.core.metrics.values import MetricValue
from datagouv_eval_pipeline.core.semantic.instances import CallCategory
from datagouv_eval_pipeline.core.semantic.mapper import map_trace
from datagouv_eval_pipeline.core.traces import ToolCall, Trace
from datagouv_eval_pipeline.pipeline.experiment.catalog import twin_catalog_lookup
from tests.judges.judges_factories import (
    Grader,
    all_absent,
    default_answers,
    example_trace,
    llm_judge,
    real_tasks,
)

TASK = real_tasks()["task_0002"]
CATALOG = twin_catalog_lookup()


def test_deterministic_judgement_of_the_good_example_trace() -> None:
    trace = example_trace("task_0002_mcp.json")
    result = judge_trace_sync(DeterministicJudge(), with_catalog_slugs(TASK, CATALOG), trace)
    # Criteria: 2066 (pattern + number assertion), catalogue origin (assertion: "catalogue" and
    # "created_at"), created_at (keyword), deleted datasets caveat (assertion: "supprimés"), link
    # to the catalogue page (citation via the catalog's slug): a right answer passes every one.
    assert [outcome(c.verdict) for c in result.criteria] == ["pass"] * 5
    assert [c.tier for c in result.criteria] == ["minimal"] * 2 + ["optimal"] * 3
    minimal, optimal = result.accuracy("minimal"), result.accuracy("optimal")
    assert (minimal.mean.value, minimal.scored, minimal.total) == (1.0, 2, 2)
    assert (optimal.mean.value, optimal.scored, optimal.total) == (1.0, 5, 5)
    # Trajectory and instance usage are the metrics' own numbers.
    scores = score_trace(TASK, trace)
    for tier in ("minimal", "optimal"):
        block, tier_score = result.tiers[tier], scores.tier(tier)
        assert block.trajectory.score == tier_score.trajectory_adherence.value
        assert block.action_recall == tier_score.action_recall
        assert block.action_precision == tier_score.action_precision
    assert result.tiers["optimal"].trajectory.score == pytest.approx(4 / 5)
    assert outcome(result.tiers["optimal"].failure_modes["TOOL_OMISSION"]) == "fail"
    assert outcome(result.tiers["minimal"].failure_modes["TOOL_OMISSION"]) == "pass"
    assert result.judge_spend.questions == 0


def test_a_wrong_answer_scores_zero_only_on_what_was_scored() -> None:
    trace = example_trace("task_0002_mcp_wrong.json")
    result = judge_trace_sync(DeterministicJudge(), TASK, trace)
    minimal = result.accuracy("minimal")
    assert minimal.mean.value == 0.0  # the 2066 criterion failed...
    # ...and so did the catalogue one, by its assertion (not a silent 0: a decided failure).
    assert (minimal.scored, minimal.total) == (2, 2)
    catalogue = result.criteria[1].verdict
    assert catalogue.reason.startswith("hint failed: assert all(contains any ['catalogue']")
    assert outcome(result.tiers["minimal"].failure_modes["HALLUCINATION"]) == "fail"


def test_argument_verdicts_decide_the_instance_matching() -> None:
    trace = example_trace("task_0002_mcp.json")
    answers = default_answers()
    # The judge rejects every criteria argument: the search (query) and get.data (filters) pairs.
    answers["arguments"] = lambda prompt: {
        "matches": [{"candidate": 0, "correct": False, "reason": "too vague"}]
    }
    result = asyncio.run(judge_trace(llm_judge(Grader(answers)), TASK, trace))
    minimal = result.tiers["minimal"]
    # 3 required actions; only get.dataset.resources (strict dataset id) still matches.
    assert len(minimal.arguments) == 3
    assert minimal.action_recall.value == pytest.approx(1 / 3)
    assert minimal.unverified_criteria == 0
    deterministic = judge_trace_sync(DeterministicJudge(), TASK, trace)
    # The deterministic judge leaves criteria arguments to the metrics' rule: accepted unverified.
    assert deterministic.tiers["minimal"].action_recall.value == 1.0  # 3 matched of 3
    assert deterministic.tiers["minimal"].unverified_criteria == 2


def code_trace() -> Trace:
    code = 'import requests\nurl = open("u.txt").read()\nprint(requests.get(url).text)'
    return Trace(
        task_id="task_0002",
        answer="2 076 jeux de données.",
        mcp_version="0.2.26",
        capabilities=["mcp", "code"],
        tool_calls=[
            ToolCall(id="c1", name="search_datasets", arguments={"query": "catalogue"}),
            ToolCall(id="c2", name="execute_python", arguments={"code": code}, result="2076"),
            ToolCall(
                id="c3",
                name="list_dataset_resources",
                arguments={"dataset_id": "5d13a8b6634f41070a43dff3"},
            ),
        ],
    )


def test_undecided_calls_are_classified_with_arguments_and_join_the_instances() -> None:
    answers = default_answers()
    answers["classification"] = lambda _: {
        "actions": [
            {
                "action": "get.data",
                "args": {"resource_id": "f868cca6-8da1-4369-a78d-47463f19a9a3"},
            }
        ],
        "reason": "reads the catalogue resource",
    }
    grader = Grader(answers)
    result = asyncio.run(judge_trace(llm_judge(grader), TASK, code_trace()))
    assert len(grader.of("classification")) == 1
    assert 'open("u.txt")' in grader.of("classification")[0].prompt
    (classified,) = result.classifications
    assert classified.call_id == "c2"
    # The instances the judged usage was computed from: the classified call's action joins them.
    instances = merge_classifications(map_trace(code_trace()), result.classifications)
    assert [i.action for i in instances] == [
        "search.datasets",
        "get.data",
        "get.dataset.resources",
    ]
    added = instances[1]
    assert added.args == {"resource_id": "f868cca6-8da1-4369-a78d-47463f19a9a3"}
    assert added.confidence == CONFIDENCE_JUDGE
    assert added.category is CallCategory.FILE_LOAD_EXTERNAL
    assert added.reason == "classified by llm:test/grader"


def test_without_a_classifier_the_call_stays_unmapped() -> None:
    result = judge_trace_sync(DeterministicJudge(), TASK, code_trace())
    instances = merge_classifications(map_trace(code_trace()), result.classifications)
    assert [i.action for i in instances] == ["search.datasets", "get.dataset.resources"]
    assert outcome(result.classifications[0].verdict) == "unscored"


def test_judge_spend_is_separate_from_the_agent_usage_and_json_ready() -> None:
    trace = example_trace("task_0002_mcp.json")
    grader = Grader(default_answers(), input_tokens=7, output_tokens=3)
    result = asyncio.run(judge_trace(llm_judge(grader), TASK, trace))
    spend = result.judge_spend
    assert spend.questions == len(grader.requests) == 11
    assert (spend.input_tokens, spend.output_tokens) == (77, 33)
    assert spend.input_tokens != trace.usage.input_tokens
    document: dict[str, Any] = json.loads(result.model_dump_json())
    assert document["judge_spend"]["questions"] == 11
    assert document["tiers"]["minimal"]["accuracy"]["coverage"]["value"] == 1.0
    assert document["tiers"]["optimal"]["failure_modes"]["EARLY_STOP"]["status"] == "ok"


def test_a_trace_for_another_task_is_refused() -> None:
    trace = example_trace("task_0011_mcp_decline.json")
    with pytest.raises(ValueError, match="is for task 'task_0011'"):
        judge_trace_sync(DeterministicJudge(), TASK, trace)


def tool_less_trace() -> Trace:
    """A run of the capability set none: no tool, the answer from the model's memory."""
    return Trace(task_id="task_0002", answer="Environ 2 000 jeux de données.", capabilities=[])


def test_a_run_without_any_tool_gets_not_applicable_trajectory_and_tool_omission() -> None:
    # Every judge: the trajectory and TOOL_OMISSION are not asked, they are not applicable;
    # the judged action precision, recall and F1 are NULL with the same reason. The deterministic
    # judge would have said adherence 0 and TOOL_OMISSION present.
    reason = "not applicable: no tool available (capability set none)"
    grader = Grader(default_answers())
    grader.answers["failure_modes"] = lambda _: {
        mode: {"present": mode == "TOOL_OMISSION", "reason": "no tool was called"}
        for mode in all_absent("")
    }
    for judge in (DeterministicJudge(), llm_judge(grader)):
        result = asyncio.run(judge_trace(judge, TASK, tool_less_trace()))
        for tier in ("minimal", "optimal"):
            trajectory = result.tiers[tier].trajectory
            assert (trajectory.status, trajectory.reason) == (VerdictStatus.NOT_APPLICABLE, reason)
            assert trajectory.value is None and trajectory.judge_id == judge.judge_id
            omission = result.tiers[tier].failure_modes["TOOL_OMISSION"]
            assert (omission.status, omission.reason) == (VerdictStatus.NOT_APPLICABLE, reason)
            assert outcome(omission) == "unscored" and omission.passed is None
            block = result.tiers[tier]
            assert {block.action_precision, block.action_recall, block.action_f1} == {
                MetricValue(None, reason)
            }
            # Nothing to gather with, so no early stop (the deterministic rule would have said
            # present: the chain is incomplete and the agent took no action after it).
            stop = result.tiers[tier].failure_modes["EARLY_STOP"]
            assert (stop.status, stop.reason) == (VerdictStatus.NOT_APPLICABLE, reason)
        # The other modes are still the judge's.
        assert result.tiers["minimal"].failure_modes["HALLUCINATION"].status is VerdictStatus.OK

    # The LLM judge was never asked about the trajectory.
    assert grader.of("trajectory") == []
    # Round trip through the stored record (the warehouse reads it back).
    judged = judge_trace_sync(DeterministicJudge(), TASK, tool_less_trace())
    record = JudgementRecord.model_validate_json(judged.model_dump_json())
    assert record == judged
    assert record.tiers["minimal"].trajectory.status is VerdictStatus.NOT_APPLICABLE


def test_a_run_without_any_tool_and_without_an_answer_stopped_early() -> None:
    silent = Trace(task_id="task_0002", answer="  ", capabilities=[])
    judged = judge_trace_sync(DeterministicJudge(), TASK, silent)
    for tier in ("minimal", "optimal"):
        stop = judged.tiers[tier].failure_modes["EARLY_STOP"]
        assert (stop.status, stop.passed) == (VerdictStatus.OK, False)
        assert stop.reason == "the run ended without an answer"
