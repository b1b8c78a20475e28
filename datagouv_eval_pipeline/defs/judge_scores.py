"""The ``judge_scores`` asset: verdicts and deterministic scores of every run, per cell."""

from typing import Any

import dagster as dg

from datagouv_eval_pipeline.defs.action_mappings import action_mappings
from datagouv_eval_pipeline.defs.catalog_validation import catalog_validation, references_for
from datagouv_eval_pipeline.defs.partitions import cell_partitions
from datagouv_eval_pipeline.defs.per_cell import process_cells, result_of
from datagouv_eval_pipeline.defs.resources import (
    CatalogResource,
    JudgeResource,
    RunStoreResource,
)
from datagouv_eval_pipeline.experiment.cache import source_fingerprint
from datagouv_eval_pipeline.experiment.stages import (
    ACTION_MAPPINGS,
    AGENT_RUNS,
    JUDGE_SCORES,
    judge_cell,
)
from datagouv_eval_pipeline.tasks import TASK_SPECS_DIR, load_task_specs


@dg.asset(
    partitions_def=cell_partitions,
    backfill_policy=dg.BackfillPolicy.single_run(),
    # The pre-flight's recomputed references are what expected values are compared with.
    deps=[action_mappings, catalog_validation],
    group_name="cells",
    kinds={"python"},
    # The judges' prompts and rules and the metrics are the code of this stage: editing a
    # prompt makes every partition stale, and only this stage and below recompute.
    code_version=source_fingerprint(("judges", "metrics"))[:12],
    automation_condition=dg.AutomationCondition.eager(),
)
def judge_scores(
    context: dg.AssetExecutionContext,
    run_store: RunStoreResource,
    judge: JudgeResource,
    catalog: CatalogResource,
) -> dg.MaterializeResult[None]:
    """Judge and score every run of each cell (NULL with a reason when a judge fails).

    Expected values are compared with their references recomputed by the last pre-flight (when
    it validated the snapshot the cell's runs used), and slugs resolve through the catalog.
    """
    store = run_store.store()
    by_id = {spec.task_id: spec for spec in load_task_specs([TASK_SPECS_DIR])}
    the_judge = judge.judge()
    lookup = catalog.lookup()

    def work(key: str) -> tuple[dict[str, Any], dict[str, Any]] | str:
        runs = store.read(AGENT_RUNS, key)
        mappings = store.read(ACTION_MAPPINGS, key)
        if runs is None or mappings is None:
            return "no agent_runs or action_mappings document for this cell"
        references = references_for(store, runs.get("snapshot_id"))
        document = judge_cell(
            runs, mappings, by_id, the_judge, references=references, catalog=lookup
        )
        scored = sum(1 for s in document["scores"] if s is not None)
        return document, {"runs": len(document["runs"]), "scored": scored}

    return result_of(process_cells(context, store, JUDGE_SCORES, work))
