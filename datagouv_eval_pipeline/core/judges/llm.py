"""The LLM judge: pydantic-ai agents with a typed output per question.

Every question is one agent run whose ``output_type`` is the question's pydantic model (see
:mod:`~datagouv_eval_pipeline.core.judges.prompts`), so no JSON is parsed out of free text. A run
that
errors, times out, or whose output still fails validation after ``output_retries`` gives an
``unscored`` verdict with the error; the tokens it spent are still counted. Before any model call
the content-addressed cache is consulted (:mod:`~datagouv_eval_pipeline.core.judges.cache`).

Strict argument values are checked by rule before the model is asked (a wrong id is wrong
whatever a model says); only candidates with ``criteria`` arguments go to the model.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_ai import Agent
from pydantic_ai.exceptions import (
    ModelAPIError,
    ModelAuthenticationError,
    ModelNotFoundError,
    ModelRequestRejectedError,
    UnexpectedModelBehavior,
)
from pydantic_ai.settings import ModelSettings
from pydantic_ai.usage import RunUsage

from datagouv_eval_pipeline.base.text import canonical_json
from datagouv_eval_pipeline.core.judges.cache import JudgeCache, cache_key
from datagouv_eval_pipeline.core.judges.config import (
    DEFAULT_CONCURRENCY,
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT_S,
    JudgeConfig,
    Role,
    RoleModel,
)
from datagouv_eval_pipeline.core.judges.deterministic import DeterministicJudge
from datagouv_eval_pipeline.core.judges.prompts import (
    ARGUMENTS_PROMPT,
    CLASSIFICATION_PROMPT,
    CRITERION_PROMPT,
    FAILURE_MODES_PROMPT,
    TRAJECTORY_PROMPT,
    ArgumentsOutput,
    ClassificationOutput,
    CriterionOutput,
    FailureModesOutput,
    JudgePrompt,
    TrajectoryOutput,
    neutralise,
)
from datagouv_eval_pipeline.core.judges.protocol import (
    CriterionInput,
    FailureModeInput,
    ToolEvidence,
    TrajectoryInput,
)
from datagouv_eval_pipeline.core.judges.render import (
    CRITERION_BUDGET,
    FAILURE_MODE_BUDGET,
    EvidenceBudget,
    clip,
    render_evidence,
    render_instances,
    render_required,
)
from datagouv_eval_pipeline.core.judges.verdict import (
    CallClassification,
    ClassifiedAction,
    FailureMode,
    Question,
    Verdict,
    VerdictStatus,
    outcome,
    unscored,
)
from datagouv_eval_pipeline.core.providers import (
    ManagedModel,
    RateLimit,
    RateLimiter,
    RateLimiters,
    RetryPolicy,
    RetryWait,
    counting_requests,
    process_rate_limiters,
)
from datagouv_eval_pipeline.core.semantic import ActionInstance
from datagouv_eval_pipeline.core.tasks import RequiredAction, default_arg_names
from datagouv_eval_pipeline.core.traces import ToolCall

OutT = TypeVar("OutT", bound=BaseModel)
ValueT = TypeVar("ValueT", int, float)


def _first(given: ValueT | None, provider: ValueT | None, default: ValueT) -> ValueT:
    """The judge's own setting, else its provider's, else the judge's default."""
    if given is not None:
        return given
    return provider if provider is not None else default


# Errors a retry cannot fix: the request itself is refused.
_PERMANENT = (ModelAuthenticationError, ModelNotFoundError, ModelRequestRejectedError)


@dataclass(frozen=True, slots=True)
class _Answer:
    output: BaseModel | None
    error: str | None
    input_tokens: int
    output_tokens: int
    cached: bool
    role_model: RoleModel
    requests: int = 0
    """HTTP requests the question sent (retries included; 0 from the cache)."""


class LLMJudge:
    """A judge backed by language models, one per role.

    Args:
        models: The model of each role; ``"default"`` answers every role not listed.
        limiters: Provider rate limiters; each role's model uses its provider's (the process's
            shared ones in the pipeline, so judges and agents of a provider share one quota).
            None: unpaced.
        max_concurrency: Judge requests in flight at once, per role model.
        cache: Answer cache (None: every question calls the model).
        timeout_s: Deadline of one model request.
        retry: Retries of transient provider errors (429, 5xx, network); the SDK's are off.
        output_retries: Chances the model gets to fix an invalid output.
        action_descriptions: One-line description per semantic action, for the classifier.
        max_active: Agent runs in progress at once (default: 4 x ``max_concurrency``).
            Questions beyond it wait cheaply before any set-up, so a large batch does not
            delay its first request by setting up every run first.
    """

    def __init__(
        self,
        models: Mapping[Role | str, RoleModel],
        *,
        limiters: RateLimiters | None = None,
        max_concurrency: int = 8,
        cache: JudgeCache | None = None,
        timeout_s: float | None = 60.0,
        retry: RetryPolicy | None = None,
        output_retries: int = 1,
        action_descriptions: Mapping[str, str] | None = None,
        max_active: int | None = None,
    ) -> None:
        if "default" not in models and not all(role in models for role in _ROLE_PROMPTS):
            raise ValueError("give a 'default' model or one model for every role")
        self._models = dict(models)
        self.cache = cache
        self.retry = retry or RetryPolicy(retries=2)
        self.output_retries = output_retries
        self.action_descriptions = dict(action_descriptions or {})
        self._guarded: dict[str, ManagedModel] = {}
        for role, role_model in self._models.items():
            limiter = None
            if limiters is not None:
                limiter = limiters.get(role_model.limiter_key, role_model.rate_limit)
            self._guarded[role] = ManagedModel(
                role_model.model,
                limiter,
                retry=self.retry,
                max_concurrency=max_concurrency,
                timeout_s=timeout_s,
                rebuild=role_model.rebuild,
            )
        self._agents: dict[str, Agent[None, Any]] = {}
        self._rules = DeterministicJudge()
        self.max_active = max_active if max_active is not None else 4 * max_concurrency
        self._active: dict[int, asyncio.Semaphore] = {}
        self._rendered: dict[tuple[int, EvidenceBudget], tuple[Sequence[ToolEvidence], str]] = {}

    @classmethod
    def from_config(
        cls,
        config: JudgeConfig,
        models: Mapping[Role | str, RoleModel],
        *,
        limiters: RateLimiters | None = None,
    ) -> LLMJudge:
        """Build a judge with a config's limits and cache around resolved models.

        Args:
            config: Concurrency, timeout, retries, cache.
            models: The resolved model of each role.
            limiters: Provider rate limiters (default: the process's, shared with agents).
        """
        if config.requests_per_minute is not None:
            # The config's rate applies to the providers models.yml gives no limit for.
            models = {
                role: model
                if model.rate_limit is not None
                else replace(model, rate_limit=RateLimit(config.requests_per_minute))
                for role, model in models.items()
            }
        # What the config leaves unset follows the provider of the default model (models.yml),
        # then the judge's defaults.
        default = models.get("default") or next(iter(models.values()))
        concurrency = _first(config.max_concurrency, default.concurrency, DEFAULT_CONCURRENCY)
        return cls(
            models,
            limiters=limiters if limiters is not None else process_rate_limiters(),
            max_concurrency=concurrency,
            cache=JudgeCache(config.cache_dir) if config.cache_dir is not None else None,
            timeout_s=_first(config.timeout_s, default.timeout_s, DEFAULT_TIMEOUT_S),
            retry=RetryPolicy(
                retries=_first(config.retries, default.retries, DEFAULT_RETRIES),
                base_delay_s=config.retry_delay_s,
                min_delay_s=min(config.retry_delay_s, RetryPolicy().min_delay_s),
                # A short back-off stays short: the jitter is at most the first delay.
                jitter_s=min(config.retry_delay_s, RetryPolicy().jitter_s),
            ),
            output_retries=config.output_retries,
        )

    @property
    def judge_id(self) -> str:
        """``llm:<default model id>`` (each verdict names the model of its own role)."""
        default = self._models.get("default") or next(iter(self._models.values()))
        return f"llm:{default.model_id}"

    @property
    def model_ids(self) -> dict[str, str]:
        """The model id of each configured role (``default`` answers the others)."""
        return {role: model.model_id for role, model in self._models.items()}

    @property
    def model_requests(self) -> int:
        """HTTP requests sent to the models, retries included (cache hits excluded)."""
        return sum(model.requests for model in self._guarded.values())

    async def aclose(self) -> None:
        """Close the models' HTTP clients (call it at the end of each event loop)."""
        for model in self._guarded.values():
            await model.aclose()

    @property
    def limiter_keys(self) -> dict[str, str]:
        """The provider quota (rate limiter key) of each configured role."""
        return {role: model.limiter_key for role, model in self._models.items()}

    def limiter_of(self, role: str) -> RateLimiter | None:
        """The rate limiter a role's requests go through (None: unpaced)."""
        return self._guarded[role if role in self._guarded else "default"].limiter

    @property
    def waits(self) -> list[RetryWait]:
        """Every wait of the judge's requests (rate limiters and retries), in order per role."""
        return [wait for model in self._guarded.values() for wait in model.waits]

    @property
    def waited_s(self) -> float:
        """Seconds the judge's requests waited (rate limiters and retries)."""
        return sum(wait.seconds for wait in self.waits)

    # -- plumbing ---------------------------------------------------------------------------------

    def _role_key(self, role: Role) -> str:
        return role if role in self._models else "default"

    def _agent(self, role: Role, prompt: JudgePrompt) -> Agent[None, Any]:
        key = self._role_key(role)
        agent_key = f"{key}:{prompt.id}"
        agent = self._agents.get(agent_key)
        if agent is None:
            role_model = self._models[key]
            settings: ModelSettings = {}
            if role_model.temperature is not None:
                settings["temperature"] = role_model.temperature
            agent = Agent(
                self._guarded[key],
                output_type=prompt.output_type,
                instructions=prompt.instructions,
                model_settings=settings or None,
                retries=self.output_retries,
                name=f"judge-{prompt.id}",
            )
            self._agents[agent_key] = agent
        return agent

    async def _ask(self, role: Role, prompt: JudgePrompt, message: str) -> _Answer:
        role_model = self._models[self._role_key(role)]
        settings_json = canonical_json({"temperature": role_model.temperature})
        key = cache_key(role_model.model_id, prompt.hash, settings_json, message)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                try:
                    stored = prompt.output_type.model_validate_json(hit.output_json)
                except ValidationError:
                    pass  # a corrupt entry is asked again and overwritten
                else:
                    return _Answer(stored, None, 0, 0, True, role_model)
        async with self._active_slot():
            with counting_requests() as sent:
                output, error, input_tokens, output_tokens = await self._call_model(
                    role, prompt, message
                )
        if output is not None and self.cache is not None:
            self.cache.put(
                key,
                model_id=role_model.model_id,
                prompt_id=prompt.id,
                prompt_hash=prompt.hash,
                output_json=output.model_dump_json(),
                input_tokens=input_tokens,
                output_tokens=output_tokens,
            )
        return _Answer(output, error, input_tokens, output_tokens, False, role_model, sent[0])

    def _evidence(self, evidence: Sequence[ToolEvidence], budget: EvidenceBudget) -> str:
        # The runner passes one evidence tuple to every question of a trace: render it once.
        key = (id(evidence), budget)
        cached = self._rendered.get(key)
        if cached is not None and cached[0] is evidence:
            return cached[1]
        text = render_evidence(evidence, budget)
        if len(self._rendered) >= 64:
            self._rendered.clear()
        self._rendered[key] = (evidence, text)
        return text

    def _active_slot(self) -> asyncio.Semaphore:
        loop_id = id(asyncio.get_running_loop())
        semaphore = self._active.get(loop_id)
        if semaphore is None:
            # One judge may serve several asyncio.run calls; a semaphore belongs to one loop.
            self._active = {loop_id: asyncio.Semaphore(self.max_active)}
            semaphore = self._active[loop_id]
        return semaphore

    async def _call_model(
        self, role: Role, prompt: JudgePrompt, message: str
    ) -> tuple[BaseModel | None, str | None, int, int]:
        """Run the role's agent: ``(output, error, input tokens, output tokens)``.

        Tokens of failed attempts are included (the usage object is shared by the retries).
        """
        usage = RunUsage()
        agent = self._agent(role, prompt)
        try:
            # Provider retries happen per request inside ManagedModel, never around the run.
            result = await agent.run(message, usage=usage)
        except UnexpectedModelBehavior as exc:
            error = f"invalid judge output: {exc}"
        except TimeoutError:
            error = "judge timed out"
        except ModelAPIError as exc:
            if _permanent(exc):
                error = f"judge request refused: {type(exc).__name__}: {exc}"
            else:
                error = f"judge provider error: {type(exc).__name__}: {exc}"
        except Exception as exc:  # a judge failure must never crash scoring
            error = f"judge error: {type(exc).__name__}: {exc}"
        else:
            return result.output, None, usage.input_tokens, usage.output_tokens
        return None, error, usage.input_tokens, usage.output_tokens

    def _verdict(
        self,
        question: Question,
        prompt: JudgePrompt,
        answer: _Answer,
        *,
        passed: bool | None = None,
        score: float | None = None,
        reason: str = "",
        error: str | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> Verdict:
        role_model = answer.role_model
        failure = error or answer.error
        cost = role_model.cost(answer.input_tokens, answer.output_tokens)
        common: dict[str, Any] = {
            "judge_id": f"llm:{role_model.model_id}",
            "prompt_hash": prompt.hash,
            "input_tokens": answer.input_tokens,
            "output_tokens": answer.output_tokens,
            "requests": answer.requests,
            "cost": cost,
            "currency": role_model.currency if cost is not None else None,
        }
        if failure is not None:
            return unscored(question, failure, details=details, **common)
        return Verdict(
            question=question,
            status=VerdictStatus.OK,
            passed=passed,
            score=score,
            reason=reason,
            cached=answer.cached,
            details=dict(details or {}),
            **common,
        )

    # -- the five questions ---------------------------------------------------------------------

    async def criterion(self, data: CriterionInput) -> Verdict:
        """Ask the model whether the answer meets the criterion, showing it the tool results."""
        shown_answer = data.answer
        if data.cited_urls:
            shown_answer += "\n\nCited URLs: " + ", ".join(data.cited_urls)
        message = CRITERION_PROMPT.render(
            question=neutralise(data.question),
            criterion=neutralise(data.criterion.criteria.strip()),
            answer=neutralise(shown_answer) if shown_answer.strip() else "(empty answer)",
            evidence=self._evidence(data.evidence, CRITERION_BUDGET),
        )
        reply = await self._ask("criterion", CRITERION_PROMPT, message)
        out = _typed(reply.output, CriterionOutput)
        if out is None:
            return self._verdict(Question.CRITERION, CRITERION_PROMPT, reply)
        return self._verdict(
            Question.CRITERION,
            CRITERION_PROMPT,
            reply,
            passed=out.passed,
            reason=out.reason,
            details={"grounded": out.grounded},
        )

    async def arguments(
        self, required_action: RequiredAction, candidate_instances: Sequence[ActionInstance]
    ) -> list[Verdict]:
        """Strict values by rule, ``criteria`` arguments by the model (one call per action)."""
        verdicts = self._rules.arguments_sync(required_action, candidate_instances)
        pending = [i for i, verdict in enumerate(verdicts) if outcome(verdict) == "unscored"]
        if not pending:
            return verdicts
        listing = "\n".join(
            f"{number}. "
            + neutralise(
                json.dumps(dict(candidate_instances[i].args), ensure_ascii=False, default=str)
            )
            for number, i in enumerate(pending)
        )
        message = ARGUMENTS_PROMPT.render(
            required=render_required([required_action]), candidates=listing
        )
        reply = await self._ask("arguments", ARGUMENTS_PROMPT, message)
        out = _typed(reply.output, ArgumentsOutput)
        problem = None
        by_number: dict[int, Any] = {}
        if out is not None:
            for match in out.matches:
                by_number.setdefault(match.candidate, match)
            expected = set(range(len(pending)))
            if set(by_number) != expected or len(out.matches) != len(pending):
                problem = (
                    f"invalid judge output: expected one decision for each of candidates "
                    f"{sorted(expected)}, got {[m.candidate for m in out.matches]}"
                )
        # Tokens are attributed to the first verdict of the call so sums stay exact.
        for number, index in enumerate(pending):
            share = reply if number == 0 else _free(reply)
            base = verdicts[index].details
            if out is None or problem is not None:
                verdicts[index] = self._verdict(
                    Question.ARGUMENTS, ARGUMENTS_PROMPT, share, error=problem, details=base
                )
                continue
            match = by_number[number]
            verdicts[index] = self._verdict(
                Question.ARGUMENTS,
                ARGUMENTS_PROMPT,
                share,
                passed=match.correct,
                reason=match.reason,
                details=base,
            )
        return verdicts

    async def trajectory(self, data: TrajectoryInput) -> Verdict:
        """Ask the model for a banded adherence score of one tier's chain."""
        tier = data.tier
        message = TRAJECTORY_PROMPT.render(
            tier=tier,
            question=neutralise(data.question),
            chain=" ".join(data.chain.split()),
            required=render_required(data.required),
            actual=render_instances(data.actual),
        )
        reply = await self._ask("trajectory", TRAJECTORY_PROMPT, message)
        out = _typed(reply.output, TrajectoryOutput)
        if out is None:
            return self._verdict(
                Question.TRAJECTORY, TRAJECTORY_PROMPT, reply, details={"tier": tier}
            )
        return self._verdict(
            Question.TRAJECTORY,
            TRAJECTORY_PROMPT,
            reply,
            score=out.score,
            reason=out.reason,
            details={"tier": tier},
        )

    async def failure_modes(self, data: FailureModeInput) -> dict[FailureMode, Verdict]:
        """One call for every mode, told which tier it judges."""
        criteria_lines = []
        for judged in data.criteria:
            state = outcome(judged.verdict)
            note = judged.verdict.reason if state != "unscored" else judged.verdict.error
            criteria_lines.append(
                f"- [{state.upper()}] {' '.join(judged.criterion.split())} -- {note}"
            )
        message = FAILURE_MODES_PROMPT.render(
            tier=data.tier,
            question=neutralise(data.task.prompt),
            criteria=neutralise("\n".join(criteria_lines) or "(no criteria)"),
            required=(
                f"chain: {' '.join(data.task.chain(data.tier).chain.split())}\n"
                + render_required(data.task.chain(data.tier).required_actions)
            ),
            evidence=self._evidence(data.evidence, FAILURE_MODE_BUDGET),
            answer=neutralise(data.answer) if data.answer.strip() else "(empty answer)",
        )
        reply = await self._ask("failure_modes", FAILURE_MODES_PROMPT, message)
        out = _typed(reply.output, FailureModesOutput)
        result: dict[FailureMode, Verdict] = {}
        for number, mode in enumerate(data.modes):
            share = reply if number == 0 else _free(reply)
            details = {"mode": mode.value, "tier": data.tier}
            if out is None:
                result[mode] = self._verdict(
                    Question.FAILURE_MODE, FAILURE_MODES_PROMPT, share, details=details
                )
                continue
            judgement = getattr(out, mode.value)
            result[mode] = self._verdict(
                Question.FAILURE_MODE,
                FAILURE_MODES_PROMPT,
                share,
                passed=not judgement.present,
                reason=judgement.reason,
                details=details,
            )
        return result

    async def classify_call(
        self, call: ToolCall, action_names: Collection[str]
    ) -> CallClassification:
        """Ask the model which actions (with arguments) a code or CLI call performed."""
        allowed = sorted(action_names)
        arg_names = sorted(default_arg_names())
        actions = "\n".join(
            f"- {name}"
            + (f": {self.action_descriptions[name]}" if name in self.action_descriptions else "")
            for name in allowed
        )
        message = CLASSIFICATION_PROMPT.render(
            actions=actions,
            arg_names=", ".join(arg_names),
            call=neutralise(_render_call(call)),
            result=neutralise(clip(call.result, 1500)) or "(empty result)",
        )
        reply = await self._ask("classification", CLASSIFICATION_PROMPT, message)
        out = _typed(reply.output, ClassificationOutput)
        details: dict[str, Any] = {"call_id": call.id}
        if out is None:
            verdict = self._verdict(
                Question.CLASSIFICATION, CLASSIFICATION_PROMPT, reply, details=details
            )
            return CallClassification(call.id, (), verdict)
        unknown = [a.action for a in out.actions if a.action not in action_names]
        bad_args = sorted({k for a in out.actions for k in a.args if k not in arg_names})
        problem = None
        if unknown:
            problem = f"invalid judge output: unknown action(s) {unknown}"
        elif bad_args:
            problem = f"invalid judge output: unknown argument name(s) {bad_args}"
        if problem is not None:
            verdict = self._verdict(
                Question.CLASSIFICATION,
                CLASSIFICATION_PROMPT,
                reply,
                error=problem,
                details=details,
            )
            return CallClassification(call.id, (), verdict)
        classified = tuple(
            ClassifiedAction(a.action, {k: v for k, v in a.args.items() if v is not None})
            for a in out.actions
        )
        details["actions"] = [
            {"action": item.action, "args": dict(item.args)} for item in classified
        ]
        verdict = self._verdict(
            Question.CLASSIFICATION,
            CLASSIFICATION_PROMPT,
            reply,
            passed=True,
            reason=out.reason,
            details=details,
        )
        return CallClassification(call.id, classified, verdict)


_ROLE_PROMPTS: dict[str, JudgePrompt] = {
    "criterion": CRITERION_PROMPT,
    "arguments": ARGUMENTS_PROMPT,
    "trajectory": TRAJECTORY_PROMPT,
    "failure_modes": FAILURE_MODES_PROMPT,
    "classification": CLASSIFICATION_PROMPT,
}


def _render_call(call: ToolCall) -> str:
    """A call with code and commands shown verbatim (JSON escapes would hide their structure)."""
    lines = [f"tool: {call.name}"]
    for name, value in call.arguments.items():
        if isinstance(value, str) and ("\n" in value or len(value) > 80):
            lines.append(f"{name}:\n{clip(value, 4000)}")
        else:
            lines.append(f"{name}: {json.dumps(value, ensure_ascii=False, default=str)}")
    return "\n".join(lines)


def _permanent(error: ModelAPIError) -> bool:
    """Whether retrying cannot help: the request itself is refused (auth, unknown model, 4xx)."""
    if isinstance(error, _PERMANENT):
        return True
    status = getattr(error, "status_code", None)
    return isinstance(status, int) and 400 <= status < 500 and status not in (408, 409, 429)


def _typed(output: BaseModel | None, kind: type[OutT]) -> OutT | None:
    return output if isinstance(output, kind) else None


def _free(answer: _Answer) -> _Answer:
    """The same answer with no tokens nor requests (the 2nd..nth verdict drawn from one call)."""
    return _Answer(answer.output, answer.error, 0, 0, answer.cached, answer.role_model)
