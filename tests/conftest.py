"""Session-wide guards: a test leaves the process's global switches as it found them."""

from __future__ import annotations

from collections.abc import Iterator

import pydantic_ai.models
import pytest


@pytest.fixture(autouse=True)
def _model_requests_switch_restored() -> Iterator[None]:
    # pydantic-ai's ALLOW_MODEL_REQUESTS is process-global: a test that set it and did not put it
    # back made every later test's model requests fail at once, far from the cause.
    before = pydantic_ai.models.ALLOW_MODEL_REQUESTS
    yield
    after = pydantic_ai.models.ALLOW_MODEL_REQUESTS
    pydantic_ai.models.ALLOW_MODEL_REQUESTS = before
    assert after == before, (
        f"the test left pydantic_ai.models.ALLOW_MODEL_REQUESTS={after} (was {before}): "
        "set it with monkeypatch.setattr so that it is restored"
    )
