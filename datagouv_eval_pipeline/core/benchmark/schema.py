"""The JSON schema of the benchmark configuration files, generated from the pydantic models.

One schema covers the five files: each file matches exactly one branch, told apart by its
top-level key. Committed as ``task_specs/benchmark/benchmark.schema.json``; regenerate it with
``datagouv-eval schema``.
"""

from __future__ import annotations

from typing import Any

from pydantic.json_schema import models_json_schema

from datagouv_eval_pipeline.core.benchmark.loader import BENCHMARK_CONFIG_DIR, CONFIG_FILES
from datagouv_eval_pipeline.core.tasks import JSON_SCHEMA_DIALECT

BENCHMARK_SCHEMA_PATH = BENCHMARK_CONFIG_DIR / "benchmark.schema.json"
"""Where the generated benchmark configuration schema is committed."""


def benchmark_json_schema() -> dict[str, Any]:
    """Return the JSON schema shared by the five benchmark configuration files."""
    refs, definitions = models_json_schema(
        [(model, "validation") for model in CONFIG_FILES.values()],
        ref_template="#/$defs/{model}",
    )
    branches = [refs[(model, "validation")] for model in CONFIG_FILES.values()]
    return {
        "$schema": JSON_SCHEMA_DIALECT,
        "title": "datagouv-eval benchmark configuration",
        "description": (
            "One of the files of task_specs/benchmark/: "
            + ", ".join(CONFIG_FILES)
            + ". Generated from datagouv_eval_pipeline.core.benchmark.config; regenerate with "
            "`datagouv-eval schema`."
        ),
        "anyOf": branches,
        "$defs": definitions["$defs"],
    }
