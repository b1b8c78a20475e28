"""Which stored cells are out of date with the code, setup and task specs they would run now.

The same inputs as the agent-run cache key (``experiment.cache``): a cell is out of date when
the code its runs depend on changed (``experiment.fingerprints``), its setup changed, or the
spec of a task it holds a trace of changed. What is listed here is what would rerun.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from datagouv_eval_pipeline.core.benchmark import Cell
from datagouv_eval_pipeline.pipeline.experiment.cache import NOT_AN_INPUT
from datagouv_eval_pipeline.pipeline.experiment.documents import AgentRunsDocument
from datagouv_eval_pipeline.pipeline.experiment.fingerprints import cell_code_fingerprint


def _inputs(record: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k not in NOT_AN_INPUT}


def out_of_date(
    cell: Cell, document: AgentRunsDocument, spec_hashes: Mapping[str, str]
) -> list[str]:
    """Why a cell's stored agent runs are out of date (empty when they are current).

    Args:
        cell: The cell as configured now.
        document: Its ``agent_runs`` document.
        spec_hashes: Task id → current spec hash.
    """
    reasons = []
    if document.run_code != cell_code_fingerprint(cell):
        reasons.append("the code its runs depend on changed")
    if _inputs(document.cell.model_dump()) != _inputs(cell.to_record().model_dump()):
        reasons.append("its setup changed")
    changed = sorted(
        {
            trace.task_id
            for trace in document.traces
            if (current := spec_hashes.get(trace.task_id)) is not None
            and trace.provenance.spec_hash not in (None, current)
        }
    )
    if changed:
        reasons.append(f"spec changed: {', '.join(changed)}")
    return reasons


def stale_cells(
    documents: Iterable[tuple[Cell, AgentRunsDocument]], spec_hashes: Mapping[str, str]
) -> dict[str, list[str]]:
    """Cell key → why it is out of date, for every out-of-date cell among ``documents``."""
    found = {}
    for cell, document in documents:
        reasons = out_of_date(cell, document, spec_hashes)
        if reasons:
            found[cell.key] = reasons
    return found
