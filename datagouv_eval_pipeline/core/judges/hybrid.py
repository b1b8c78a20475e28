"""The hybrid judge: the rules decide what they can, an LLM judge decides the rest.

For every question the deterministic judge answers first. A decided verdict (pass, fail or a
score) stands, with the deterministic judge's id and rules hash; only an ``unscored`` rule
verdict goes to the LLM judge, whose verdict then carries the LLM's id (``llm:<provider>/<model>``)
and prompt hash. So each verdict says which judge decided it, and the LLM is asked only what
the rules cannot settle. When the LLM cannot decide either, the verdict stays unscored with both
reasons.

Failure modes are decided per mode: the rules' decided modes stand, the LLM is asked about the
undecided ones only (one call per tier), and a mode the LLM could not decide stays unscored.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace

from datagouv_eval_pipeline.core.judges.deterministic import DeterministicJudge
from datagouv_eval_pipeline.core.judges.llm import LLMJudge
from datagouv_eval_pipeline.core.judges.protocol import (
    CriterionInput,
    FailureModeInput,
    TrajectoryInput,
)
from datagouv_eval_pipeline.core.judges.verdict import (
    CallClassification,
    FailureMode,
    Verdict,
    VerdictStatus,
)
from datagouv_eval_pipeline.core.semantic import ActionInstance
from datagouv_eval_pipeline.core.tasks import RequiredAction
from datagouv_eval_pipeline.core.traces import ToolCall


def _decided(verdict: Verdict) -> bool:
    return verdict.status is VerdictStatus.OK and (
        verdict.passed is not None or verdict.score is not None
    )


def _fallback(rules: Verdict, llm: Verdict) -> Verdict:
    """The LLM's verdict; when it is unscored too, its error says why the rules abstained."""
    if _decided(llm) or not rules.error:
        return llm
    return llm.model_copy(update={"error": f"{llm.error} (rules: {rules.error})"})


class HybridJudge:
    """Rules first, an LLM judge for what they leave unscored.

    Args:
        llm: The LLM judge asked about what the rules cannot decide.
        rules: The deterministic judge (a fresh one by default).
    """

    def __init__(self, llm: LLMJudge, rules: DeterministicJudge | None = None) -> None:
        self.llm = llm
        self.rules = rules or DeterministicJudge()

    @property
    def judge_id(self) -> str:
        """``hybrid:<LLM model id>``; every verdict names the judge that decided it."""
        return f"hybrid:{self.llm.judge_id.removeprefix('llm:')}"

    @property
    def model_requests(self) -> int:
        """Requests the LLM judge sent (cache hits excluded)."""
        return self.llm.model_requests

    async def aclose(self) -> None:
        """Close the LLM judge's HTTP clients (at the end of each event loop)."""
        await self.llm.aclose()

    async def criterion(self, data: CriterionInput) -> Verdict:
        """The rules' verdict when they decide, else the LLM's."""
        ruled = await self.rules.criterion(data)
        if _decided(ruled):
            return ruled
        asked = await self.llm.criterion(data)
        return _fallback(ruled, asked)

    async def arguments(
        self, required_action: RequiredAction, candidate_instances: Sequence[ActionInstance]
    ) -> list[Verdict]:
        """Strict values by rule; only the candidates the rules leave open reach the LLM."""
        # The LLM judge already rules strict values first and asks about the rest only.
        return await self.llm.arguments(required_action, candidate_instances)

    async def trajectory(self, data: TrajectoryInput) -> Verdict:
        """The chain walk's score; the LLM only when the walk cannot score (a bad chain)."""
        ruled = await self.rules.trajectory(data)
        if _decided(ruled):
            return ruled
        asked = await self.llm.trajectory(data)
        return _fallback(ruled, asked)

    async def failure_modes(self, data: FailureModeInput) -> dict[FailureMode, Verdict]:
        """The rules' decided modes stand; the LLM is asked about the undecided ones."""
        ruled = await self.rules.failure_modes(data)
        open_modes = tuple(mode for mode in data.modes if not _decided(ruled[mode]))
        if not open_modes:
            return ruled
        asked = await self.llm.failure_modes(replace(data, modes=open_modes))
        result = dict(ruled)
        for mode in open_modes:
            result[mode] = _fallback(ruled[mode], asked[mode])
        return result

    async def classify_call(
        self, call: ToolCall, action_names: Collection[str]
    ) -> CallClassification:
        """The static mapper left this call undecided: the LLM classifies it."""
        return await self.llm.classify_call(call, action_names)
