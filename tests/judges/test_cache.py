from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest

import datagouv_eval_pipeline.core.judges.llm as llm_module
from datagouv_eval_pipeline.core.judges.cache import JudgeCache
from datagouv_eval_pipeline.core.judges.judgement_record import JudgementRecord
from datagouv_eval_pipeline.core.judges.prompts import CRITERION_PROMPT, PROMPTS, JudgePrompt
from datagouv_eval_pipeline.core.judges.runner import judge_trace
from datagouv_eval_pipeline.core.judges.verdict import outcome
from tests.judges.judges_factories import (
    Grader,
    default_answers,
    example_trace,
    llm_judge,
    real_tasks,
)

TRACE = example_trace("task_0002_mcp.json")
TASK = real_tasks()["task_0002"]


def run(grader: Grader, cache_dir: Path, model_id: str = "test/grader") -> JudgementRecord:
    judge = llm_judge(grader, cache=JudgeCache(cache_dir), model_id=model_id)
    return asyncio.run(judge_trace(judge, TASK, TRACE))


def test_rescoring_an_unchanged_trace_makes_no_model_call(tmp_path: Path) -> None:
    first_grader = Grader(default_answers())
    first = run(first_grader, tmp_path)
    calls = len(first_grader.requests)
    # 5 criteria + 2 trajectories + 2 failure-mode calls + 2 argument calls (search query,
    # get.data filters: the two required actions with a criteria argument and a candidate).
    assert calls == 11
    assert first.judge_spend.questions == calls
    second_grader = Grader(default_answers())
    second = run(second_grader, tmp_path)  # a new judge and cache object: the entries are on disk
    assert second_grader.requests == []
    assert second.judge_spend.questions == 0
    assert second.judge_spend.input_tokens == 0
    assert all(v.cached for v in second.verdicts() if v.judge_id.startswith("llm:"))
    assert [c.verdict.passed for c in second.criteria] == [c.verdict.passed for c in first.criteria]
    assert second.tiers["optimal"].trajectory.score == first.tiers["optimal"].trajectory.score


def test_a_changed_prompt_invalidates_exactly_its_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(Grader(default_answers()), tmp_path)
    cache = JudgeCache(tmp_path)
    assert cache.count(prompt_hash=CRITERION_PROMPT.hash) == 5
    edited: JudgePrompt = replace(
        CRITERION_PROMPT, version="2", instructions=CRITERION_PROMPT.instructions + "Be terse.\n"
    )
    assert edited.hash != CRITERION_PROMPT.hash
    monkeypatch.setattr(llm_module, "CRITERION_PROMPT", edited)
    grader = Grader(default_answers())
    result = run(grader, tmp_path)
    assert {request.kind for request in grader.requests} == {"criterion"}
    assert len(grader.requests) == 5  # only the 5 criteria are asked again
    assert all(c.verdict.prompt_hash == edited.hash for c in result.criteria)
    assert all(not c.verdict.cached for c in result.criteria)
    assert result.tiers["minimal"].trajectory.cached


def test_a_changed_model_invalidates_every_entry(tmp_path: Path) -> None:
    run(Grader(default_answers()), tmp_path)
    grader = Grader(default_answers())
    run(grader, tmp_path, model_id="test/other-grader")
    assert len(grader.requests) == 11
    assert JudgeCache(tmp_path).count(model_id="test/other-grader") == 11


def test_failures_are_not_cached(tmp_path: Path) -> None:
    answers = default_answers()
    answers["criterion"] = lambda _: RuntimeError("boom")
    first = run(Grader(answers), tmp_path)
    assert all(outcome(c.verdict) == "unscored" for c in first.criteria)
    grader = Grader(default_answers())
    again = run(grader, tmp_path)
    assert len(grader.of("criterion")) == 5  # asked again, now answered
    assert all(outcome(c.verdict) == "pass" for c in again.criteria)


def test_prune_keeps_current_prompts(tmp_path: Path) -> None:
    run(Grader(default_answers()), tmp_path)
    cache = JudgeCache(tmp_path)
    total = cache.count()
    deleted = cache.prune({p.hash for p in PROMPTS.values() if p.id != "criterion"})
    assert deleted == 5
    assert cache.count() == total - 5
