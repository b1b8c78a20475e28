"""A code-location load imports what the definitions need, not what the assets run with.

Building the definitions (what Dagster does on each load of the code location, and
``datagouv-eval experiment`` before a run) used to import every library the stages use. The
stages now import them when they run: these libraries must stay out of a fresh interpreter
that only builds the definitions. Speed itself is in bench/ (``bench_code_location.py``).
"""

from __future__ import annotations

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


def test_building_the_definitions_imports_no_run_time_library() -> None:
    loaded = modules_after(
        "from datagouv_eval_pipeline.definitions import defs\n"
        "definitions = defs()\n"
        "assert definitions.resolve_asset_graph().get_all_asset_keys()\n",
        RUN_TIME_ONLY,
    )
    assert loaded == set()
