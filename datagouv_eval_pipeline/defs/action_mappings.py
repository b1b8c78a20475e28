"""The ``action_mappings`` asset: literal tool calls mapped to semantic actions, per cell."""

from typing import Any

import dagster as dg

from datagouv_eval_pipeline.defs.agent_runs import agent_runs
from datagouv_eval_pipeline.defs.partitions import cell_partitions
from datagouv_eval_pipeline.defs.per_cell import process_cells, result_of
from datagouv_eval_pipeline.defs.resources import RunStoreResource
from datagouv_eval_pipeline.experiment.cache import source_fingerprint
from datagouv_eval_pipeline.experiment.stages import ACTION_MAPPINGS, AGENT_RUNS, map_actions
from datagouv_eval_pipeline.semantic.registry import load_registry


@dg.asset(
    partitions_def=cell_partitions,
    backfill_policy=dg.BackfillPolicy.single_run(),
    deps=[agent_runs],
    group_name="cells",
    kinds={"python"},
    code_version=source_fingerprint(("semantic", "traces.py"))[:12],
    automation_condition=dg.AutomationCondition.eager(),
)
def action_mappings(
    context: dg.AssetExecutionContext, run_store: RunStoreResource
) -> dg.MaterializeResult[None]:
    """Map every trace of each cell with the versioned action registry."""
    store = run_store.store()
    registry = load_registry()

    def work(key: str) -> tuple[dict[str, Any], dict[str, Any]] | str:
        runs = store.read(AGENT_RUNS, key)
        if runs is None:
            return "no agent_runs document for this cell"
        document = map_actions(runs, registry)
        calls = sum(len(m["calls"]) for m in document["mappings"])
        return document, {
            "traces": len(document["mappings"]),
            "calls": calls,
            "unmapped_calls": document["unmapped_calls"],
        }

    return result_of(process_cells(context, store, ACTION_MAPPINGS, work))
