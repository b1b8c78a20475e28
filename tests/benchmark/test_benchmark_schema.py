"""The benchmark configuration schema is current and matches the real files."""

from __future__ import annotations

import json

import pytest
import yaml

from datagouv_eval_pipeline.core.benchmark.loader import BENCHMARK_CONFIG_DIR, CONFIG_FILES
from datagouv_eval_pipeline.core.benchmark.schema import (
    BENCHMARK_SCHEMA_PATH,
    benchmark_json_schema,
)
from datagouv_eval_pipeline.core.tasks.schema import render_schema

HEADER = "# yaml-language-server: $schema=./benchmark.schema.json"


def test_committed_benchmark_schema_is_current() -> None:
    committed = BENCHMARK_SCHEMA_PATH.read_text(encoding="utf-8")
    assert committed == render_schema(benchmark_json_schema()), (
        f"{BENCHMARK_SCHEMA_PATH} is stale: regenerate it with `datagouv-eval schema`"
    )


def test_every_configuration_file_starts_with_the_schema_header() -> None:
    for name in CONFIG_FILES:
        text = (BENCHMARK_CONFIG_DIR / name).read_text(encoding="utf-8")
        assert text.startswith(HEADER), f"add {HEADER!r} at the top of {name}"


def test_each_file_matches_exactly_one_branch_of_the_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(BENCHMARK_SCHEMA_PATH.read_text(encoding="utf-8"))
    definitions = schema["$defs"]
    branches = [{"$defs": definitions, **branch} for branch in schema["anyOf"]]
    for name in CONFIG_FILES:
        data = yaml.safe_load((BENCHMARK_CONFIG_DIR / name).read_text(encoding="utf-8"))
        jsonschema.validate(data, schema)
        matching = [b for b in branches if jsonschema.Draft202012Validator(b).is_valid(data)]
        assert len(matching) == 1, name
