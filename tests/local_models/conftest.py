"""The real llama.cpp server with the plumbing model, or a skip naming what is missing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from datagouv_eval_pipeline.world.local_models import (
    LlamaServer,
    LlamaServerSpec,
    RuntimeMissingError,
    find_runtime,
)
from datagouv_eval_pipeline.world.local_models.plumbing import (
    TOOLS_TEMPLATE,
    gguf_problem,
    plumbing_gguf,
)

ALIAS = "smollm2-135m"


def plumbing_spec(**overrides: object) -> LlamaServerSpec:
    """SmolLM2-135M on one thread (OpenMP threads spin when the 2 cores are shared)."""
    values: dict[str, object] = {
        "gguf": plumbing_gguf(),
        "alias": ALIAS,
        "context_window": 4096,
        "threads": 1,
        "max_output_tokens": 48,
        "chat_template_file": TOOLS_TEMPLATE,
    }
    values.update(overrides)
    return LlamaServerSpec(**values)  # type: ignore[arg-type]


def require_llama() -> None:
    """Skip, naming what is missing, unless the runtime and the plumbing model are installed."""
    try:
        find_runtime()
    except RuntimeMissingError as error:
        pytest.skip(str(error))
    problem = gguf_problem()
    if problem is not None:
        pytest.skip(problem)


@pytest.fixture(scope="package")
def llama() -> Iterator[LlamaServer]:
    """One real server for the package's tests (it loads in a few seconds)."""
    require_llama()
    with LlamaServer(plumbing_spec()) as server:
        yield server
