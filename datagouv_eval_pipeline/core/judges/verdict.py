"""Verdicts: the one structured answer every judge gives, and how verdicts are aggregated.

A verdict is ``ok`` (it carries ``passed`` and/or ``score``) or ``unscored`` (it carries neither,
only the error that prevented a decision). An unscored verdict has no numeric value at all, so no
aggregation can turn it into a 0: aggregates exclude it and report coverage instead. A question
that cannot apply to the run (a trajectory or TOOL_OMISSION when no tool was available or the tier
expects no action) is ``not_applicable``: no value either, and left out of coverage too (there
was nothing to decide).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from datagouv_eval_pipeline.core.metrics import NOT_APPLICABLE, MetricValue

NEEDS_LLM = "needs an LLM judge"
"""The error of every verdict the deterministic judge leaves to an LLM judge."""


class VerdictStatus(StrEnum):
    """Whether a judge decided."""

    OK = "ok"
    UNSCORED = "unscored"
    NOT_APPLICABLE = "not_applicable"


class Question(StrEnum):
    """What a verdict answers (one per method of the ``Judge`` protocol)."""

    CRITERION = "criterion"
    ARGUMENTS = "arguments"
    TRAJECTORY = "trajectory"
    FAILURE_MODE = "failure_mode"
    CLASSIFICATION = "classification"


class FailureMode(StrEnum):
    """The nine failure modes, grouped knowledge / execution / output."""

    HALLUCINATION = "HALLUCINATION"
    MISINTERPRETATION = "MISINTERPRETATION"
    WRONG_RESOURCE = "WRONG_RESOURCE"
    PARAMETER_ERROR = "PARAMETER_ERROR"
    TOOL_OMISSION = "TOOL_OMISSION"
    EARLY_STOP = "EARLY_STOP"
    REDUNDANT_LOOP = "REDUNDANT_LOOP"
    MISSING_CAVEAT = "MISSING_CAVEAT"
    NO_FALLBACK = "NO_FALLBACK"


class Verdict(BaseModel):
    """One judge decision, with its provenance and what it cost.

    For failure modes, ``passed`` means the trace is *free* of the mode (``passed=False``: the
    mode is present), so that for every question ``passed=True`` is the good outcome.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    question: Question
    """Which question this verdict answers."""
    status: VerdictStatus
    """``ok`` when the judge decided, ``unscored`` when it could not (see ``error``),
    ``not_applicable`` when the question does not apply to the run (see ``reason``)."""
    passed: bool | None = None
    """The binary decision (criterion met, arguments correct, failure mode absent)."""
    score: float | None = Field(default=None, ge=0.0, le=1.0)
    """A graded decision in [0, 1] (trajectory adherence)."""
    reason: str = ""
    """One or two sentences saying why."""
    error: str | None = None
    """Why the verdict is unscored (judge error, timeout, invalid output, needs an LLM judge)."""
    judge_id: str
    """Which judge decided, e.g. ``deterministic@3`` or ``llm:mistral/mistral-small-2603``."""
    prompt_hash: str
    """Hash of the prompt (or rule set) that produced the verdict."""
    input_tokens: int = Field(default=0, ge=0)
    """Judge tokens spent by this call (0 on a cache hit and for the deterministic judge)."""
    output_tokens: int = Field(default=0, ge=0)
    """Judge output tokens spent by this call."""
    requests: int = Field(default=0, ge=0)
    """HTTP requests this call sent to the judge model, retries included (0 on a cache hit, for
    rule verdicts, and for the 2nd..nth verdict drawn from one model answer)."""
    cost: float | None = None
    """Cost of this call in ``currency``; None when the model's prices are unknown."""
    currency: str | None = None
    """ISO 4217 code of ``cost``."""
    cached: bool = False
    """Whether the decision was read from the judge cache (no model call was made)."""
    details: dict[str, Any] = Field(default_factory=dict)
    """Question-specific evidence (hints checked, grounding, per-candidate matches...)."""

    @model_validator(mode="after")
    def _consistent(self) -> Verdict:
        if self.status is VerdictStatus.OK:
            if self.passed is None and self.score is None:
                raise ValueError("an ok verdict needs 'passed' or 'score'")
            if self.error is not None:
                raise ValueError("an ok verdict has no 'error'")
        elif self.status is VerdictStatus.NOT_APPLICABLE:
            if self.passed is not None or self.score is not None or self.error is not None:
                raise ValueError("a not applicable verdict has no 'passed', 'score' or 'error'")
            if not self.reason:
                raise ValueError("a not applicable verdict needs the 'reason' it does not apply")
        else:
            if self.passed is not None or self.score is not None:
                raise ValueError("an unscored verdict has neither 'passed' nor 'score'")
            if not self.error:
                raise ValueError("an unscored verdict needs the 'error' that prevented a decision")
        return self

    @property
    def scored(self) -> bool:
        """Whether the judge decided."""
        return self.status is VerdictStatus.OK

    @property
    def value(self) -> float | None:
        """The verdict as a number: ``score``, else 1.0/0.0 for passed; None when unscored."""
        if self.status is not VerdictStatus.OK:
            return None
        if self.score is not None:
            return self.score
        return 1.0 if self.passed else 0.0

    @property
    def total_tokens(self) -> int:
        """Input plus output judge tokens."""
        return self.input_tokens + self.output_tokens


def unscored(
    question: Question,
    error: str,
    *,
    judge_id: str,
    prompt_hash: str,
    reason: str = "",
    details: Mapping[str, Any] | None = None,
    input_tokens: int = 0,
    output_tokens: int = 0,
    requests: int = 0,
    cost: float | None = None,
    currency: str | None = None,
) -> Verdict:
    """Build an unscored verdict (the only way a judge failure is recorded)."""
    return Verdict(
        question=question,
        status=VerdictStatus.UNSCORED,
        reason=reason or error,
        error=error,
        judge_id=judge_id,
        prompt_hash=prompt_hash,
        details=dict(details or {}),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        requests=requests,
        cost=cost,
        currency=currency,
    )


def not_applicable(
    question: Question,
    why: str,
    *,
    judge_id: str,
    prompt_hash: str = "",
    details: Mapping[str, Any] | None = None,
) -> Verdict:
    """Build a not applicable verdict (reason ``not applicable: why``): no value, no coverage."""
    return Verdict(
        question=question,
        status=VerdictStatus.NOT_APPLICABLE,
        reason=f"{NOT_APPLICABLE}: {why}",
        judge_id=judge_id,
        prompt_hash=prompt_hash,
        details=dict(details or {}),
    )


@dataclass(frozen=True, slots=True)
class ClassifiedAction:
    """One semantic action a judge found in a code or CLI call.

    Attributes:
        action: Semantic action name.
        args: Arguments under their semantic names.
    """

    action: str
    args: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class CallClassification:
    """What a judge says a call the deterministic mapper left undecided did.

    Attributes:
        call_id: The tool call id.
        actions: The actions performed, with arguments (empty: the call performs no action).
        verdict: Status, reason and provenance; ``passed`` is True when classified.
    """

    call_id: str
    actions: tuple[ClassifiedAction, ...]
    verdict: Verdict


# --- aggregation -------------------------------------------------------------------------------


class Aggregate(BaseModel):
    """The mean of the scored verdicts and the coverage behind it (a tier's accuracy)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    mean: MetricValue
    """Mean value over scored verdicts, None (with ``mean.reason``) when none is scored."""
    scored: int
    """Verdicts that are ``ok``."""
    total: int
    """All verdicts that apply (not applicable ones left out)."""
    coverage: MetricValue
    """``scored / total``; None for an empty list."""
    unscored_errors: dict[str, int] = Field(default_factory=dict)
    """Count of unscored verdicts per error."""


def aggregate(verdicts: Iterable[Verdict]) -> Aggregate:
    """Average scored verdicts; unscored ones are excluded and counted in the coverage.

    An unscored verdict contributes to ``total`` only: it can never lower (or raise) the mean.
    When no verdict is scored the mean is None with the reason, never 0.
    """
    values: list[float] = []
    errors: dict[str, int] = {}
    total = 0
    for verdict in verdicts:
        if verdict.status is VerdictStatus.NOT_APPLICABLE:
            continue  # nothing to decide: neither a value nor a gap in coverage
        total += 1
        value = verdict.value
        if value is None:
            key = verdict.error or "unscored"
            errors[key] = errors.get(key, 0) + 1
        else:
            values.append(value)
    if total == 0:
        mean = MetricValue(None, "no verdicts")
        coverage = MetricValue(None, "no verdicts")
    else:
        coverage = MetricValue(len(values) / total)
        mean = (
            MetricValue(sum(values) / len(values))
            if values
            else MetricValue(None, f"all {total} verdicts are unscored")
        )
    return Aggregate(
        mean=mean, scored=len(values), total=total, coverage=coverage, unscored_errors=errors
    )


@dataclass(frozen=True, slots=True)
class JudgeSpend:
    """Judge tokens and cost, kept apart from the agent's usage.

    Attributes:
        questions: Judge questions put to a model (one per model answer: cache hits and rule
            verdicts excluded; the verdicts drawn from one answer count once).
        cache_hits: Verdicts read from the cache.
        input_tokens: Judge input tokens.
        output_tokens: Judge output tokens.
        cost: Total cost, or None when any priced call has an unknown price.
        currency: Currency of ``cost`` (None when nothing was priced).
        requests: HTTP requests actually sent to judge models for those questions, retries
            included (cache hits send none).
    """

    questions: int
    cache_hits: int
    input_tokens: int
    output_tokens: int
    cost: float | None
    currency: str | None
    requests: int = 0

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "questions": self.questions,
            "requests": self.requests,
            "cache_hits": self.cache_hits,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost": self.cost,
            "currency": self.currency,
        }


def judge_spend(verdicts: Iterable[Verdict]) -> JudgeSpend:
    """Sum the judge tokens and cost of verdicts (what this scoring run spent on judges).

    A verdict counts as a question when it sent a request or spent tokens: a server that
    reports no usage still counts its questions, and a question whose every attempt failed
    still counts its requests.
    """
    questions = requests = hits = tokens_in = tokens_out = 0
    cost = 0.0
    unknown = False
    currencies: set[str] = set()
    for verdict in verdicts:
        if verdict.cached:
            hits += 1
            continue
        if verdict.total_tokens == 0 and verdict.requests == 0:
            continue
        questions += 1
        requests += verdict.requests
        tokens_in += verdict.input_tokens
        tokens_out += verdict.output_tokens
        if verdict.cost is None:
            unknown = True
        else:
            cost += verdict.cost
            if verdict.currency:
                currencies.add(verdict.currency)
    if len(currencies) > 1:
        unknown = True
    return JudgeSpend(
        questions=questions,
        cache_hits=hits,
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        cost=None if unknown else cost,
        currency=next(iter(currencies)) if len(currencies) == 1 else None,
        requests=requests,
    )


Outcome = Literal["pass", "fail", "unscored"]


def outcome(verdict: Verdict) -> Outcome:
    """``pass`` / ``fail`` for a decided binary verdict, ``unscored`` otherwise."""
    if verdict.status is not VerdictStatus.OK or verdict.passed is None:
        return "unscored"
    return "pass" if verdict.passed else "fail"
