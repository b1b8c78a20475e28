"""One fixture warehouse and one built report for every report test (dbt takes a while)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from datagouv_eval_pipeline.core.benchmark.cells import expand_cells
from datagouv_eval_pipeline.core.benchmark.loader import load_benchmark_config
from datagouv_eval_pipeline.pipeline.report import BuiltReport, build_report, read_sources
from tests.report.report_helpers import FixtureWarehouse, build_fixture_warehouse
from tests.warehouse.warehouse_factories import specs

GENERATED = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)


@pytest.fixture(scope="session")
def fixture_warehouse(tmp_path_factory: pytest.TempPathFactory) -> FixtureWarehouse:
    return build_fixture_warehouse(tmp_path_factory.mktemp("report_warehouse"))


@pytest.fixture(scope="session")
def built_report(
    fixture_warehouse: FixtureWarehouse, tmp_path_factory: pytest.TempPathFactory
) -> BuiltReport:
    sources = read_sources(
        store_root=fixture_warehouse.store_root,
        specs=specs().values(),
        cells=expand_cells(load_benchmark_config()),
    )
    out: Path = tmp_path_factory.mktemp("report_out")
    return build_report(fixture_warehouse.db, out, sources, generated=GENERATED)
