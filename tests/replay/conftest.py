"""Fixtures: the scripted upstream provider and its script."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from datagouv_eval_pipeline.world.replay import ReplayConfig, ReplayServer

from .scripts import UPSTREAM_KEY, PoolsScript


@pytest.fixture(scope="session")
def _shared_script() -> PoolsScript:
    return PoolsScript()


@pytest.fixture(scope="session")
def _shared_upstream(_shared_script: PoolsScript) -> Iterator[ReplayServer]:
    # One upstream for the session: starting and stopping uvicorn costs ~0.25 s.
    config = ReplayConfig(mode="scripted", responder=_shared_script, required_api_key=UPSTREAM_KEY)
    with ReplayServer(config) as server:
        yield server


@pytest.fixture
def script(_shared_script: PoolsScript) -> PoolsScript:
    """The upstream's script, reset for this test."""
    _shared_script.reset()
    return _shared_script


@pytest.fixture
def upstream(_shared_upstream: ReplayServer, script: PoolsScript) -> ReplayServer:
    """A fake provider that insists on UPSTREAM_KEY, like a real one would."""
    return _shared_upstream
