"""The ``action_mappings`` asset: literal tool calls mapped to semantic actions, per cell."""

from collections.abc import Iterator
from typing import Any

import dagster as dg

from datagouv_eval_pipeline.core.judges import Judge, JudgeKind, JudgeModelError, JudgeSpecError
from datagouv_eval_pipeline.core.semantic import load_registry
from datagouv_eval_pipeline.defs.agent_runs import agent_runs
from datagouv_eval_pipeline.defs.interrupts import stop_if_requested
from datagouv_eval_pipeline.defs.per_cell import (
    StageEvent,
    cell_results,
    cell_stage,
    not_selected,
    process_cells,
    require_current,
)
from datagouv_eval_pipeline.defs.resources import (
    ExperimentSettings,
    JudgeResource,
    RunStoreResource,
)
from datagouv_eval_pipeline.pipeline.experiment import (
    ACTION_MAPPINGS,
    AGENT_RUNS,
    ActionMappingsDocument,
    AgentRunsDocument,
    map_actions,
    stage_code_version,
)


@cell_stage(deps=[agent_runs], code_version=stage_code_version("action_mappings")[:12])
def action_mappings(
    context: dg.AssetExecutionContext,
    run_store: RunStoreResource,
    judge: JudgeResource,
    experiment: ExperimentSettings,
) -> Iterator[StageEvent]:
    """Map every trace of each cell with the versioned action registry.

    With an ``llm`` or ``hybrid`` judge, the calls the rules leave undecided are classified by
    its model here (answers cached with the judge's).
    """
    stop_if_requested(context)
    store = run_store.store()
    registry = load_registry()
    classifier: Judge | None = None
    try:
        if judge.spec().kind is not JudgeKind.DETERMINISTIC:
            classifier = judge.judge(cache_dir=store.root / "cache" / "judges")
    except (JudgeSpecError, JudgeModelError) as error:
        raise dg.Failure(description=f"cannot build the judge: {error}") from None

    def work(key: str) -> tuple[ActionMappingsDocument, dict[str, Any]] | str:
        if (
            why := not_selected(key, experiment.evaluation_types, chosen=experiment.cells)
        ) is not None:
            return why
        # A cell whose agent runs just failed keeps its old mapping: never rebuilt from the
        # old traces as if they were this run's.
        require_current(store, key, AGENT_RUNS)
        runs = store.read_document(AGENT_RUNS, key, AgentRunsDocument)
        if runs is None:
            return "no agent_runs document for this cell"
        document = map_actions(runs, registry, classifier=classifier)
        calls = sum(len(result.mapping.calls) for result in document.results)
        return document, {
            "traces": len(document.results),
            "calls": calls,
            "unmapped_calls": document.unmapped_calls,
            "classified_calls": document.classified_calls or 0,
            "judge_questions": document.judge_spend.questions if document.judge_spend else 0,
            "judge_requests": document.judge_spend.requests if document.judge_spend else 0,
        }

    outcomes = process_cells(context, store, ACTION_MAPPINGS, work)
    if classifier is None:
        yield from cell_results(context, outcomes)
        return
    requests = int(getattr(classifier, "model_requests", 0))
    yield from cell_results(
        context, outcomes, classifier=classifier.judge_id, judge_http_requests=requests
    )
