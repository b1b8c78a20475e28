"""Semantic layer: the versioned action registry and the deterministic action mapper."""

from __future__ import annotations

from typing import TYPE_CHECKING

from datagouv_eval_pipeline.base.faces import lazy_attributes

if TYPE_CHECKING:
    from datagouv_eval_pipeline.core.semantic.aliases import UrlAliases
    from datagouv_eval_pipeline.core.semantic.instances import ActionInstance, CallCategory
    from datagouv_eval_pipeline.core.semantic.mapper import (
        CallMapping,
        MappingStatus,
        TraceMapping,
        detect_error,
        instance_to_dict,
        map_trace,
    )
    from datagouv_eval_pipeline.core.semantic.registry import (
        SEMANTIC_ARGUMENTS,
        ActionRegistry,
        CliMatch,
        McpResolution,
        RegistryError,
        UnknownVersionError,
        UnmappedTool,
        UrlAction,
        UrlMatch,
        default_action_names,
        load_registry,
        parse_version,
    )

_MODULE_OF: dict[str, str] = {
    "ActionInstance": ".instances",
    "ActionRegistry": ".registry",
    "CallCategory": ".instances",
    "CallMapping": ".mapper",
    "CliMatch": ".registry",
    "MappingStatus": ".mapper",
    "McpResolution": ".registry",
    "RegistryError": ".registry",
    "SEMANTIC_ARGUMENTS": ".registry",
    "TraceMapping": ".mapper",
    "UnknownVersionError": ".registry",
    "UnmappedTool": ".registry",
    "UrlAction": ".registry",
    "UrlAliases": ".aliases",
    "UrlMatch": ".registry",
    "default_action_names": ".registry",
    "detect_error": ".mapper",
    "instance_to_dict": ".mapper",
    "load_registry": ".registry",
    "map_trace": ".mapper",
    "parse_version": ".registry",
}
"""Each public name, and the module that defines it."""

if not TYPE_CHECKING:  # hidden from mypy, which then checks each name imported from the face
    __getattr__ = lazy_attributes(__name__, _MODULE_OF)


__all__ = [
    "SEMANTIC_ARGUMENTS",
    "ActionInstance",
    "ActionRegistry",
    "CallCategory",
    "CallMapping",
    "CliMatch",
    "MappingStatus",
    "McpResolution",
    "RegistryError",
    "TraceMapping",
    "UnknownVersionError",
    "UnmappedTool",
    "UrlAction",
    "UrlAliases",
    "UrlMatch",
    "default_action_names",
    "detect_error",
    "instance_to_dict",
    "load_registry",
    "map_trace",
    "parse_version",
]
