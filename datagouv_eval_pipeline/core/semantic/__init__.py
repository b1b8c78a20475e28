"""Semantic layer: the versioned action registry and the deterministic action mapper."""

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
    "UrlMatch",
    "default_action_names",
    "detect_error",
    "instance_to_dict",
    "load_registry",
    "map_trace",
    "parse_version",
]
