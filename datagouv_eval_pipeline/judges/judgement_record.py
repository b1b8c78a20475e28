"""The stored form of a :class:`~datagouv_eval_pipeline.judges.runner.TraceJudgement`, typed.

``TraceJudgement.to_json()`` is what the ``judge_scores`` stage writes per trace;
:class:`JudgementRecord` is its schema, validated when the document is read back, so readers (the
warehouse rows) use attributes, and a wrong field is an error naming it. Verdicts are the
:class:`~datagouv_eval_pipeline.judges.verdict.Verdict` model itself; classifications are the
:class:`~datagouv_eval_pipeline.judges.verdict.CallClassification` dataclass, stored as
:func:`classification_to_json` writes them (the ``model`` field is derived from the verdict's
judge id, so reading drops it and writing gives it back).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer

from datagouv_eval_pipeline.judges.verdict import CallClassification, JudgeSpend, Verdict
from datagouv_eval_pipeline.metrics.score_record import ValueRecord


def classification_to_json(classification: CallClassification) -> dict[str, Any]:
    """A JSON-ready dict of one classification (what the mapping and judge documents hold).

    ``model`` is the model the verdict's judge id names (``None`` for the rules).
    """
    verdict = classification.verdict
    judge_id = verdict.judge_id
    return {
        "call_id": classification.call_id,
        "actions": [{"action": a.action, "args": dict(a.args)} for a in classification.actions],
        "model": judge_id.split(":", 1)[1] if ":" in judge_id else None,
        "verdict": verdict.model_dump(mode="json"),
    }


def _without_model(data: Any) -> Any:
    # ``model`` is derived from the verdict's judge id: not a field of the classification.
    if isinstance(data, dict) and "model" in data:
        return {key: value for key, value in data.items() if key != "model"}
    return data


StoredClassification = Annotated[
    CallClassification,
    BeforeValidator(_without_model),
    PlainSerializer(classification_to_json, return_type=dict[str, Any]),
]
"""A classification as the documents store it (validated into the dataclass when read)."""


def _spend_json(spend: JudgeSpend) -> dict[str, Any]:
    return spend.to_json()


def _questions_were_calls(data: Any) -> Any:
    # Documents written before questions and requests were told apart name questions ``calls``
    # (and recorded no requests: read as 0).
    if isinstance(data, dict) and "calls" in data and "questions" not in data:
        return {("questions" if key == "calls" else key): value for key, value in data.items()}
    return data


StoredJudgeSpend = Annotated[
    JudgeSpend,
    BeforeValidator(_questions_were_calls),
    PlainSerializer(_spend_json, return_type=dict[str, Any]),
]
"""Judge tokens and cost as the documents store them."""


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AccuracyRecord(_Record):
    """The mean of the scored criteria verdicts and the coverage behind it."""

    mean: ValueRecord
    scored: int
    total: int
    coverage: ValueRecord
    unscored_errors: dict[str, int] = Field(default_factory=dict)


class ArgumentRecord(_Record):
    """The argument verdicts of one required action against its candidate instances."""

    required_index: int
    action: str
    candidates: list[int]
    verdicts: list[Verdict]


class TierJudgementRecord(_Record):
    """Every judged metric and verdict of one tier."""

    accuracy: AccuracyRecord
    criteria: list[int]
    trajectory: Verdict
    action_precision: ValueRecord
    action_recall: ValueRecord
    action_f1: ValueRecord
    unverified_criteria: int | None
    arguments: list[ArgumentRecord]
    failure_modes: dict[str, Verdict]

    def metric(self, name: str) -> ValueRecord:
        """One of the value fields by name (``action_f1``, ...)."""
        value = getattr(self, name)
        if not isinstance(value, ValueRecord):
            raise AttributeError(f"{name} is not a metric of the tier block")
        return value


class CriterionRecord(_Record):
    """One unique criterion of the task and its verdict."""

    index: int
    tier: str
    criterion: str
    verdict: Verdict


class JudgementRecord(_Record):
    """Every verdict about one trace, as stored."""

    task_id: str
    judge_id: str
    criteria: list[CriterionRecord]
    tiers: dict[str, TierJudgementRecord]
    classifications: list[StoredClassification]
    judge_spend: StoredJudgeSpend

    def verdicts_with_prompt(self) -> list[Verdict]:
        """The criteria, trajectory and failure-mode verdicts that carry a prompt hash."""
        found = [criterion.verdict for criterion in self.criteria]
        for block in self.tiers.values():
            found.append(block.trajectory)
            found.extend(block.failure_modes.values())
        return [verdict for verdict in found if verdict.prompt_hash]
