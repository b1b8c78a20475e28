"""The JSON schema of a task specification, generated from the pydantic models.

The committed copy (``task_specs/task_spec.schema.json``) lets editors validate and complete the
YAML files through their ``# yaml-language-server: $schema=./task_spec.schema.json`` header.
Regenerate it with ``datagouv-eval schema``; a test fails when it is stale.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from datagouv_eval_pipeline.core.tasks.loader import TASK_SPECS_DIR
from datagouv_eval_pipeline.core.tasks.spec import TaskSpec

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
TASK_SPEC_SCHEMA_PATH = TASK_SPECS_DIR / "task_spec.schema.json"
"""Where the generated task specification schema is committed."""


def model_schema(model: type[BaseModel], title: str, description: str) -> dict[str, Any]:
    """Return a model's JSON schema with the dialect, a title and a description first.

    Args:
        model: The pydantic model of the file's top level.
        title: Shown by editors as the schema's name.
        description: One or two sentences on what the file holds.
    """
    generated = model.model_json_schema()
    generated.pop("title", None)
    generated.pop("description", None)
    return {"$schema": JSON_SCHEMA_DIALECT, "title": title, "description": description} | generated


def task_spec_json_schema() -> dict[str, Any]:
    """Return the JSON schema of one ``task_specs/task_*.yml`` file."""
    return model_schema(
        TaskSpec,
        "datagouv-eval task specification",
        "One curated question for the data.gouv.fr agent benchmark: the prompt, the criteria "
        "of a good answer per tier, the expected semantic actions and the catalog objects it "
        "relies on. Generated from datagouv_eval_pipeline.core.tasks.spec; regenerate with "
        "`datagouv-eval schema`.",
    )


def render_schema(schema: dict[str, Any]) -> str:
    """Serialise a schema the way it is committed (stable, diff-friendly, final newline)."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
