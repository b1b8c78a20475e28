"""Every verdict about one trace, typed: what the judge runner returns and the stages store.

:func:`~datagouv_eval_pipeline.core.judges.runner.judge_trace` builds a :class:`JudgementRecord`;
the
``judge_scores`` stage stores it as it is. Reading it back validates it, so readers (the warehouse
rows) use attributes, and a wrong field is an error naming it. Verdicts are the
:class:`~datagouv_eval_pipeline.core.judges.verdict.Verdict` model itself; classifications are the
:class:`~datagouv_eval_pipeline.core.judges.verdict.CallClassification` dataclass, stored as
:func:`classification_to_json` writes them (the ``model`` field is derived from the verdict's
judge id, so reading drops it and writing gives it back).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, PlainSerializer

from datagouv_eval_pipeline.core.judges.verdict import (
    Aggregate,
    CallClassification,
    JudgeSpend,
    Verdict,
)
from datagouv_eval_pipeline.core.metrics import MetricValue
from datagouv_eval_pipeline.core.tasks import Tier


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


class ArgumentRecord(_Record):
    """The argument verdicts of one required action against its candidate instances."""

    required_index: int
    """Position in the tier's required actions."""
    action: str
    """The required action's name."""
    candidates: list[int]
    """Indexes of the candidate instances (same action name)."""
    verdicts: list[Verdict]
    """One verdict per candidate."""


class TierJudgementRecord(_Record):
    """Every judged metric and verdict of one tier."""

    accuracy: Aggregate
    """Result accuracy: the mean of the tier's scored criteria verdicts, with coverage."""
    criteria: list[int]
    """Indexes (into :attr:`JudgementRecord.criteria`) of the criteria that count for the tier."""
    trajectory: Verdict
    action_precision: MetricValue
    """The instance-level usage recomputed with the argument verdicts (so ``action_recall``,
    ``action_f1``)."""
    action_recall: MetricValue
    action_f1: MetricValue
    unverified_criteria: int | None
    arguments: list[ArgumentRecord]
    """Per required action of the tier."""
    failure_modes: dict[str, Verdict]
    """Per failure mode (its name)."""

    def metric(self, name: str) -> MetricValue:
        """One of the value fields by name (``action_f1``, ...)."""
        value = getattr(self, name)
        if not isinstance(value, MetricValue):
            raise AttributeError(f"{name} is not a metric of the tier block")
        return value


class CriterionRecord(_Record):
    """One unique criterion of the task and its verdict."""

    index: int
    """Position in ``task.criteria("optimal")`` (minimal criteria come first)."""
    tier: Tier
    """``minimal`` when the criterion belongs to both tiers, else ``optimal``."""
    criterion: str
    verdict: Verdict


class JudgementRecord(_Record):
    """Every verdict about one trace."""

    task_id: str
    judge_id: str
    criteria: list[CriterionRecord]
    """Unique criteria with verdicts, in spec order."""
    tiers: dict[str, TierJudgementRecord]
    classifications: list[StoredClassification]
    """Verdicts on the calls the mapper left undecided."""
    judge_spend: StoredJudgeSpend
    """Judge tokens and cost (separate from the agent's usage)."""

    def accuracy(self, tier: Tier) -> Aggregate:
        """Result accuracy of a tier: mean over scored criteria, with coverage."""
        return self.tiers[tier].accuracy

    def verdicts(self) -> Iterator[Verdict]:
        """Every verdict once (see :func:`all_verdicts`)."""
        return all_verdicts(self.criteria, self.tiers, self.classifications)

    def verdicts_with_prompt(self) -> list[Verdict]:
        """The criteria, trajectory and failure-mode verdicts that carry a prompt hash."""
        found = [criterion.verdict for criterion in self.criteria]
        for block in self.tiers.values():
            found.append(block.trajectory)
            found.extend(block.failure_modes.values())
        return [verdict for verdict in found if verdict.prompt_hash]


def all_verdicts(
    criteria: Iterable[CriterionRecord],
    tiers: Mapping[str, TierJudgementRecord],
    classifications: Iterable[CallClassification],
) -> Iterator[Verdict]:
    """Every verdict of a judgement once: criteria, arguments, trajectories, modes, classifications.

    Both tiers list the minimal tier's argument verdicts: the same objects when just judged, told
    apart by identity (a record read back from JSON holds copies, and its stored spend counts them
    once).
    """
    for criterion in criteria:
        yield criterion.verdict
    seen: set[int] = set()
    for block in tiers.values():
        for result in block.arguments:
            for verdict in result.verdicts:
                if id(verdict) not in seen:
                    seen.add(id(verdict))
                    yield verdict
    for block in tiers.values():
        yield block.trajectory
    for block in tiers.values():
        yield from block.failure_modes.values()
    for classification in classifications:
        yield classification.verdict
