"""Fixtures of the ``datagouv`` CLI tests: the real twin over HTTP and an isolated environment."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from datagouv_eval_pipeline.world.api.server import TwinServer
from datagouv_eval_pipeline.world.catalogue.catalog import CatalogStore
from datagouv_eval_pipeline.world.catalogue.urls import TwinUrls
from datagouv_eval_pipeline.world.datagouv_cli import BASE_URL_ENV, RETRY_WAIT_ENV

from .helpers import Cli


@pytest.fixture(scope="session")
def store() -> CatalogStore:
    return CatalogStore.load()


@pytest.fixture(scope="session")
def twin(store: CatalogStore) -> Iterator[TwinUrls]:
    """The twin on a free 127.0.0.1 port, without the MCP mounts (not needed here)."""
    with TwinServer(store, mcp_versions=()) as urls:
        yield urls


@pytest.fixture
def cli(tmp_path: Path, twin: TwinUrls) -> Cli:
    home = tmp_path / "home"
    home.mkdir()
    env: dict[str, str | None] = {
        "HOME": str(home),
        BASE_URL_ENV: twin.site,
        # Keep the library's 5 attempts and their messages, without its 4-10 s sleeps.
        RETRY_WAIT_ENV: "0",
        "COLUMNS": "80",
    }
    return Cli(home, env)
