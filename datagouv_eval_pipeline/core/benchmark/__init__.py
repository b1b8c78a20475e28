"""The benchmark configuration (models, versions, prompts, evaluation types) and its cells."""

from __future__ import annotations

from typing import TYPE_CHECKING

from datagouv_eval_pipeline.base.faces import lazy_attributes

if TYPE_CHECKING:
    from datagouv_eval_pipeline.core.benchmark.cells import (
        Cell,
        CellModel,
        CellRecord,
        UnknownEvaluationTypeError,
        expand_cells,
    )
    from datagouv_eval_pipeline.core.benchmark.config import (
        DEFAULT_TIMEOUT_S,
        Capability,
        EvaluationType,
        Factor,
        LocalServerSettings,
        McpBuild,
        McpSource,
        Metric,
        ModelCallSettings,
        ModelsFile,
        ProviderKind,
    )
    from datagouv_eval_pipeline.core.benchmark.cost import token_cost
    from datagouv_eval_pipeline.core.benchmark.keys import (
        UnknownCellKeyError,
        capability_set,
        cell_key,
        decode_cell_key,
        encode_cell_key,
        is_valid_partition_key,
        mcp_entry_key,
        model_key,
        run_id,
    )
    from datagouv_eval_pipeline.core.benchmark.loader import (
        BENCHMARK_CONFIG_DIR,
        BenchmarkConfig,
        BenchmarkConfigErrors,
        load_benchmark_config,
    )
    from datagouv_eval_pipeline.core.benchmark.schema import (
        BENCHMARK_SCHEMA_PATH,
        benchmark_json_schema,
    )
    from datagouv_eval_pipeline.core.benchmark.selection import (
        SelectionError,
        model_names,
        select_cells,
    )

_MODULE_OF: dict[str, str] = {
    "BENCHMARK_CONFIG_DIR": ".loader",
    "BENCHMARK_SCHEMA_PATH": ".schema",
    "BenchmarkConfig": ".loader",
    "BenchmarkConfigErrors": ".loader",
    "Capability": ".config",
    "Cell": ".cells",
    "CellModel": ".cells",
    "CellRecord": ".cells",
    "DEFAULT_TIMEOUT_S": ".config",
    "EvaluationType": ".config",
    "Factor": ".config",
    "LocalServerSettings": ".config",
    "McpBuild": ".config",
    "McpSource": ".config",
    "Metric": ".config",
    "ModelCallSettings": ".config",
    "ModelsFile": ".config",
    "ProviderKind": ".config",
    "SelectionError": ".selection",
    "UnknownCellKeyError": ".keys",
    "UnknownEvaluationTypeError": ".cells",
    "benchmark_json_schema": ".schema",
    "capability_set": ".keys",
    "cell_key": ".keys",
    "decode_cell_key": ".keys",
    "encode_cell_key": ".keys",
    "expand_cells": ".cells",
    "is_valid_partition_key": ".keys",
    "load_benchmark_config": ".loader",
    "mcp_entry_key": ".keys",
    "model_key": ".keys",
    "model_names": ".selection",
    "run_id": ".keys",
    "select_cells": ".selection",
    "token_cost": ".cost",
}
"""Each public name, and the module that defines it."""

if not TYPE_CHECKING:  # hidden from mypy, which then checks each name imported from the face
    __getattr__ = lazy_attributes(__name__, _MODULE_OF)


__all__ = [
    "BENCHMARK_CONFIG_DIR",
    "BENCHMARK_SCHEMA_PATH",
    "DEFAULT_TIMEOUT_S",
    "BenchmarkConfig",
    "BenchmarkConfigErrors",
    "Capability",
    "Cell",
    "CellModel",
    "CellRecord",
    "EvaluationType",
    "Factor",
    "LocalServerSettings",
    "McpBuild",
    "McpSource",
    "Metric",
    "ModelCallSettings",
    "ModelsFile",
    "ProviderKind",
    "SelectionError",
    "UnknownCellKeyError",
    "UnknownEvaluationTypeError",
    "benchmark_json_schema",
    "capability_set",
    "cell_key",
    "decode_cell_key",
    "encode_cell_key",
    "expand_cells",
    "is_valid_partition_key",
    "load_benchmark_config",
    "mcp_entry_key",
    "model_key",
    "model_names",
    "run_id",
    "select_cells",
    "token_cost",
]
