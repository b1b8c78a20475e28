"""A code-location load imports what the definitions need, not what the assets run with.

Building the definitions (what Dagster does on each load of the code location, and
``datagouv-eval experiment`` before a run) used to import every library the stages use. The
stages now import them when they run: these libraries must stay out of a fresh interpreter
that only builds the definitions. Speed itself is in bench/ (``bench_code_location.py``).
"""

from __future__ import annotations

import importlib

import pytest

from tests.import_probe import modules_after

RUN_TIME_ONLY = (
    # the agents and the LLM judge
    "pydantic_ai",
    "openai",
    "fastmcp",
    "mcp",
    # the warehouse writes, the statistics, the report's plots
    "pandas",
    "scipy",
    "statsmodels",
    "matplotlib",
    # the twin and the MCP builds the resources start
    "uvicorn",
    "starlette",
    "datagouv_eval_pipeline.world.api.server",
    "datagouv_eval_pipeline.pipeline.agents.runner",
    "datagouv_eval_pipeline.core.judges.llm",
)

LAZY_FACES = (
    "datagouv_eval_pipeline.core.judges",
    "datagouv_eval_pipeline.core.providers",
    "datagouv_eval_pipeline.pipeline.preflight",
    "datagouv_eval_pipeline.pipeline.warehouse",
    "datagouv_eval_pipeline.world.mcp_builds",
)


def test_building_the_definitions_imports_no_run_time_library() -> None:
    loaded = modules_after(
        "from datagouv_eval_pipeline.definitions import defs\n"
        "definitions = defs()\n"
        "assert definitions.resolve_asset_graph().get_all_asset_keys()\n",
        RUN_TIME_ONLY,
    )
    assert loaded == set()


@pytest.mark.parametrize("package", LAZY_FACES)
def test_a_lazy_package_face_resolves_every_public_name(package: str) -> None:
    # The faces import their names on first use (PEP 562): a name missing from the table, or
    # pointing at the wrong module, would only fail where a stage first uses it.
    module = importlib.import_module(package)
    table: dict[str, str] = module._MODULE_OF
    assert sorted(table) == sorted(module.__all__)
    for name in module.__all__:
        value = getattr(module, name)
        home = importlib.import_module(f"{package}.{table[name]}")
        assert value is getattr(home, name), name
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = module.no_such_name
