"""Judge tests never reach a real model: only FunctionModel (and the local replay server)."""

from __future__ import annotations

from collections.abc import Iterator

import pydantic_ai.models
import pytest


@pytest.fixture(autouse=True)
def _no_model_requests() -> Iterator[None]:
    previous = pydantic_ai.models.ALLOW_MODEL_REQUESTS
    pydantic_ai.models.ALLOW_MODEL_REQUESTS = False
    yield
    pydantic_ai.models.ALLOW_MODEL_REQUESTS = previous
