"""Task specifications: the pydantic models, the chain grammar and the all-or-nothing loader."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from datagouv_eval_pipeline.core.tasks.chain import (
        Action,
        ChainNode,
        ChainSyntaxError,
        Parallel,
        Sequence,
        action_names,
        iter_actions,
        parse_chain,
        render_chain,
    )
    from datagouv_eval_pipeline.core.tasks.check_params import (
        ExpectedValuesParams,
        ParamsError,
        RowCountParams,
        SchemaParams,
        UpdateDateParams,
        parse_params,
        parse_when,
    )
    from datagouv_eval_pipeline.core.tasks.errors import (
        Loc,
        SpecError,
        SpecErrors,
        TaskSpecErrors,
        field_path,
        validation_errors,
    )
    from datagouv_eval_pipeline.core.tasks.loader import (
        PROJECT_ROOT,
        TASK_SPECS_DIR,
        default_action_names,
        default_arg_names,
        load_task_specs,
        spec_files,
    )
    from datagouv_eval_pipeline.core.tasks.references import Reference, references_by_name
    from datagouv_eval_pipeline.core.tasks.schema import (
        JSON_SCHEMA_DIALECT,
        TASK_SPEC_SCHEMA_PATH,
        render_schema,
        task_spec_json_schema,
    )
    from datagouv_eval_pipeline.core.tasks.spec import (
        TIERS,
        Assertion,
        CheckFn,
        CitesAssertion,
        ContainsWords,
        Criterion,
        Entity,
        EvaluationCriteria,
        ExpectedBehaviour,
        ExpectedSource,
        ExpectedValue,
        NumberAssertion,
        Recompute,
        RequiredAction,
        SourceType,
        TaskSpec,
        TaskStatus,
        Tier,
    )
    from datagouv_eval_pipeline.core.tasks.yaml_source import YamlDocument, read_yaml

_MODULE_OF: dict[str, str] = {
    "Action": ".chain",
    "Assertion": ".spec",
    "ChainNode": ".chain",
    "ChainSyntaxError": ".chain",
    "CheckFn": ".spec",
    "CitesAssertion": ".spec",
    "ContainsWords": ".spec",
    "Criterion": ".spec",
    "Entity": ".spec",
    "EvaluationCriteria": ".spec",
    "ExpectedBehaviour": ".spec",
    "ExpectedSource": ".spec",
    "ExpectedValue": ".spec",
    "ExpectedValuesParams": ".check_params",
    "JSON_SCHEMA_DIALECT": ".schema",
    "Loc": ".errors",
    "NumberAssertion": ".spec",
    "PROJECT_ROOT": ".loader",
    "Parallel": ".chain",
    "ParamsError": ".check_params",
    "Recompute": ".spec",
    "Reference": ".references",
    "RequiredAction": ".spec",
    "RowCountParams": ".check_params",
    "SchemaParams": ".check_params",
    "Sequence": ".chain",
    "SourceType": ".spec",
    "SpecError": ".errors",
    "SpecErrors": ".errors",
    "TASK_SPECS_DIR": ".loader",
    "TASK_SPEC_SCHEMA_PATH": ".schema",
    "TIERS": ".spec",
    "TaskSpec": ".spec",
    "TaskSpecErrors": ".errors",
    "TaskStatus": ".spec",
    "Tier": ".spec",
    "UpdateDateParams": ".check_params",
    "YamlDocument": ".yaml_source",
    "action_names": ".chain",
    "default_action_names": ".loader",
    "default_arg_names": ".loader",
    "field_path": ".errors",
    "iter_actions": ".chain",
    "load_task_specs": ".loader",
    "parse_chain": ".chain",
    "parse_params": ".check_params",
    "parse_when": ".check_params",
    "read_yaml": ".yaml_source",
    "references_by_name": ".references",
    "render_chain": ".chain",
    "render_schema": ".schema",
    "spec_files": ".loader",
    "task_spec_json_schema": ".schema",
    "validation_errors": ".errors",
}
"""Each public name, and the module that defines it."""

if not TYPE_CHECKING:  # hidden from mypy, which then checks each name imported from the face

    def __getattr__(name: str) -> Any:
        """Import the module defining a public name on first use (PEP 562)."""
        module = _MODULE_OF.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, __name__), name)
        globals()[name] = value
        return value


__all__ = [
    "JSON_SCHEMA_DIALECT",
    "PROJECT_ROOT",
    "TASK_SPECS_DIR",
    "TASK_SPEC_SCHEMA_PATH",
    "TIERS",
    "Action",
    "Assertion",
    "ChainNode",
    "ChainSyntaxError",
    "CheckFn",
    "CitesAssertion",
    "ContainsWords",
    "Criterion",
    "Entity",
    "EvaluationCriteria",
    "ExpectedBehaviour",
    "ExpectedSource",
    "ExpectedValue",
    "ExpectedValuesParams",
    "Loc",
    "NumberAssertion",
    "Parallel",
    "ParamsError",
    "Recompute",
    "Reference",
    "RequiredAction",
    "RowCountParams",
    "SchemaParams",
    "Sequence",
    "SourceType",
    "SpecError",
    "SpecErrors",
    "TaskSpec",
    "TaskSpecErrors",
    "TaskStatus",
    "Tier",
    "UpdateDateParams",
    "YamlDocument",
    "action_names",
    "default_action_names",
    "default_arg_names",
    "field_path",
    "iter_actions",
    "load_task_specs",
    "parse_chain",
    "parse_params",
    "parse_when",
    "read_yaml",
    "references_by_name",
    "render_chain",
    "render_schema",
    "spec_files",
    "task_spec_json_schema",
    "validation_errors",
]
