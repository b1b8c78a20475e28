"""Choosing models and cells on the command line, without editing the tracked YAML.

``--models PROVIDER/MODEL`` (``experiment``, ``cells``) names models of ``models.yml``, active
or not, in place of the active ones; a glob (``albert/*``) names several. ``--cells KEY``
keeps only some cells: an exact key is found among every cell of the configuration (every
evaluation type, every model), a glob (``offline~baseline-oneshot__*``) among the cells the
other options selected. A name that matches nothing is an error naming it, with close matches.
"""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Sequence

from datagouv_eval_pipeline.core.benchmark.cells import Cell, expand_cells
from datagouv_eval_pipeline.core.benchmark.loader import BenchmarkConfig

_GLOB = frozenset("*?[")


class SelectionError(ValueError):
    """A selection (evaluation type, model, cell, task) the configuration does not have.

    Attributes:
        option: The command-line option that made it (``--models``, ``--cells``), if known.
    """

    def __init__(self, message: str, option: str | None = None) -> None:
        super().__init__(message)
        self.option = option


def _is_glob(pattern: str) -> bool:
    return bool(_GLOB & set(pattern))


def _no_match(what: str, pattern: str, known: Sequence[str], option: str) -> SelectionError:
    close = difflib.get_close_matches(pattern, known, n=3, cutoff=0.5)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return SelectionError(f"no {what} matches {pattern!r} in the configuration{hint}", option)


def model_names(config: BenchmarkConfig) -> list[str]:
    """Every model of ``models.yml`` as ``PROVIDER/MODEL``, in file order."""
    return [
        f"{provider.name}/{entry.name}"
        for provider in config.models.providers
        for entry in provider.models
    ]


def select_models(config: BenchmarkConfig, patterns: Sequence[str]) -> list[str]:
    """The ``PROVIDER/MODEL`` names ``patterns`` match (names or globs), in file order.

    Raises:
        SelectionError: A pattern matches no model (the message lists close names).
    """
    names = model_names(config)
    chosen: set[str] = set()
    for pattern in patterns:
        found = [name for name in names if fnmatch.fnmatchcase(name, pattern)]
        if not found:
            raise _no_match("model (PROVIDER/MODEL)", pattern, names, "--models")
        chosen.update(found)
    return [name for name in names if name in chosen]


def select_cells(
    config: BenchmarkConfig,
    *,
    evaluation_types: Sequence[str] = (),
    models: Sequence[str] = (),
    cells: Sequence[str] = (),
) -> list[Cell]:
    """The cells an experiment covers.

    Args:
        config: The loaded configuration.
        evaluation_types: Only these types (inactive ones included); default: the active ones.
        models: ``PROVIDER/MODEL`` names or globs (inactive models included); default: the
            active models.
        cells: Keep only these cells: exact keys (of any model, and of any type unless
            ``evaluation_types`` are given) or globs (among the cells the other arguments
            select). Default: every selected cell.

    Returns:
        The cells, in configuration order.

    Raises:
        SelectionError: A model or cell pattern matches nothing.
        UnknownEvaluationTypeError: An evaluation type does not exist.
    """
    chosen_models = select_models(config, models) if models else None
    selected = expand_cells(config, list(evaluation_types) or None, chosen_models)
    if not cells:
        return selected
    every: list[Cell] | None = None
    keep: dict[str, Cell] = {}
    for pattern in cells:
        if _is_glob(pattern):
            found = [cell for cell in selected if fnmatch.fnmatchcase(cell.key, pattern)]
            if not found:
                raise _no_match(
                    "selected cell", pattern, [cell.key for cell in selected], "--cells"
                )
        else:
            if every is None:
                types = list(evaluation_types) or [
                    etype.name for etype in config.evaluation_types.evaluation_types
                ]
                every = expand_cells(config, types, model_names(config))
            found = [cell for cell in every if cell.key == pattern]
            if not found:
                raise _no_match("cell", pattern, [cell.key for cell in every], "--cells")
        keep.update((cell.key, cell) for cell in found)
    order = {cell.key: index for index, cell in enumerate(every or selected)}
    return sorted(keep.values(), key=lambda cell: order.get(cell.key, -1))
