"""Deterministic trajectory adherence: walk a tier's chain over the actual instance sequence.

The walk keeps a cursor into the instance list. An action matches the first non-errored instance of
that name at or after the cursor and moves the cursor just past it; an unmatched action leaves the
cursor where it is. A sequence walks its children in order. Every branch of a parallel group starts
at the group's cursor and the group ends at the furthest branch end. The score is the share of the
chain's actions that matched.

The walk is greedy by design (it is the issue's definition): it is cheap, explainable step by
step, and a trace that follows the chain scores 1. It is not an optimal alignment, so appending an
instance can let an earlier-unmatched action match late and push the cursor past later actions (see
``docs/metrics.md``).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from datagouv_eval_pipeline.core.metrics.values import NOT_APPLICABLE, MetricValue, ratio
from datagouv_eval_pipeline.core.semantic import ActionInstance
from datagouv_eval_pipeline.core.tasks import Action, ChainNode
from datagouv_eval_pipeline.core.tasks import Sequence as ChainSequence


@dataclass(frozen=True, slots=True)
class TrajectoryStep:
    """One chain action and the instance it matched.

    Attributes:
        action: The chain action's name.
        chain_position: Character offset of the action in the chain text.
        instance_index: Index of the matched instance, or None when unmatched.
    """

    action: str
    chain_position: int
    instance_index: int | None


@dataclass(frozen=True, slots=True)
class TrajectoryScore:
    """Result of the chain walk.

    Attributes:
        adherence: matched / actions in the chain.
        matched: Chain actions that matched an instance.
        total: Actions in the chain (repeats counted).
        steps: One step per chain action, left to right.
    """

    adherence: MetricValue
    matched: int
    total: int
    steps: tuple[TrajectoryStep, ...]


def trajectory_adherence(chain: ChainNode, instances: Sequence[ActionInstance]) -> TrajectoryScore:
    """Walk ``chain`` over ``instances`` and return the share of chain actions matched.

    Args:
        chain: A parsed chain (``TaskSpec.chain(tier).tree()``).
        instances: The trace's semantic action instances, in call order.

    Returns:
        The adherence with one step per chain action.
    """
    positions: dict[str, list[int]] = {}
    for index, instance in enumerate(instances):
        if not instance.errored:
            positions.setdefault(instance.action, []).append(index)
    return adherence_indexed(chain, positions)


def _walk(
    node: ChainNode, cursor: int, positions: Mapping[str, list[int]], steps: list[TrajectoryStep]
) -> int:
    # A module function: a recursive closure would be a reference cycle (garbage-collector work).
    if isinstance(node, Action):
        found = positions.get(node.name)
        if found:
            at = bisect_left(found, cursor)
            if at < len(found):
                steps.append(TrajectoryStep(node.name, node.position, found[at]))
                return found[at] + 1
        steps.append(TrajectoryStep(node.name, node.position, None))
        return cursor
    if isinstance(node, ChainSequence):
        for child in node.children:
            cursor = _walk(child, cursor, positions, steps)
        return cursor
    end = cursor
    for branch in node.branches:
        end = max(end, _walk(branch, cursor, positions, steps))
    return end


def adherence_indexed(chain: ChainNode, positions: Mapping[str, list[int]]) -> TrajectoryScore:
    """:func:`trajectory_adherence` from the indexes of the non-errored instances per name.

    Args:
        chain: A parsed chain.
        positions: Per action name, the indexes of its non-errored instances, ascending.
    """
    steps: list[TrajectoryStep] = []
    _walk(chain, 0, positions, steps)
    matched = sum(1 for step in steps if step.instance_index is not None)
    return TrajectoryScore(
        adherence=ratio(matched, len(steps), f"{NOT_APPLICABLE}: the chain has no actions"),
        matched=matched,
        total=len(steps),
        steps=tuple(steps),
    )
