"""The ``Judge`` protocol: one method per question the scoring asks, and what each one sees.

Both judges (deterministic and LLM) implement it, so the scoring code never knows which one it
talks to. Every method is ``async`` so that an LLM judge can answer many questions concurrently;
the deterministic judge simply returns.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from datagouv_eval_pipeline.core.judges.verdict import CallClassification, FailureMode, Verdict
from datagouv_eval_pipeline.core.semantic import ActionInstance, detect_error
from datagouv_eval_pipeline.core.tasks import Criterion, RequiredAction, TaskSpec, Tier
from datagouv_eval_pipeline.core.traces import ToolCall, Trace, WireExchange


@dataclass(frozen=True, slots=True)
class ToolEvidence:
    """One tool call as a judge sees it: what was asked and what came back.

    Attributes:
        call_id: The tool call id.
        tool: The literal tool name.
        arguments: The call's arguments.
        result: The full text the tool returned (prompts truncate it, deterministic checks don't).
        errored: Whether the call failed (the mapper's error rules).
        http_requests: The HTTP requests the call's program sent, when recorded (they tell the
            grounding check which ids the call really looked up).
    """

    call_id: str
    tool: str
    arguments: Mapping[str, Any]
    result: str
    errored: bool
    http_requests: tuple[WireExchange, ...] | None = None

    def as_tool_call(self) -> ToolCall:
        """The evidence back as a trace ``ToolCall`` (to reuse trace-level checks)."""
        return ToolCall(
            id=self.call_id,
            name=self.tool,
            arguments=dict(self.arguments),
            result=self.result,
            error=self.errored,
            http_requests=list(self.http_requests) if self.http_requests is not None else None,
        )


def tool_evidence(trace: Trace) -> tuple[ToolEvidence, ...]:
    """Every tool call of a trace as evidence, with the mapper's error flag."""
    return tuple(
        ToolEvidence(
            call.id,
            call.name,
            call.arguments,
            call.result,
            detect_error(call)[0],
            tuple(call.http_requests) if call.http_requests is not None else None,
        )
        for call in trace.tool_calls
    )


@dataclass(frozen=True, slots=True)
class CriterionInput:
    """Everything the criterion question looks at.

    Attributes:
        question: The user's question.
        answer: The agent's final answer.
        criterion: The criterion with its optional hints.
        evidence: The tool calls and results of the run.
        task: The task, for machine-checkable facts (expected values and sources).
        cited_urls: The agent's structured citations, when it gave some.
    """

    question: str
    answer: str
    criterion: Criterion
    evidence: Sequence[ToolEvidence] = ()
    task: TaskSpec | None = None
    cited_urls: Sequence[str] | None = None


@dataclass(frozen=True, slots=True)
class TrajectoryInput:
    """Everything the trajectory question looks at, for one tier.

    Attributes:
        chain: The tier's action chain (``search.datasets > get.data``).
        required: The tier's required actions.
        actual: The trace's semantic action instances, in call order.
        tier: The tier judged.
        question: The user's question.
    """

    chain: str
    required: Sequence[RequiredAction]
    actual: Sequence[ActionInstance]
    tier: Tier
    question: str = ""


@dataclass(frozen=True, slots=True)
class CriterionJudgement:
    """A criterion and its verdict, as the failure-mode judge receives them.

    Attributes:
        criterion: The criterion text.
        verdict: The criterion's verdict.
    """

    criterion: str
    verdict: Verdict


@dataclass(frozen=True, slots=True)
class FailureModeInput:
    """Everything the failure-mode question looks at, for one tier.

    Attributes:
        task: The task (prompt, tier's chain and required actions, expected behaviour).
        tier: The tier judged: required actions and criteria are that tier's only.
        answer: The final answer.
        evidence: The tool calls with their results.
        instances: The trace's semantic action instances, in call order.
        criteria: The tier's criteria with their verdicts.
        modes: The modes to judge.
    """

    task: TaskSpec
    tier: Tier
    answer: str
    evidence: tuple[ToolEvidence, ...]
    instances: tuple[ActionInstance, ...]
    criteria: tuple[CriterionJudgement, ...] = ()
    modes: tuple[FailureMode, ...] = tuple(FailureMode)
    cited_urls: tuple[str, ...] | None = field(default=None)


@runtime_checkable
class Judge(Protocol):
    """A judge answers the five questions of the scoring with structured verdicts.

    A judge never raises for a judging failure: an error, a timeout or an invalid output gives an
    ``unscored`` verdict carrying the error.
    """

    @property
    def judge_id(self) -> str:
        """Stable identifier recorded on every verdict (e.g. ``deterministic@3``)."""
        ...

    async def criterion(self, data: CriterionInput) -> Verdict:
        """Does the answer meet one criterion (``data``: the answer, the criterion, the run)?"""
        ...

    async def arguments(
        self, required_action: RequiredAction, candidate_instances: Sequence[ActionInstance]
    ) -> list[Verdict]:
        """Do a candidate's arguments satisfy a required action? One verdict per candidate."""
        ...

    async def trajectory(self, data: TrajectoryInput) -> Verdict:
        """How well does the actual action sequence follow a tier's chain (score in [0, 1])?"""
        ...

    async def failure_modes(self, data: FailureModeInput) -> dict[FailureMode, Verdict]:
        """Which failure modes does the run show, judged against ``data.tier``?"""
        ...

    async def classify_call(
        self, call: ToolCall, action_names: Collection[str]
    ) -> CallClassification:
        """Which semantic actions (with arguments) did an undecided code or CLI call perform?"""
        ...
