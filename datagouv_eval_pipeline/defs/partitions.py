"""Partitions: one dynamic partition per cell, the active cells registered, others on demand.

Dagster allows at most two partition dimensions and a cell has five (model, capability set,
MCP version, skills version, system prompt), so a cell is one composite key built by
``benchmark.keys`` from the YAML and decoded by lookup, never parsed by hand.

Dynamic, not static: the partitions of an asset are what the UI counts ("66 % filled"), and
the cells of inactive evaluation types and models (the real 0.2.14 build of
``real_mcp_server``, a local model not in the default run) are not part of the default
experiment. So the instance holds the active cells as partitions, and an inactive cell becomes
one when it is asked for: ``experiment --cells``/``--models``/``--evaluation-type``, the
``new_builds`` sensor, or the launchpad's "Add partition" in the UI (a key of
``datagouv-eval cells``). Every entry point registers the active cells first
(``register_cells``): the CLI (``experiment``, ``dagster ui``), the weekly schedule, and the
``active_cell_partitions`` sensor (on by default) for an instance the CLI never opened. A
registered key stays (with its materializations) when the YAML drops its cell; the stages
leave such a cell alone.

Partition order is the instance's registration order: the active cells in YAML order (grouped
by provider in ``models.yml`` order, so each provider's active cells form one contiguous range
on a fresh instance), then the cells registered later. A run covers a range of that order; the
cells of the range that were not asked for are named in the run's ``cells`` setting, so the
stages leave them alone.
"""

from collections.abc import Collection, Iterable, Sequence

import dagster as dg

from datagouv_eval_pipeline.core.benchmark import (
    BenchmarkConfig,
    Cell,
    expand_cells,
    load_benchmark_config,
    model_names,
)


def _by_provider(cells: list[Cell], order: list[str]) -> list[Cell]:
    """``cells`` grouped by provider, in ``order`` (then any other provider met), stable."""
    providers = list(dict.fromkeys([*order, *(cell.model.provider for cell in cells)]))
    return sorted(cells, key=lambda cell: providers.index(cell.model.provider))


def experiment_cells(config: BenchmarkConfig | None = None) -> tuple[list[Cell], list[Cell]]:
    """Every cell of every evaluation type and model, and those of the active ones (stable order).

    A cell shared by an active and an inactive type is one cell (it lists both types) and
    counts as active; the cells of inactive models are never active.

    Returns:
        ``(every cell, the active cells)``: the active cells first in the former, grouped by
        provider, then the others, grouped by provider.
    """
    config = config or load_benchmark_config()
    names = [etype.name for etype in config.evaluation_types.evaluation_types]
    every = expand_cells(config, names, model_names(config))
    active_keys = {cell.key for cell in expand_cells(config)}
    order = [provider.name for provider in config.models.providers]
    active = _by_provider([cell for cell in every if cell.key in active_keys], order)
    inactive = _by_provider([cell for cell in every if cell.key not in active_keys], order)
    return active + inactive, active


CELLS, ACTIVE_CELLS = experiment_cells()
"""Every cell of the YAML, and the cells of the default experiment (a prefix of ``CELLS``)."""
CELLS_BY_KEY: dict[str, Cell] = {cell.key: cell for cell in CELLS}
ACTIVE_KEYS: frozenset[str] = frozenset(cell.key for cell in ACTIVE_CELLS)

CELL_PARTITIONS = "cells"
"""Name of the dynamic partitions definition of the cells."""
cell_partitions = dg.DynamicPartitionsDefinition(name=CELL_PARTITIONS)


def cells_to_register(registered: Sequence[str], keys: Iterable[str] = ()) -> list[str]:
    """The cells missing from ``registered``: the active ones (in order), then ``keys``.

    Raises:
        ValueError: A key that is no cell of the YAML.
    """
    wanted = list(keys)
    unknown = sorted(set(wanted) - CELLS_BY_KEY.keys())
    if unknown:
        raise ValueError(f"not a cell of the benchmark configuration: {', '.join(unknown)}")
    present = set(registered)
    ordered = dict.fromkeys([*(cell.key for cell in ACTIVE_CELLS), *wanted])
    return [key for key in ordered if key not in present]


def register_cells(instance: dg.DagsterInstance, keys: Iterable[str] = ()) -> list[str]:
    """Make the active cells and ``keys`` partitions of ``instance``; return them all, in order.

    Idempotent: a key already registered keeps its place.

    Raises:
        ValueError: A key that is no cell of the YAML.
    """
    registered = list(instance.get_dynamic_partitions(CELL_PARTITIONS))
    missing = cells_to_register(registered, keys)
    if missing:
        instance.add_dynamic_partitions(CELL_PARTITIONS, missing)
        registered = list(instance.get_dynamic_partitions(CELL_PARTITIONS))
    return registered


def covering_range(keys: Collection[str], order: Sequence[str] | None = None) -> tuple[str, str]:
    """The first and last partition key of the smallest range holding ``keys``.

    Args:
        keys: The cells the range must hold.
        order: The partition keys in order (the instance's, ``register_cells``); default:
            the YAML's order, as a fresh instance registers them.

    Raises:
        ValueError: No key given, or a key that is not in ``order``.
    """
    order = [cell.key for cell in CELLS] if order is None else order
    unknown = sorted(set(keys) - set(order))
    if not keys or unknown:
        raise ValueError(f"no partition range for {sorted(keys)} (unknown: {unknown})")
    positions = [index for index, key in enumerate(order) if key in keys]
    return order[positions[0]], order[positions[-1]]


def range_keys(order: Sequence[str], first: str, last: str) -> list[str]:
    """The partition keys from ``first`` to ``last`` in ``order``."""
    return list(order[order.index(first) : order.index(last) + 1])


def provider_ranges(order: Sequence[str] | None = None) -> dict[str, tuple[str, str]]:
    """First and last partition key of the smallest range of each provider's active cells.

    Args:
        order: The partition keys in order (default: the YAML's, where each provider's
            active cells are contiguous).
    """
    by_provider: dict[str, set[str]] = {}
    for cell in ACTIVE_CELLS:
        by_provider.setdefault(cell.model.provider, set()).add(cell.key)
    return {provider: covering_range(keys, order) for provider, keys in by_provider.items()}
