"""Fixtures of the pre-flight tests: a clean twin and a drifted twin over real HTTP, and
baselines refreshed from the clean twin for the test tasks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from datagouv_eval_pipeline.pipeline.preflight import ValidationReport, plan_refresh, validate
from datagouv_eval_pipeline.world.api.server import TwinServer
from datagouv_eval_pipeline.world.catalogue.catalog import CatalogStore
from datagouv_eval_pipeline.world.catalogue.urls import TwinUrls

from .factories import DRIFT, TASKS, config


@pytest.fixture(scope="session")
def store() -> CatalogStore:
    return CatalogStore.load()


@pytest.fixture(scope="session")
def twin(store: CatalogStore) -> Iterator[TwinUrls]:
    with TwinServer(store) as urls:
        yield urls


@pytest.fixture(scope="session")
def drift_twin(store: CatalogStore) -> Iterator[TwinUrls]:
    with TwinServer(DRIFT.apply(store)) as urls:
        yield urls


@pytest.fixture(scope="session")
def baselines(
    tmp_path_factory: pytest.TempPathFactory, twin: TwinUrls, store: CatalogStore
) -> Path:
    """Baselines of the test tasks, refreshed from the clean twin (read-only for tests)."""
    directory = tmp_path_factory.mktemp("baselines")
    plan = plan_refresh(TASKS, config(twin, directory))
    assert not plan.errors, plan.errors
    plan.apply()
    return directory


@pytest.fixture(scope="session")
def clean_report(twin: TwinUrls, baselines: Path) -> ValidationReport:
    return validate(TASKS, config(twin, baselines))


@pytest.fixture(scope="session")
def drift_report(drift_twin: TwinUrls, baselines: Path) -> ValidationReport:
    return validate(TASKS, config(drift_twin, baselines))
