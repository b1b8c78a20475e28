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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from datagouv_eval_pipeline.metrics.values import MetricValue, f1, ratio
from datagouv_eval_pipeline.semantic.instances import ActionInstance
from datagouv_eval_pipeline.tasks.spec import RequiredAction

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
    elif isinstance(value, dict | list | tuple):
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
    if isinstance(value, str | int | float | bool):
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
    required_names = {action.name for action in required}
    actual_names = {instance.action for instance in instances}
    performed = {instance.action for instance in instances if not instance.errored}
    matched = len(required_names & performed)
    precision = ratio(matched, len(actual_names), "the trace has no action instances")
    recall = ratio(matched, len(required_names), "the tier requires no actions")
    return ActionTypeScore(
        precision=precision,
        recall=recall,
        f1=f1(precision, recall),
        matched=matched,
        required=len(required_names),
        actual=len(actual_names),
        missing=tuple(sorted(required_names - performed)),
        extra=tuple(sorted(actual_names - required_names)),
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


# (argument name, normalised strict value or None for a criteria argument)
_ArgSpec = tuple[tuple[str, str | None], ...]


def _arg_spec(required: RequiredAction) -> _ArgSpec:
    return tuple(
        (arg.name, None if arg.strict_value is None else _normalise_scalar(arg.strict_value))
        for arg in required.args
    )


def _match_spec(
    spec: _ArgSpec, args: Mapping[str, Any], normalised: dict[str, str]
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
    # edges[r] = instances that required action r may pair with, in call order.
    edges: list[list[int]] = []
    unverified_by_edge: dict[tuple[int, int], tuple[str, ...]] = {}
    candidates_by_name: dict[str, list[int]] = {}
    normalised: dict[int, dict[str, str]] = {}  # per instance, argument values normalised once
    pairs_seen: PairCache = pair_cache if pair_cache is not None else {}
    for index, instance in enumerate(instances):
        if not instance.errored:
            candidates_by_name.setdefault(instance.action, []).append(index)
    for r_index, action in enumerate(required):
        row: list[int] = []
        candidates = candidates_by_name.get(action.name)
        if candidates:
            action_key = id(action)
            spec = _arg_spec(action)
            for i_index in candidates:
                key = (action_key, i_index)
                unverified = pairs_seen.get(key, _UNSEEN)
                if unverified is _UNSEEN:
                    unverified = pairs_seen[key] = _match_spec(
                        spec, instances[i_index].args, normalised.setdefault(i_index, {})
                    )
                if unverified is not None:
                    row.append(i_index)
                    unverified_by_edge[(r_index, i_index)] = unverified
        edges.append(row)

    owner: dict[int, int] = {}  # instance index -> required index

    def augment(r_index: int, seen: set[int]) -> bool:
        for i_index in edges[r_index]:
            if i_index in seen:
                continue
            seen.add(i_index)
            if i_index not in owner or augment(owner[i_index], seen):
                owner[i_index] = r_index
                return True
        return False

    for r_index in range(len(required)):
        if edges[r_index]:
            augment(r_index, set())

    instance_of = {r_index: i_index for i_index, r_index in owner.items()}
    pairs = [
        MatchedPair(
            r_index,
            instance_of[r_index],
            instances[instance_of[r_index]].action,
            instances[instance_of[r_index]].source_call_id,
            unverified_by_edge[(r_index, instance_of[r_index])],
        )
        for r_index in range(len(required))
        if r_index in instance_of
    ]
    matched = len(pairs)
    precision = ratio(matched, len(instances), "the trace has no action instances")
    recall = ratio(matched, len(required), "the tier requires no actions")
    return ActionInstanceScore(
        precision=precision,
        recall=recall,
        f1=f1(precision, recall),
        matched=matched,
        required=len(required),
        actual=len(instances),
        unverified_criteria=sum(len(pair.unverified_criteria) for pair in pairs),
        pairs=tuple(pairs),
        unmatched_required=tuple(i for i in range(len(required)) if i not in instance_of),
    )
