from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from datagouv_eval_pipeline.core.judges.verdict import (
    NEEDS_LLM,
    Question,
    Verdict,
    VerdictStatus,
    aggregate,
    judge_spend,
    not_applicable,
    outcome,
    unscored,
)


def ok(passed: bool | None = None, score: float | None = None, **extra: Any) -> Verdict:
    return Verdict(
        question=Question.CRITERION,
        status=VerdictStatus.OK,
        passed=passed,
        score=score,
        judge_id="j",
        prompt_hash="h",
        **extra,
    )


def missing(error: str = "judge timed out", **extra: Any) -> Verdict:
    return unscored(Question.CRITERION, error, judge_id="j", prompt_hash="h", **extra)


def test_an_ok_verdict_needs_a_decision_and_an_unscored_one_cannot_carry_one() -> None:
    with pytest.raises(ValidationError, match="needs 'passed' or 'score'"):
        ok()
    with pytest.raises(ValidationError, match="neither 'passed' nor 'score'"):
        Verdict(
            question=Question.CRITERION,
            status=VerdictStatus.UNSCORED,
            passed=False,
            error="boom",
            judge_id="j",
            prompt_hash="h",
        )
    with pytest.raises(ValidationError, match="needs the 'error'"):
        Verdict(
            question=Question.CRITERION,
            status=VerdictStatus.UNSCORED,
            judge_id="j",
            prompt_hash="h",
        )
    with pytest.raises(ValidationError):
        ok(score=1.5)


def test_value_of_each_kind_of_verdict() -> None:
    assert ok(passed=True).value == 1.0
    assert ok(passed=False).value == 0.0
    assert ok(score=0.4).value == 0.4
    assert missing().value is None
    assert outcome(missing()) == "unscored"
    assert outcome(ok(passed=False)) == "fail"


def test_aggregate_excludes_unscored_and_reports_coverage() -> None:
    # 2 passed, 1 failed, 2 unscored: mean over the 3 scored = 2/3; coverage 3/5.
    verdicts = [
        ok(passed=True),
        missing(),
        ok(passed=False),
        missing(NEEDS_LLM),
        ok(passed=True),
    ]
    result = aggregate(verdicts)
    assert result.mean.value == pytest.approx(2 / 3)
    assert (result.scored, result.total) == (3, 5)
    assert result.coverage.value == pytest.approx(3 / 5)
    assert result.unscored_errors == {"judge timed out": 1, NEEDS_LLM: 1}


def test_a_not_applicable_verdict_has_no_value_and_stays_out_of_coverage() -> None:
    none = not_applicable(Question.TRAJECTORY, "no tool available", judge_id="j")
    assert (none.status, none.reason, none.value, none.scored) == (
        VerdictStatus.NOT_APPLICABLE,
        "not applicable: no tool available",
        None,
        False,
    )
    assert outcome(none) == "unscored"
    # 1 passed, 1 unscored, 2 not applicable: mean 1, coverage 1/2 (not 1/4).
    result = aggregate([ok(passed=True), missing(), none, none])
    assert (result.mean.value, result.scored, result.total) == (1.0, 1, 2)
    assert result.coverage.value == 0.5
    with pytest.raises(ValidationError, match="no 'passed', 'score' or 'error'"):
        Verdict(
            question=Question.TRAJECTORY,
            status=VerdictStatus.NOT_APPLICABLE,
            score=0.0,
            reason="not applicable: x",
            judge_id="j",
            prompt_hash="",
        )
    with pytest.raises(ValidationError, match="needs the 'reason'"):
        Verdict(
            question=Question.TRAJECTORY,
            status=VerdictStatus.NOT_APPLICABLE,
            judge_id="j",
            prompt_hash="",
        )


def test_an_all_unscored_aggregate_is_undefined_not_zero() -> None:
    result = aggregate([missing(), missing("invalid judge output: x")])
    assert result.mean.value is None
    assert result.mean.reason == "all 2 verdicts are unscored"
    assert result.coverage.value == 0.0
    assert aggregate([]).mean.value is None


@given(
    decided=st.lists(st.booleans(), min_size=0, max_size=12),
    failures=st.integers(min_value=1, max_value=12),
)
def test_an_unscored_verdict_can_never_become_zero(decided: list[bool], failures: int) -> None:
    # Adding unscored verdicts never changes the mean of the scored ones (a 0 would lower it).
    scored = [ok(passed=value) for value in decided]
    with_failures = scored + [missing() for _ in range(failures)]
    before = aggregate(scored).mean.value
    after = aggregate(with_failures).mean.value
    assert after == before
    if not decided:
        assert after is None
    assert aggregate(with_failures).total == len(decided) + failures


def test_judge_spend_counts_questions_requests_tokens_and_cost_apart_from_cache_hits() -> None:
    verdicts = [
        ok(passed=True, input_tokens=100, output_tokens=10, cost=0.5, currency="EUR"),
        missing(input_tokens=50, output_tokens=0, cost=0.25, currency="EUR"),  # failed, still paid
        ok(passed=True, cached=True),
        ok(passed=False),  # deterministic: no tokens, not a question
    ]
    spend = judge_spend(verdicts)
    assert (spend.questions, spend.cache_hits) == (2, 1)
    assert (spend.input_tokens, spend.output_tokens) == (150, 10)
    assert spend.cost == pytest.approx(0.75)
    assert spend.currency == "EUR"
    unpriced = judge_spend([ok(passed=True, input_tokens=10, output_tokens=1, cost=None)])
    assert unpriced.cost is None
