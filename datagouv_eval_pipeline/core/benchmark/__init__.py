"""The benchmark configuration (models, versions, prompts, evaluation types) and its cells."""

from datagouv_eval_pipeline.core.benchmark.cells import (
    Cell,
    CellModel,
    CellRecord,
    UnknownEvaluationTypeError,
    expand_cells,
)
from datagouv_eval_pipeline.core.benchmark.config import Capability, Metric, ProviderKind
from datagouv_eval_pipeline.core.benchmark.cost import token_cost
from datagouv_eval_pipeline.core.benchmark.keys import (
    UnknownCellKeyError,
    capability_set,
    cell_key,
    decode_cell_key,
    encode_cell_key,
    is_valid_partition_key,
    run_id,
)
from datagouv_eval_pipeline.core.benchmark.loader import (
    BENCHMARK_CONFIG_DIR,
    BenchmarkConfig,
    BenchmarkConfigErrors,
    load_benchmark_config,
)

__all__ = [
    "BENCHMARK_CONFIG_DIR",
    "BenchmarkConfig",
    "BenchmarkConfigErrors",
    "Capability",
    "Cell",
    "CellModel",
    "CellRecord",
    "Metric",
    "ProviderKind",
    "UnknownCellKeyError",
    "UnknownEvaluationTypeError",
    "capability_set",
    "cell_key",
    "decode_cell_key",
    "encode_cell_key",
    "expand_cells",
    "is_valid_partition_key",
    "load_benchmark_config",
    "run_id",
    "token_cost",
]
