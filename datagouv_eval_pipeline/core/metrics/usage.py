"""Action usage: precision, recall and F1 at the action-type level and the action-instance level.

Both levels compare a tier's required actions with the semantic action instances of a trace. An
errored instance never counts as having performed its action (the call failed), but it does count
in the precision denominators: the agent spent a call on it. ``docs/metrics.md`` has worked
examples.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from datagouv_eval_pipeline.core.metrics.values import NOT_APPLICABLE, MetricValue, f1, ratio
from datagouv_eval_pipeline.core.semantic import ActionInstance
from datagouv_eval_pipeline.core.tasks import RequiredAction

NO_ACTION_REQUIRED = f"{NOT_APPLICABLE}: the tier requires no actions"
"""Why recall (and so F1) is NULL for a tier that expects no action."""

# isinstance with a tuple: ``str | int`` in an expression builds a new union object at each call.
_SCALARS = (str, int, float, bool)
_CONTAINERS = (dict, list, tuple)
_QUOTES = str.maketrans("", "", "\"'`«»“”‘’„‹›")
_INTEGER = re.compile(r"[-+]?\d+")
# at most 15 significant digits, so that float() is exact and distinct strings stay distinct
_DECIMAL = re.compile(r"[-+]?(?=[\d.]{1,16}(?:[eE]|$))\d*\.?\d+(?:[eE][-+]?\d{1,3})?")


def normalise_value(value: Any) -> str:
    """Return the comparable form of an argument value.

    Case is folded, quotes are removed, whitespace runs become one space and the ends are stripped.
    Numbers compare by value (``5``, ``5.0`` and ``"5"`` are equal); lists and dicts compare by
    their canonical JSON; None is the empty string.
    """
    if value is None:
        return ""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, int):
        text = str(value)
    elif isinstance(value, float):
        text = _number_text(value)
    elif isinstance(value, _CONTAINERS):
        text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    else:
        text = str(value)
    text = " ".join(text.translate(_QUOTES).split()).casefold()
    if _INTEGER.fullmatch(text):
        return str(int(text))
    if _DECIMAL.fullmatch(text):
        return _number_text(float(text))
    return text


def _number_text(number: float) -> str:
    return str(int(number)) if number.is_integer() else repr(number)


@functools.lru_cache(maxsize=4096, typed=True)
def _normalise_scalar(value: str | int | float | bool) -> str:
    # typed=True keeps True and 1 apart (they hash equal).
    return normalise_value(value)


def _normalise_cached(value: Any) -> str:
    if isinstance(value, _SCALARS):
        return _normalise_scalar(value)
    return normalise_value(value)


_UNSEEN: Any = object()


@dataclass(frozen=True, slots=True)
class ActionTypeScore:
    """Action-type level usage of one tier.

    Attributes:
        precision: matched / distinct actual names.
        recall: matched / distinct required names.
        f1: Harmonic mean of precision and recall.
        matched: Required names performed by at least one non-errored instance.
        required: Distinct required names.
        actual: Distinct names among all instances (errored ones included).
        missing: Required names never performed, sorted.
        extra: Actual names that are not required, sorted.
    """

    precision: MetricValue
    recall: MetricValue
    f1: MetricValue
    matched: int
    required: int
    actual: int
    missing: tuple[str, ...]
    extra: tuple[str, ...]


def action_type_score(
    required: Sequence[RequiredAction], instances: Sequence[ActionInstance]
) -> ActionTypeScore:
    """Score usage at the action-type level.

    ``matched = |required names ∩ names of non-errored instances|``,
    ``precision = matched / |distinct names of all instances|``,
    ``recall = matched / |distinct required names|``, ``F1 = 2PR / (P + R)``.

    Args:
        required: The tier's required actions.
        instances: The trace's semantic action instances, in call order.

    Returns:
        The three metrics with the counts behind them; a zero denominator gives None with a reason.
    """
    return type_score_indexed({action.name for action in required}, InstanceIndex(instances))


class InstanceIndex:
    """Facts about a trace's instances that every tier's metrics use, computed once per trace.

    Attributes:
        instances: The instances, in call order.
        by_name: Indexes of the non-errored instances, per action name, in call order.
        actual_names: Names of all instances (errored ones included).
        normalised: Per instance index, argument values normalised so far (filled lazily).
        rows: Per required action (by id), the instances it may pair with (filled lazily).
    """

    __slots__ = ("actual_names", "by_name", "instances", "normalised", "rows")

    def __init__(self, instances: Sequence[ActionInstance]) -> None:
        """Index ``instances`` (one pass)."""
        self.instances = instances
        by_name: dict[str, list[int]] = {}
        actual: set[str] = set()
        for index, instance in enumerate(instances):
            name = instance.action
            actual.add(name)
            if not instance.errored:
                found = by_name.get(name)
                if found is None:
                    by_name[name] = [index]
                else:
                    found.append(index)
        self.by_name = by_name
        self.actual_names = actual
        self.normalised: dict[int, dict[str, str]] = {}
        # id(required action) -> the instances it may pair with; the actions must outlive the
        # index (they belong to the task being scored), so an id is never reused meanwhile.
        self.rows: dict[int, dict[int, tuple[str, ...]]] = {}


def type_score_indexed(required_names: Collection[str], index: InstanceIndex) -> ActionTypeScore:
    """:func:`action_type_score` from distinct required names and an :class:`InstanceIndex`."""
    required_set = set(required_names)
    actual_names = index.actual_names
    performed = index.by_name.keys()  # names of non-errored instances
    matched = len(required_set & performed)
    precision = ratio(matched, len(actual_names), "the trace has no action instances")
    recall = ratio(matched, len(required_set), NO_ACTION_REQUIRED)
    return ActionTypeScore(
        precision=precision,
        recall=recall,
        f1=f1(precision, recall),
        matched=matched,
        required=len(required_set),
        actual=len(actual_names),
        missing=tuple(sorted(required_set - performed)),
        extra=tuple(sorted(actual_names - required_set)),
    )


@dataclass(frozen=True, slots=True)
class MatchedPair:
    """One required action matched to one actual instance.

    Attributes:
        required_index: Index of the required action in the tier's list.
        instance_index: Index of the instance in the trace's instance list.
        action: The shared action name.
        call_id: Id of the tool call the instance came from.
        unverified_criteria: Names of ``criteria`` arguments accepted because a value was present.
    """

    required_index: int
    instance_index: int
    action: str
    call_id: str
    unverified_criteria: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ActionInstanceScore:
    """Action-instance level usage of one tier.

    Attributes:
        precision: matched / number of instances.
        recall: matched / number of required actions.
        f1: Harmonic mean of precision and recall.
        matched: Size of the maximum one-to-one matching.
        required: Number of required actions.
        actual: Number of instances (errored ones included).
        unverified_criteria: ``criteria`` arguments on matched pairs that only a judge can verify.
        pairs: The matching, by required index.
        unmatched_required: Indexes of required actions left unmatched.
    """

    precision: MetricValue
    recall: MetricValue
    f1: MetricValue
    matched: int
    required: int
    actual: int
    unverified_criteria: int
    pairs: tuple[MatchedPair, ...]
    unmatched_required: tuple[int, ...]


ArgSpec = tuple[tuple[str, str | None], ...]
"""(argument name, normalised strict value or None for a criteria argument), per argument."""


def _arg_spec(required: RequiredAction) -> ArgSpec:
    return tuple(
        (arg.name, None if arg.strict_value is None else _normalise_scalar(arg.strict_value))
        for arg in required.args
    )


def _match_spec(
    spec: ArgSpec, args: Mapping[str, Any], normalised: dict[str, str]
) -> tuple[str, ...] | None:
    # normalised: this instance's argument values already normalised (filled as needed)
    unverified: list[str] = []
    for name, strict in spec:
        actual = normalised.get(name)
        if actual is None:
            actual = normalised[name] = _normalise_cached(args.get(name))
        if strict is not None:
            if actual != strict:
                return None
        elif actual == "":
            return None
        else:
            unverified.append(name)
    return tuple(unverified)


def arguments_match(required: RequiredAction, instance: ActionInstance) -> tuple[str, ...] | None:
    """Check an instance's arguments against a required action's.

    A ``strict_value`` argument must equal the instance's value after :func:`normalise_value`; a
    ``criteria`` argument is satisfied when the instance has a non-empty value for it.

    Returns:
        None when an argument fails; otherwise the names of the ``criteria`` arguments accepted
        unverified (empty when every argument was strict).
    """
    return _match_spec(_arg_spec(required), instance.args, {})


PairCache = dict[tuple[int, int], tuple[str, ...] | None]
"""Argument-match results keyed by (id of the required action, instance index)."""


def action_instance_score(
    required: Sequence[RequiredAction],
    instances: Sequence[ActionInstance],
    pair_cache: PairCache | None = None,
) -> ActionInstanceScore:
    """Score usage at the action-instance level with a maximum one-to-one matching.

    A required action and an instance can pair when they share the action name, the instance
    did not error and :func:`arguments_match` accepts the arguments. ``matched`` is the size of a
    maximum bipartite matching (augmenting paths, run per action name);
    ``precision = matched / instances`` and ``recall = matched / required``. Among maximum
    matchings the one found by trying required actions in spec order and instances in call order
    is reported, so results are reproducible.

    Args:
        required: The tier's required actions.
        instances: The trace's semantic action instances, in call order.
        pair_cache: Optional memo of argument-match results shared between the tiers of one trace
            (the optimal tier repeats the minimal tier's required actions). Only valid for the
            same ``instances`` sequence.

    Returns:
        The metrics, the matching and the count of criteria arguments left to a judge.
    """
    return instance_score_indexed(required, None, InstanceIndex(instances), pair_cache)


def arg_specs(required: Sequence[RequiredAction]) -> tuple[ArgSpec, ...]:
    """The comparable form of each required action's arguments (cacheable per task)."""
    return tuple(_arg_spec(action) for action in required)


def _edge_row(
    action: RequiredAction,
    spec: ArgSpec | None,
    index: InstanceIndex,
    pair_cache: PairCache | None,
) -> dict[int, tuple[str, ...]]:
    """The instances ``action`` may pair with (call order), with the criteria accepted on."""
    row: dict[int, tuple[str, ...]] = {}
    candidates = index.by_name.get(action.name)
    if not candidates:
        return row
    if spec is None:
        spec = _arg_spec(action)
    instances = index.instances
    normalised = index.normalised  # per instance, argument values normalised once
    action_key = id(action)
    for i_index in candidates:
        unverified = (
            _UNSEEN if pair_cache is None else pair_cache.get((action_key, i_index), _UNSEEN)
        )
        if unverified is _UNSEEN:
            values = normalised.get(i_index)
            if values is None:
                values = normalised[i_index] = {}
            unverified = _match_spec(spec, instances[i_index].args, values)
            if pair_cache is not None:
                pair_cache[(action_key, i_index)] = unverified
        if unverified is not None:
            row[i_index] = unverified
    return row


def _augment(
    r_index: int, seen: set[int], edges: list[dict[int, tuple[str, ...]]], owner: dict[int, int]
) -> bool:
    # One augmenting-path search (a module function: a recursive closure would be a reference
    # cycle, left for the garbage collector at every call).
    for i_index in edges[r_index]:
        if i_index in seen:
            continue
        seen.add(i_index)
        if i_index not in owner or _augment(owner[i_index], seen, edges, owner):
            owner[i_index] = r_index
            return True
    return False


def instance_score_indexed(
    required: Sequence[RequiredAction],
    specs: Sequence[ArgSpec] | None,
    index: InstanceIndex,
    pair_cache: PairCache | None = None,
) -> ActionInstanceScore:
    """:func:`action_instance_score` on an :class:`InstanceIndex`.

    Args:
        required: The tier's required actions.
        specs: :func:`arg_specs` of ``required`` when cached, else None (computed as needed).
        index: The trace's instances, indexed.
        pair_cache: As for :func:`action_instance_score`.
    """
    instances = index.instances
    # edges[r] = instances that required action r may pair with, in call order, each with the
    # criteria arguments it was accepted on. A row depends only on the action and the instances,
    # so it is computed once per trace (the optimal tier repeats the minimal tier's actions).
    edges: list[dict[int, tuple[str, ...]]] = []
    rows = index.rows
    for r_index, action in enumerate(required):
        row = rows.get(id(action))
        if row is None:
            spec = None if specs is None else specs[r_index]
            row = rows[id(action)] = _edge_row(action, spec, index, pair_cache)
        edges.append(row)

    owner: dict[int, int] = {}  # instance index -> required index
    for r_index, row in enumerate(edges):
        if row:
            _augment(r_index, set(), edges, owner)

    instance_of = {r_index: i_index for i_index, r_index in owner.items()}
    pairs: list[MatchedPair] = []
    unmatched: list[int] = []
    unverified_total = 0
    for r_index in range(len(required)):
        paired = instance_of.get(r_index)
        if paired is None:
            unmatched.append(r_index)
            continue
        instance = instances[paired]
        accepted = edges[r_index][paired]
        unverified_total += len(accepted)
        pairs.append(
            MatchedPair(r_index, paired, instance.action, instance.source_call_id, accepted)
        )
    matched = len(pairs)
    precision = ratio(matched, len(instances), "the trace has no action instances")
    recall = ratio(matched, len(required), NO_ACTION_REQUIRED)
    return ActionInstanceScore(
        precision=precision,
        recall=recall,
        f1=f1(precision, recall),
        matched=matched,
        required=len(required),
        actual=len(instances),
        unverified_criteria=unverified_total,
        pairs=tuple(pairs),
        unmatched_required=tuple(unmatched),
    )
