"""Judge one trace: every question of the scoring, asked concurrently, collected as verdicts.

Order of work for one trace:

1. calls the deterministic mapper left undecided are classified (with arguments), unless the
   mapping stage already did (:func:`classify_unmapped`, its classifications are passed in), and
   the classified actions join the instance list at their call's position;
2. then, concurrently: each *unique* criterion once (the optimal tier repeats the minimal
   criteria; the verdict serves both), the arguments of each required action against the
   instances of the same name, and each tier's trajectory;
3. finally each tier's failure modes, told the tier and given that tier's criteria verdicts.

Concurrency is bounded by the judge's limiter, not here. The instance-level usage metrics are
recomputed with the argument verdicts (:func:`judged_instance_score`).

What cannot apply is not asked: without any tool (capability set none) or in a tier that requires
no action, the trajectory and TOOL_OMISSION are ``not_applicable`` verdicts whatever the judge,
and without any tool the judged action precision, recall and F1 are NULL "not applicable".
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from datagouv_eval_pipeline.core.judges.judgement_record import (
    ArgumentRecord,
    CriterionRecord,
    JudgementRecord,
    TierJudgementRecord,
    all_verdicts,
)
from datagouv_eval_pipeline.core.judges.protocol import (
    CriterionInput,
    CriterionJudgement,
    FailureModeInput,
    Judge,
    TrajectoryInput,
    tool_evidence,
)
from datagouv_eval_pipeline.core.judges.verdict import (
    CallClassification,
    FailureMode,
    Question,
    Verdict,
    aggregate,
    judge_spend,
    not_applicable,
    outcome,
)
from datagouv_eval_pipeline.core.metrics import (
    NO_TOOL,
    ActionInstanceScore,
    PairCache,
    action_instance_score,
)
from datagouv_eval_pipeline.core.metrics import not_applicable as metric_not_applicable
from datagouv_eval_pipeline.core.semantic import (
    ActionInstance,
    ActionRegistry,
    TraceMapping,
    load_registry,
    map_trace,
)
from datagouv_eval_pipeline.core.tasks import TIERS, RequiredAction, TaskSpec, Tier
from datagouv_eval_pipeline.core.traces import Trace

CONFIDENCE_JUDGE = 0.7
"""Confidence of an action instance found by a judge's classification."""


async def classify_unmapped(
    judge: Judge,
    trace: Trace,
    mapping: TraceMapping,
    registry: ActionRegistry | None = None,
) -> tuple[CallClassification, ...]:
    """Ask the judge about each call the deterministic mapper left undecided, in trace order.

    The rules decided every other call; a judge failure is an unscored verdict with its reason
    (the call then keeps no action), never an exception.
    """
    if not mapping.unmapped_call_ids:
        return ()
    names = sorted((registry or load_registry()).action_names)
    calls = {call.id: call for call in trace.tool_calls}
    return tuple(
        await asyncio.gather(
            *(judge.classify_call(calls[i], names) for i in mapping.unmapped_call_ids)
        )
    )


def judged_instance_score(
    required: Sequence[RequiredAction],
    instances: Sequence[ActionInstance],
    results: Sequence[ArgumentRecord],
) -> ActionInstanceScore:
    """The metrics' maximum one-to-one matching, with pairs decided by argument verdicts.

    A passed verdict makes the pair eligible, a failed one rules it out; an unscored pair is left
    to the metrics' own rule (strict values compared, ``criteria`` arguments accepted unverified
    and counted in ``unverified_criteria``), so coverage stays visible there.
    """
    # Pre-filling the metrics' argument-match memo is how verdicts decide the pairs.
    pairs: PairCache = {}
    for result in results:
        action = required[result.required_index]
        for index, verdict in zip(result.candidates, result.verdicts, strict=True):
            state = outcome(verdict)
            if state == "pass":
                pairs[(id(action), index)] = ()
            elif state == "fail":
                pairs[(id(action), index)] = None
    return action_instance_score(required, instances, pairs)


def merge_classifications(
    mapping: TraceMapping, classifications: Sequence[CallClassification]
) -> tuple[ActionInstance, ...]:
    """The mapping's instances with classified calls' actions inserted at their call's place."""
    found = {c.call_id: c for c in classifications if outcome(c.verdict) == "pass"}
    instances: list[ActionInstance] = []
    for call in mapping.calls:
        instances.extend(call.instances)
        classified = found.get(call.call_id)
        if classified is None or call.instances:
            continue
        for action in classified.actions:
            instances.append(
                ActionInstance(
                    action=action.action,
                    args=dict(action.args),
                    source_call_id=call.call_id,
                    source_tool=call.tool_name,
                    category=call.category,
                    confidence=CONFIDENCE_JUDGE,
                    errored=call.errored,
                    reason=f"classified by {classified.verdict.judge_id}",
                )
            )
    return tuple(instances)


def inapplicable_reason(trace: Trace, required: Sequence[RequiredAction]) -> str | None:
    """Why a tier's trajectory and TOOL_OMISSION do not apply to the run; None when they do."""
    if trace.tool_less:
        return NO_TOOL
    if not required:
        return "the tier requires no actions"
    return None


async def judge_trace(
    judge: Judge,
    task: TaskSpec,
    trace: Trace,
    *,
    mapping: TraceMapping | None = None,
    tiers: Sequence[Tier] = TIERS,
    classify: bool = True,
    classifications: Sequence[CallClassification] | None = None,
) -> JudgementRecord:
    """Ask every scoring question about one trace.

    Args:
        judge: The judge (deterministic or LLM).
        task: The task the trace attempted.
        trace: The agent's run.
        mapping: The trace's action mapping; computed with the packaged registry when absent.
        tiers: The tiers to judge.
        classify: Whether to send calls the mapper left undecided to the judge.
        classifications: The undecided calls' classifications made in the mapping stage; when
            given, they are used as they are and the judge is not asked again.

    Returns:
        Every verdict. Judge failures are unscored verdicts, never exceptions.

    Raises:
        ValueError: When the trace is for another task.
    """
    if trace.task_id != task.task_id:
        raise ValueError(f"the trace is for task {trace.task_id!r}, not {task.task_id!r}")
    registry = load_registry()
    if mapping is None:
        mapping = map_trace(trace, registry)
    evidence = tool_evidence(trace)

    if classifications is not None:
        classified = tuple(classifications)
    elif classify:
        classified = await classify_unmapped(judge, trace, mapping, registry)
    else:
        classified = ()
    instances = merge_classifications(mapping, classified)

    all_criteria = task.criteria("optimal")
    n_minimal = len(task.evaluation_criteria.minimal)
    cited = trace.cited_urls
    criteria_jobs = [
        judge.criterion(CriterionInput(task.prompt, trace.answer, criterion, evidence, task, cited))
        for criterion in all_criteria
    ]

    # Each (required action, candidate) pair is judged once even if both tiers list the action.
    required_by_tier = {tier: task.chain(tier).required_actions for tier in tiers}
    unique_required: dict[int, RequiredAction] = {}
    for required in required_by_tier.values():
        for action in required:
            unique_required.setdefault(id(action), action)
    candidates_of: dict[int, tuple[int, ...]] = {
        key: tuple(i for i, inst in enumerate(instances) if inst.action == action.name)
        for key, action in unique_required.items()
    }
    argument_keys = [key for key in unique_required if candidates_of[key]]
    argument_jobs = [
        judge.arguments(unique_required[key], [instances[i] for i in candidates_of[key]])
        for key in argument_keys
    ]
    inapplicable = {tier: inapplicable_reason(trace, required_by_tier[tier]) for tier in tiers}
    asked = [tier for tier in tiers if inapplicable[tier] is None]
    trajectory_jobs = [
        judge.trajectory(
            TrajectoryInput(
                task.chain(tier).chain, required_by_tier[tier], instances, tier, task.prompt
            )
        )
        for tier in asked
    ]
    criterion_verdicts, argument_lists, trajectories = await asyncio.gather(
        asyncio.gather(*criteria_jobs),
        asyncio.gather(*argument_jobs),
        asyncio.gather(*trajectory_jobs),
    )
    argument_verdicts: dict[int, list[Verdict]] = dict(
        zip(argument_keys, argument_lists, strict=True)
    )
    answered: dict[Tier, Verdict] = dict(zip(asked, trajectories, strict=True))
    trajectory: dict[Tier, Verdict] = {}
    for tier in tiers:
        why = inapplicable[tier]
        trajectory[tier] = (
            answered[tier]
            if why is None
            else not_applicable(
                Question.TRAJECTORY, why, judge_id=judge.judge_id, details={"tier": tier}
            )
        )

    criteria = [
        CriterionRecord(
            index=i,
            tier="minimal" if i < n_minimal else "optimal",
            criterion=" ".join(c.criteria.split()),
            verdict=criterion_verdicts[i],
        )
        for i, c in enumerate(all_criteria)
    ]

    arguments: dict[Tier, list[ArgumentRecord]] = {}
    instance_scores: dict[Tier, ActionInstanceScore] = {}
    for tier in tiers:
        results = [
            ArgumentRecord(
                required_index=r_index,
                action=action.name,
                candidates=list(candidates_of[id(action)]),
                verdicts=argument_verdicts.get(id(action), []),
            )
            for r_index, action in enumerate(required_by_tier[tier])
        ]
        arguments[tier] = results
        instance_scores[tier] = judged_instance_score(required_by_tier[tier], instances, results)

    mode_jobs = [
        judge.failure_modes(
            FailureModeInput(
                task=task,
                tier=tier,
                answer=trace.answer,
                evidence=evidence,
                instances=instances,
                criteria=tuple(
                    CriterionJudgement(c.criterion, c.verdict)
                    for c in criteria
                    if tier == "optimal" or c.tier == "minimal"
                ),
                cited_urls=tuple(cited) if cited is not None else None,
            )
        )
        for tier in tiers
    ]
    modes = list(await asyncio.gather(*mode_jobs))
    for position, tier in enumerate(tiers):
        why = inapplicable[tier]
        # Whatever the judge said: an action cannot be omitted where none could be taken, and a
        # run without any tool cannot stop gathering early (it had nothing to gather with); an
        # empty answer stays the judge's EARLY_STOP.
        overridden = [FailureMode.TOOL_OMISSION] if why is not None else []
        if trace.tool_less and trace.answer.strip():
            overridden.append(FailureMode.EARLY_STOP)
        for mode in overridden:
            if mode in modes[position]:
                modes[position] = {
                    **modes[position],
                    mode: not_applicable(
                        Question.FAILURE_MODE,
                        why or NO_TOOL,
                        judge_id=judge.judge_id,
                        details={"mode": mode.value, "tier": tier},
                    ),
                }
    blocks: dict[str, TierJudgementRecord] = {}
    for tier, tier_modes in zip(tiers, modes, strict=True):
        usage = instance_scores[tier]
        # Without any tool the judged usage does not apply either (NULL with the reason).
        none = metric_not_applicable(NO_TOOL) if trace.tool_less else None
        blocks[tier] = TierJudgementRecord(
            accuracy=aggregate(
                c.verdict for c in criteria if tier == "optimal" or c.tier == "minimal"
            ),
            criteria=[c.index for c in criteria if tier == "optimal" or c.tier == "minimal"],
            trajectory=trajectory[tier],
            action_precision=none or usage.precision,
            action_recall=none or usage.recall,
            action_f1=none or usage.f1,
            unverified_criteria=usage.unverified_criteria,
            arguments=arguments[tier],
            failure_modes={mode.value: verdict for mode, verdict in tier_modes.items()},
        )
    return JudgementRecord(
        task_id=task.task_id,
        judge_id=judge.judge_id,
        criteria=criteria,
        tiers=blocks,
        classifications=list(classified),
        judge_spend=judge_spend(all_verdicts(criteria, blocks, classified)),
    )


def judge_trace_sync(judge: Judge, task: TaskSpec, trace: Trace, **kwargs: Any) -> JudgementRecord:
    """:func:`judge_trace` from synchronous code (runs its own event loop)."""
    return asyncio.run(judge_trace(judge, task, trace, **kwargs))
