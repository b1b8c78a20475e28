"""Shared fixtures of the twin tests: one loaded snapshot, an in-process client, a real server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from datagouv_eval_pipeline.world.api.app import TwinConfig, create_app
from datagouv_eval_pipeline.world.api.server import TwinServer
from datagouv_eval_pipeline.world.catalogue.catalog import CatalogStore
from datagouv_eval_pipeline.world.catalogue.urls import TwinUrls


@pytest.fixture(scope="session")
def store() -> CatalogStore:
    return CatalogStore.load()


@pytest.fixture(scope="session")
def client(store: CatalogStore) -> Iterator[TestClient]:
    with TestClient(create_app(store, TwinConfig()), base_url="http://testserver") as test_client:
        yield test_client


@pytest.fixture(scope="session")
def live_twin(store: CatalogStore) -> Iterator[TwinUrls]:
    """The twin served by uvicorn on a free 127.0.0.1 port (real sockets)."""
    with TwinServer(store) as urls:
        yield urls
