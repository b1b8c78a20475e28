"""Task specifications: the pydantic models, the chain grammar and the all-or-nothing loader."""

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
from datagouv_eval_pipeline.core.tasks.errors import SpecError, SpecErrors, TaskSpecErrors
from datagouv_eval_pipeline.core.tasks.loader import (
    PROJECT_ROOT,
    TASK_SPECS_DIR,
    default_action_names,
    default_arg_names,
    load_task_specs,
    spec_files,
)
from datagouv_eval_pipeline.core.tasks.spec import TIERS, TaskSpec, TaskStatus, Tier

__all__ = [
    "PROJECT_ROOT",
    "TASK_SPECS_DIR",
    "TIERS",
    "Action",
    "ChainNode",
    "ChainSyntaxError",
    "Parallel",
    "Sequence",
    "SpecError",
    "SpecErrors",
    "TaskSpec",
    "TaskSpecErrors",
    "TaskStatus",
    "Tier",
    "action_names",
    "default_action_names",
    "default_arg_names",
    "iter_actions",
    "load_task_specs",
    "parse_chain",
    "render_chain",
    "spec_files",
]
