"""The hybrid judge: a rule's decision stands, the LLM decides only what the rules leave open."""

from __future__ import annotations

import asyncio
from typing import Any

from datagouv_eval_pipeline.core.judges.hybrid import HybridJudge
from datagouv_eval_pipeline.core.judges.protocol import FailureModeInput, ToolEvidence
from datagouv_eval_pipeline.core.judges.runner import judge_trace
from datagouv_eval_pipeline.core.judges.verdict import FailureMode, outcome
from datagouv_eval_pipeline.core.semantic.instances import ActionInstance
from tests.judges.judges_factories import (
    Grader,
    default_answers,
    example_trace,
    llm_judge,
    real_tasks,
)

LLM_ID = "llm:test/grader"


def every_mode_present(_: str) -> dict[str, Any]:
    return {mode.value: {"present": True, "reason": "the grader says so"} for mode in FailureMode}


def test_failure_modes_decided_by_rules_stand_and_the_llm_gets_the_rest() -> None:
    answers = default_answers()
    answers["failure_modes"] = every_mode_present  # would contradict every rule if asked
    grader = Grader(answers)
    judge = HybridJudge(llm_judge(grader))
    task = real_tasks()["task_0002"]
    chain = task.chain("minimal")
    instances = tuple(
        ActionInstance(action=required.name, args={}, source_call_id=f"c{i}", source_tool="t")
        for i, required in enumerate(chain.required_actions)
    )
    data = FailureModeInput(
        task=task,
        tier="minimal",
        answer="Rien de notable.",
        evidence=(ToolEvidence("c0", "search_datasets", {}, "Found 0 datasets", False),),
        instances=instances,
    )
    result = asyncio.run(judge.failure_modes(data))
    by_judge = {mode: verdict.judge_id for mode, verdict in result.items()}
    # The four modes no rule decides come from the LLM, the five mechanical ones from the rules.
    assert {m for m, j in by_judge.items() if j == LLM_ID} == {
        FailureMode.MISINTERPRETATION,
        FailureMode.WRONG_RESOURCE,
        FailureMode.MISSING_CAVEAT,
        FailureMode.NO_FALLBACK,
    }
    assert outcome(result[FailureMode.TOOL_OMISSION]) == "pass"  # the rule's "absent" stands
    assert outcome(result[FailureMode.NO_FALLBACK]) == "fail"  # the LLM's "present"
    assert len(grader.of("failure_modes")) == 1  # one call for the open modes of the tier
    spent = [v.input_tokens for v in result.values() if v.judge_id == LLM_ID]
    assert sorted(spent) == [0, 0, 0, 100]  # the call's tokens counted once


def test_a_trace_judged_hybrid_asks_the_llm_only_about_open_criteria() -> None:
    grader = Grader(default_answers())
    judge = HybridJudge(llm_judge(grader))
    task = real_tasks()["task_0002"]
    trace = example_trace("task_0002_mcp.json")
    judgement = asyncio.run(judge_trace(judge, task, trace))
    rules = asyncio.run(judge_trace(judge.rules, task, trace))
    open_criteria = [c.index for c in rules.criteria if outcome(c.verdict) == "unscored"]
    assert len(grader.of("criterion")) == len(open_criteria)
    for ruled, hybrid in zip(rules.criteria, judgement.criteria, strict=True):
        if ruled.index in open_criteria:
            assert hybrid.verdict.judge_id == LLM_ID and outcome(hybrid.verdict) == "pass"
        else:
            assert hybrid.verdict == ruled.verdict
    assert judgement.accuracy("optimal").coverage.value == 1.0
    assert judgement.judge_id == "hybrid:test/grader"
