"""The ``judge_scores`` asset: verdicts and deterministic scores of every run, per cell."""

from collections.abc import Iterator
from typing import Any

import dagster as dg

from datagouv_eval_pipeline.core.judges import JudgeModelError, JudgeSpecError
from datagouv_eval_pipeline.core.tasks import TASK_SPECS_DIR, load_task_specs
from datagouv_eval_pipeline.defs.action_mappings import action_mappings
from datagouv_eval_pipeline.defs.catalog_validation import catalog_validation, references_for
from datagouv_eval_pipeline.defs.interrupts import stop_if_requested
from datagouv_eval_pipeline.defs.per_cell import (
    NO_RESULT,
    StageEvent,
    cell_results,
    cell_stage,
    not_selected,
    process_cells,
    require_current,
)
from datagouv_eval_pipeline.defs.resources import (
    CatalogResource,
    ExperimentSettings,
    JudgeResource,
    RunStoreResource,
)
from datagouv_eval_pipeline.pipeline.experiment import (
    ACTION_MAPPINGS,
    AGENT_RUNS,
    JUDGE_SCORES,
    ActionMappingsDocument,
    AgentRunsDocument,
    JudgeScoresDocument,
    judge_cell,
    stage_code_version,
)


@cell_stage(
    # The pre-flight's recomputed references are what expected values are compared with.
    deps=[action_mappings, catalog_validation],
    # The judges' prompts and rules, the metrics and the judge configuration (judge.yml) are the
    # code of this stage: editing a prompt or the judge makes every partition stale, and only
    # this stage and below recompute.
    code_version=stage_code_version("judge_scores")[:12],
)
def judge_scores(
    context: dg.AssetExecutionContext,
    run_store: RunStoreResource,
    judge: JudgeResource,
    catalog: CatalogResource,
    experiment: ExperimentSettings,
) -> Iterator[StageEvent]:
    """Judge and score every run of each cell (NULL with a reason when a judge fails).

    Expected values are compared with their references recomputed by the last pre-flight (when
    it validated the snapshot the cell's runs used), and slugs resolve through the catalog.
    """
    stop_if_requested(context)
    store = run_store.store()
    by_id = {spec.task_id: spec for spec in load_task_specs([TASK_SPECS_DIR])}
    try:
        the_judge = judge.judge(cache_dir=store.root / "cache" / "judges")
    except (JudgeSpecError, JudgeModelError) as error:
        raise dg.Failure(description=f"cannot build the judge: {error}") from None
    context.log.info("judge: %s", the_judge.judge_id)
    lookup = catalog.lookup()

    def work(key: str) -> tuple[JudgeScoresDocument, dict[str, Any]] | str:
        if (
            why := not_selected(key, experiment.evaluation_types, chosen=experiment.cells)
        ) is not None:
            return why
        require_current(store, key, AGENT_RUNS, ACTION_MAPPINGS)
        runs = store.read_document(AGENT_RUNS, key, AgentRunsDocument)
        mappings = store.read_document(ACTION_MAPPINGS, key, ActionMappingsDocument)
        if runs is None or mappings is None:
            return "no agent_runs or action_mappings document for this cell"
        references = references_for(store, runs.snapshot_id)
        document = judge_cell(
            runs, mappings, by_id, the_judge, references=references, catalog=lookup
        )
        scored = sum(1 for result in document.results if result.score is not None)
        summary: dict[str, Any] = {"runs": len(document.results), "scored": scored}
        if document.results and not scored:
            summary[NO_RESULT] = f"none of its {len(document.results)} runs could be scored"
        return document, summary

    outcomes = process_cells(context, store, JUDGE_SCORES, work)
    # HTTP requests the LLM judge sent (retries included; cache hits none); 0 for the rules.
    requests = int(getattr(the_judge, "model_requests", 0))
    yield from cell_results(
        context, outcomes, judge_id=the_judge.judge_id, judge_http_requests=requests
    )
