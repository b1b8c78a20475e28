"""The per-trace scorer: every deterministic metric of one agent run on one task.

``score_trace`` maps the trace's literal calls to semantic action instances (unless given them),
then computes per tier the action-type and action-instance usage and the trajectory adherence, the
answer checks, efficiency and provenance, into a :class:`ScoreRecord` (what ``datagouv-eval score``
prints and the ``judge_scores`` stage stores); ``docs/metrics.md`` documents every field.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from datagouv_eval_pipeline.core.metrics.catalog import (
    CatalogLookup,
    resolve_mapping_slugs,
    resolve_slug_arguments,
    with_catalog_slugs,
)
from datagouv_eval_pipeline.core.metrics.checks import answer_checks
from datagouv_eval_pipeline.core.metrics.efficiency import efficiency_score
from datagouv_eval_pipeline.core.metrics.provenance import code_version
from datagouv_eval_pipeline.core.metrics.score_record import (
    ActionRecord,
    MappingSummaryRecord,
    PairRecord,
    ScoreProvenance,
    ScoreRecord,
    StepRecord,
    TierRecord,
)
from datagouv_eval_pipeline.core.metrics.trajectory import adherence_indexed
from datagouv_eval_pipeline.core.metrics.usage import (
    ArgSpec,
    InstanceIndex,
    PairCache,
    arg_specs,
    instance_score_indexed,
    type_score_indexed,
)
from datagouv_eval_pipeline.core.metrics.values import (
    NO_TOOL,
    MetricValue,
    not_applicable,
    undefined,
)
from datagouv_eval_pipeline.core.semantic import (
    ActionInstance,
    ActionRegistry,
    CallCategory,
    TraceMapping,
    UnknownVersionError,
    load_registry,
    map_trace,
)
from datagouv_eval_pipeline.core.tasks import (
    TIERS,
    ChainNode,
    Reference,
    RequiredAction,
    TaskSpec,
    Tier,
    action_names,
    references_by_name,
)
from datagouv_eval_pipeline.core.traces import Trace

SCORER_VERSION = "3"
"""Bumped whenever a deterministic metric's definition changes (results are not comparable)."""

TIER_METRICS: tuple[str, ...] = (
    "action_type_precision",
    "action_type_recall",
    "action_type_f1",
    "action_precision",
    "action_recall",
    "action_f1",
    "trajectory_adherence",
)


@dataclass(frozen=True, slots=True)
class _Mapped:
    """The mapper's instances (None when mapping failed) and the stored summary of the mapping."""

    instances: tuple[ActionInstance, ...] | None
    summary: MappingSummaryRecord


# --- task plans (cached: parsing chains and hashing specs dominate the cost of small traces) -----


@dataclass(frozen=True, slots=True)
class _TierPlan:
    required: tuple[RequiredAction, ...]
    chain: ChainNode
    chain_actions: int
    required_names: frozenset[str]
    specs: tuple[ArgSpec, ...]


@dataclass(frozen=True, slots=True)
class _TaskPlan:
    tiers: dict[Tier, _TierPlan]
    spec_hash: str


_PLAN_CACHE_SIZE = 512
# Keyed by id(); the entry keeps the TaskSpec alive, so its id cannot be reused while cached.
_plans: OrderedDict[int, tuple[TaskSpec, _TaskPlan]] = OrderedDict()
_plans_lock = threading.Lock()  # scoring may run in several threads of one process


def _plan(task: TaskSpec) -> _TaskPlan:
    key = id(task)
    with _plans_lock:
        cached = _plans.get(key)
        if cached is not None and cached[0] is task:
            _plans.move_to_end(key)
            return cached[1]
    tiers: dict[Tier, _TierPlan] = {}
    for tier in TIERS:
        level = task.chain(tier)
        tree = level.tree()
        required = tuple(level.required_actions)
        tiers[tier] = _TierPlan(
            required,
            tree,
            len(action_names(tree)),
            frozenset(action.name for action in required),
            arg_specs(required),
        )
    plan = _TaskPlan(tiers=tiers, spec_hash=task.spec_hash())
    with _plans_lock:
        _plans[key] = (task, plan)
        if len(_plans) > _PLAN_CACHE_SIZE:
            _plans.popitem(last=False)
    return plan


# --- mapping -----------------------------------------------------------------------------------


def _map_trace(
    trace: Trace, registry: ActionRegistry | None, catalog: CatalogLookup | None
) -> _Mapped:
    """Run the action mapper; an unknown toolset version becomes a mapping error, not a crash."""
    try:
        mapping = map_trace(trace, registry=registry)
    except UnknownVersionError as error:
        return _Mapped(
            None, _mapping_summary(undefined(f"mapping failed: {error}"), error=str(error))
        )
    return _summary(resolve_mapping_slugs(mapping, catalog))


def _mapping_summary(
    mapped_fraction: MetricValue,
    *,
    counts: dict[str, int] | None = None,
    error: str | None = None,
    registry_version: str | None = None,
    unmapped_call_ids: Sequence[str] = (),
    warnings: Sequence[str] = (),
) -> MappingSummaryRecord:
    return MappingSummaryRecord(
        mapped_fraction=mapped_fraction,
        counts=counts or {},
        error=error,
        registry_version=registry_version,
        unmapped_call_ids=list(unmapped_call_ids),
        warnings=list(warnings),
    )


@functools.lru_cache(maxsize=64)
def _mcp_actions(registry: ActionRegistry, version: str) -> frozenset[str] | None:
    """Actions the MCP server at ``version`` has tools for (None when the version is unknown)."""
    try:
        return frozenset(a for a in registry.action_names if registry.mcp_tools(a, version))
    except UnknownVersionError:
        return None


# ``CallCategory.value`` is a Python-level property; a dict lookup is several times faster.
_CATEGORY_VALUE: dict[CallCategory, str] = {category: category.value for category in CallCategory}


def _summary(mapping: TraceMapping) -> _Mapped:
    fraction = mapping.mapped_fraction
    return _Mapped(
        tuple(mapping.instances),
        _mapping_summary(
            (
                MetricValue(fraction)
                if fraction is not None
                else undefined(mapping.mapped_fraction_reason or "the trace has no calls")
            ),
            counts={_CATEGORY_VALUE[category]: count for category, count in mapping.counts.items()},
            registry_version=mapping.registry_version,
            unmapped_call_ids=mapping.unmapped_call_ids,
            warnings=mapping.warnings,
        ),
    )


# --- scoring -----------------------------------------------------------------------------------


def score_tier(
    required: Sequence[RequiredAction],
    chain: ChainNode,
    instances: Sequence[ActionInstance],
    pair_cache: PairCache | None = None,
) -> TierRecord:
    """Score one tier: action-type and action-instance usage, and trajectory adherence.

    Args:
        required: The tier's required actions (optimal = minimal + additions).
        chain: The tier's parsed chain.
        instances: The trace's semantic action instances, in call order.
        pair_cache: Argument-match memo shared between the tiers of one trace (see
            :func:`action_instance_score`); it must not outlive ``required`` and ``instances``.

    Returns:
        The tier's metrics with the counts and matchings behind them.
    """
    index = InstanceIndex(instances)
    return _score_tier(
        required, {action.name for action in required}, None, chain, index, pair_cache
    )


def _score_tier(
    required: Sequence[RequiredAction],
    required_names: Collection[str],
    specs: Sequence[ArgSpec] | None,
    chain: ChainNode,
    index: InstanceIndex,
    pair_cache: PairCache | None,
) -> TierRecord:
    types = type_score_indexed(required_names, index)
    usage = instance_score_indexed(required, specs, index, pair_cache)
    trajectory = adherence_indexed(chain, index.by_name)
    instances = index.instances
    return TierRecord(
        action_type_precision=types.precision,
        action_type_recall=types.recall,
        action_type_f1=types.f1,
        action_precision=usage.precision,
        action_recall=usage.recall,
        action_f1=usage.f1,
        trajectory_adherence=trajectory.adherence,
        unverified_criteria=usage.unverified_criteria,
        required_action_types=types.required,
        required_actions=usage.required,
        chain_actions=trajectory.total,
        actual_action_types=types.actual,
        actual_actions=usage.actual,
        matched_action_types=types.matched,
        matched_actions=usage.matched,
        matched_chain_actions=trajectory.matched,
        missing_action_types=list(types.missing),
        unmatched_required=list(usage.unmatched_required),
        pairs=[
            PairRecord(
                required_index=pair.required_index,
                action=pair.action,
                call_id=pair.call_id,
                instance_index=pair.instance_index,
                unverified_criteria=list(pair.unverified_criteria),
            )
            for pair in usage.pairs
        ],
        trajectory_steps=[
            StepRecord(
                action=step.action,
                chain_position=step.chain_position,
                instance_index=step.instance_index,
                call_id=(
                    instances[step.instance_index].source_call_id
                    if step.instance_index is not None and step.instance_index < len(instances)
                    else None
                ),
            )
            for step in trajectory.steps
        ],
    )


def _unavailable_tier(plan: _TierPlan, reason: str) -> TierRecord:
    missing = undefined(reason)
    return TierRecord(
        action_type_precision=missing,
        action_type_recall=missing,
        action_type_f1=missing,
        action_precision=missing,
        action_recall=missing,
        action_f1=missing,
        trajectory_adherence=missing,
        unverified_criteria=None,
        required_action_types=len({action.name for action in plan.required}),
        required_actions=len(plan.required),
        chain_actions=plan.chain_actions,
        actual_action_types=None,
        actual_actions=None,
        matched_action_types=None,
        matched_actions=None,
        matched_chain_actions=None,
        missing_action_types=[],
        unmatched_required=[],
        pairs=[],
        trajectory_steps=[],
    )


def score_trace(
    task: TaskSpec,
    trace: Trace,
    *,
    mapping: TraceMapping | None = None,
    instances: Sequence[ActionInstance] | None = None,
    accuracy: Mapping[Tier, float | None] | None = None,
    aliases: Mapping[str, Iterable[str]] | None = None,
    registry: ActionRegistry | None = None,
    catalog: CatalogLookup | None = None,
    references: Iterable[Reference] | None = None,
) -> ScoreRecord:
    """Compute every deterministic score of one trace on one task.

    Args:
        task: The task the trace attempted.
        trace: The agent's run.
        mapping: An action mapping already computed for this trace (e.g. loaded from the
            ``action_mappings`` stage); when absent the mapper is run.
        instances: Instances given directly instead of a mapping (tests, replays); the mapping
            summary then has no counts.
        accuracy: Result accuracy per tier from the judges; None (the default) leaves the
            efficiency ratios undefined with a reason.
        aliases: Known slugs per source id, for the citation check.
        registry: The action registry for the mapper and the tools check (None = the packaged
            one).
        catalog: The catalog the run used (slug ↔ id): a slug given for an id argument is
            resolved before matching, and expected sources may be cited by their slug.
        references: The task's expected values recomputed for this run; the value check
            compares with them (provenance keeps the spec's hash).

    Returns:
        The scores. An unknown toolset version does not raise: the usage and trajectory metrics
        and the tools check are then None with the mapper's message as the reason.

    Raises:
        ValueError: When both ``mapping`` and ``instances`` are given, the trace is for another
            task, or an accuracy is outside [0, 1].
    """
    if mapping is not None and instances is not None:
        raise ValueError("give either 'mapping' or 'instances', not both")
    if trace.task_id != task.task_id:
        raise ValueError(
            f"the trace is for task {trace.task_id!r} but the task is {task.task_id!r}"
        )
    plan = _plan(task)
    if instances is not None:
        summary = _Mapped(
            resolve_slug_arguments(instances, catalog),
            _mapping_summary(undefined("instances were given without a mapping")),
        )
    elif mapping is not None:
        summary = _summary(resolve_mapping_slugs(mapping, catalog))
    else:
        summary = _map_trace(trace, registry, catalog)

    tiers: dict[Tier, TierRecord] = {}
    # One index of the instances serves both tiers: it memoises the argument matches, which the
    # optimal tier (a superset of the minimal one's required actions) reuses.
    index = InstanceIndex(summary.instances) if summary.instances is not None else None
    for tier, tier_plan in plan.tiers.items():
        if index is None:
            tiers[tier] = _unavailable_tier(
                tier_plan, f"no action mapping: {summary.summary.error}"
            )
        else:
            tiers[tier] = _score_tier(
                tier_plan.required,
                tier_plan.required_names,
                tier_plan.specs,
                tier_plan.chain,
                index,
                None,
            )
    if trace.tool_less and not summary.instances:
        # Without any tool the agent cannot act: usage and trajectory do not apply (NULL with
        # the reason), they are not a failure to score 0 (the counts stay, for reading).
        none = not_applicable(NO_TOOL)
        tiers = {
            tier: score.model_copy(update=dict.fromkeys(TIER_METRICS, none))
            for tier, score in tiers.items()
        }

    return ScoreRecord(
        task_id=task.task_id,
        minimal=tiers["minimal"],
        optimal=tiers["optimal"],
        checks=answer_checks(
            with_catalog_slugs(task, catalog),
            trace,
            summary.instances,
            aliases,
            summary.summary.error,
            mcp_actions=(
                _mcp_actions(registry or load_registry(), trace.mcp_version)
                if trace.mcp_version
                else None
            ),
            catalog=catalog,
            references=references_by_name(references, task.task_id),
        ),
        efficiency=efficiency_score(trace, accuracy),
        mapping=summary.summary,
        actions=[ActionRecord.of(instance) for instance in summary.instances or ()],
        provenance=ScoreProvenance(
            spec_hash=plan.spec_hash,
            task_version=task.version,
            model=trace.model,
            mcp_version=trace.mcp_version,
            capabilities=list(trace.capabilities),
            code_version=code_version(),
            scorer_version=SCORER_VERSION,
        ),
    )
