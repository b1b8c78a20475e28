"""The Dagster code location (``workspace.yaml`` and ``[tool.dagster]`` point here)."""

from __future__ import annotations

import dagster as dg

from datagouv_eval_pipeline.defs.task_specs import task_specs

defs = dg.Definitions(assets=[task_specs], executor=dg.in_process_executor)
