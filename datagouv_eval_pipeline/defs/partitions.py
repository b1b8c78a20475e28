"""Partitions: one static partition per cell of the benchmark YAML.

Dagster allows at most two partition dimensions and a cell has five (model, capability set,
MCP version, skills version, system prompt), so a cell is one composite key built by
``benchmark.keys`` from the YAML and decoded by lookup, never parsed by hand. Static, not
dynamic: the keys exist as soon as the code location loads (a fresh instance needs no sensor
tick), and adding a model or an MCP version to the YAML adds partitions without touching any
existing one. The keys are ordered by provider so each provider's cells form one contiguous
range, which is what a single run (or a per-provider run) covers.
"""

import dagster as dg

from datagouv_eval_pipeline.benchmark.cells import Cell, expand_cells
from datagouv_eval_pipeline.benchmark.loader import load_benchmark_config


def experiment_cells() -> list[Cell]:
    """Every cell of the active evaluation types, grouped by provider (stable order)."""
    cells = expand_cells(load_benchmark_config())
    providers = list(dict.fromkeys(cell.model.provider for cell in cells))
    return sorted(cells, key=lambda cell: providers.index(cell.model.provider))


CELLS: list[Cell] = experiment_cells()
CELLS_BY_KEY: dict[str, Cell] = {cell.key: cell for cell in CELLS}

cell_partitions = dg.StaticPartitionsDefinition([cell.key for cell in CELLS])


def provider_ranges() -> dict[str, tuple[str, str]]:
    """First and last partition key of each provider's contiguous range."""
    ranges: dict[str, tuple[str, str]] = {}
    for cell in CELLS:
        first = ranges.get(cell.model.provider, (cell.key, cell.key))[0]
        ranges[cell.model.provider] = (first, cell.key)
    return ranges
