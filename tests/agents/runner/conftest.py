"""Fixtures of the agent-run tests: one twin for the session, the cells and the tasks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from datagouv_eval_pipeline.core.benchmark.cells import Cell, expand_cells
from datagouv_eval_pipeline.core.benchmark.loader import load_benchmark_config
from datagouv_eval_pipeline.core.tasks.loader import TASK_SPECS_DIR, load_task_specs
from datagouv_eval_pipeline.core.tasks.spec import TaskSpec
from datagouv_eval_pipeline.world.api.server import TwinServer


@pytest.fixture(scope="session")
def twin() -> Iterator[TwinServer]:
    """The twin on a free port (REST, Tabular and the three MCP versions)."""
    server = TwinServer()
    with server:
        yield server


@pytest.fixture(scope="session")
def cells() -> dict[str, Cell]:
    config = load_benchmark_config()
    names = [etype.name for etype in config.evaluation_types.evaluation_types]
    return {cell.key: cell for cell in expand_cells(config, names)}


@pytest.fixture(scope="session")
def tasks() -> dict[str, TaskSpec]:
    return {spec.task_id: spec for spec in load_task_specs([Path(TASK_SPECS_DIR)])}
