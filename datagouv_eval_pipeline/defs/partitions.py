"""Partitions: one static partition per cell of every evaluation type of the benchmark YAML.

Dagster allows at most two partition dimensions and a cell has five (model, capability set,
MCP version, skills version, system prompt), so a cell is one composite key built by
``benchmark.keys`` from the YAML and decoded by lookup, never parsed by hand. Static, not
dynamic: the keys exist as soon as the code location loads (a fresh instance needs no sensor
tick), and adding a model or an MCP version to the YAML adds partitions without touching any
existing one.

Every evaluation type and every model of ``models.yml`` contributes partitions, inactive ones
included, so any cell (the real 0.2.14 build of ``real_mcp_server``, a local model not in the
default run, say) can be materialized from the launchpad or the command line
(``experiment --models``, ``--cells``). The cells of the active types and models come first,
then the others; within each block the keys are grouped by provider in ``models.yml`` order, so
each provider's active cells form one contiguous range: that is what the default run (and a
per-provider run) covers.
"""

import dagster as dg

from datagouv_eval_pipeline.benchmark.cells import Cell, expand_cells
from datagouv_eval_pipeline.benchmark.loader import BenchmarkConfig, load_benchmark_config
from datagouv_eval_pipeline.benchmark.selection import model_names


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
"""Every partition's cell, and the cells of the default experiment (a prefix of ``CELLS``)."""
CELLS_BY_KEY: dict[str, Cell] = {cell.key: cell for cell in CELLS}
ACTIVE_KEYS: frozenset[str] = frozenset(cell.key for cell in ACTIVE_CELLS)

cell_partitions = dg.StaticPartitionsDefinition([cell.key for cell in CELLS])


def covering_range(keys: set[str] | frozenset[str]) -> tuple[str, str]:
    """The first and last partition key of the smallest range holding ``keys``.

    Raises:
        ValueError: No key given, or a key that is no partition.
    """
    unknown = sorted(keys - CELLS_BY_KEY.keys())
    if not keys or unknown:
        raise ValueError(f"no partition range for {sorted(keys)} (unknown: {unknown})")
    positions = [index for index, cell in enumerate(CELLS) if cell.key in keys]
    return CELLS[positions[0]].key, CELLS[positions[-1]].key


def provider_ranges() -> dict[str, tuple[str, str]]:
    """First and last partition key of each provider's contiguous range of active cells."""
    ranges: dict[str, tuple[str, str]] = {}
    for cell in ACTIVE_CELLS:
        first = ranges.get(cell.model.provider, (cell.key, cell.key))[0]
        ranges[cell.model.provider] = (first, cell.key)
    return ranges
