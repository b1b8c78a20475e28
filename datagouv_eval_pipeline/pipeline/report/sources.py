"""The report's inputs from outside the warehouse: the run store, the task specs, the prompts.

The warehouse keeps the prompt names and hashes, not their texts, and no per-request usage;
this module reads them from where they live so the results browser can show the whole trace.
Every source is optional: a missing run store or an unreadable document leaves that part out.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from datagouv_eval_pipeline.core.benchmark import Cell, run_id
from datagouv_eval_pipeline.core.tasks import TaskSpec
from datagouv_eval_pipeline.pipeline.experiment import (
    ACTION_MAPPINGS,
    AGENT_RUNS,
    JUDGE_SCORES,
    AgentRunsDocument,
    RunStore,
    RunStoreError,
    quarantined_tasks,
)
from datagouv_eval_pipeline.pipeline.report.data import CellFailure, ReportSources, TraceDetail

_STAGES = (AGENT_RUNS, ACTION_MAPPINGS, JUDGE_SCORES)


def _trace_details(store: RunStore) -> dict[str, TraceDetail]:
    out: dict[str, TraceDetail] = {}
    for cell_key in store.cell_keys(AGENT_RUNS):
        try:
            document = store.read_document(AGENT_RUNS, cell_key, AgentRunsDocument)
        except RunStoreError:
            continue  # the warehouse rows still show; the page says the details are missing
        for trace in document.traces if document is not None else []:
            key = run_id(cell_key, trace.task_id, trace.repeat)
            out[key] = TraceDetail(
                requests=[r.model_dump(mode="json") for r in trace.requests],
                reasoning=list(trace.reasoning),
                cited_urls=trace.cited_urls,
                ids_used=trace.ids_used,
                turns=[t.model_dump(mode="json") for t in trace.turns],
                shown_chars={
                    call.id: call.shown_chars
                    for call in trace.tool_calls
                    if call.shown_chars is not None
                },
            )
    return out


def _failures(store: RunStore, cell_keys: Iterable[str]) -> tuple[CellFailure, ...]:
    found = []
    for cell_key in cell_keys:
        for stage in _STAGES:
            try:
                failure = store.failure(stage, cell_key)
            except RunStoreError as error:  # an unreadable record is named, never fatal
                found.append(CellFailure(cell_key, stage, str(error), ""))
                continue
            if failure is not None:
                found.append(CellFailure(cell_key, stage, failure.reason, failure.at))
    return tuple(found)


def read_sources(
    *,
    store_root: Path | None,
    specs: Iterable[TaskSpec] = (),
    cells: Iterable[Cell] = (),
) -> ReportSources:
    """Collect the report's optional inputs.

    Args:
        store_root: The run store directory (None or absent: no trace details, failures or
            quarantine).
        specs: Task specs whose prompts the browser shows.
        cells: Expanded benchmark cells (for the system prompt texts and the failure lookup).
    """
    cell_list = list(cells)
    prompts: dict[tuple[str, str], str] = {}
    for spec in specs:
        prompts[(spec.task_id, spec.spec_hash())] = spec.prompt
        prompts.setdefault((spec.task_id, ""), spec.prompt)
    system_prompts = {cell.system_prompt_sha256: cell.system_prompt_text for cell in cell_list}
    if store_root is None or not store_root.is_dir():
        return ReportSources(prompts=prompts, system_prompts=system_prompts)
    store = RunStore(store_root)
    keys = sorted({*store.cell_keys(AGENT_RUNS), *(cell.key for cell in cell_list)})
    return ReportSources(
        prompts=prompts,
        system_prompts=system_prompts,
        quarantined=quarantined_tasks(store),
        failures=_failures(store, keys),
        traces=_trace_details(store),
    )
