"""Agent runs cached by the hash of their inputs.

A task run is a pure function of: the cell's setup (model, capabilities, toolset and skills
versions, system prompt text), the task spec, the repeat index, the catalog snapshot and the
code the cell's runs depend on (the shared agent code and its own toolsets' code,
``experiment.fingerprints``). When none of these changed, re-materializing a cell reuses the
stored trace instead of asking the model again, so editing one task spec reruns exactly that
task in every cell. Only results are cached: a run that ended ``ok``. Every other ending is
asked again on the next run, automatically: a run ended by its budget (requests, tokens or the
wall clock), a provider or infrastructure error, a cancelled run, a skipped run. None of them
has a score to reuse, and their cause cannot be told apart from the trace: a hanging server
ends a run by the clock, a garbage-answering provider spends the request budget on
re-prompts, an outage ends it in error. An entry of another status left by an older version
of this code is a miss. Live runs (no snapshot) are never cached: the live catalog changes
under them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from datagouv_eval_pipeline.core.benchmark import Cell
from datagouv_eval_pipeline.core.tasks import TaskSpec
from datagouv_eval_pipeline.core.traces import Trace
from datagouv_eval_pipeline.pipeline.experiment.fingerprints import cell_code_fingerprint
from datagouv_eval_pipeline.pipeline.experiment.store import write_json_atomic

CACHEABLE_STATUSES = frozenset({"ok"})
"""The statuses of results: the only runs the cache keeps and reuses."""

# Cell fields that do not change what the agent does (labels, the metrics computed later).
NOT_AN_INPUT = frozenset({"key", "evaluation_types", "metrics", "model_label"})


def run_input_hash(
    cell: Cell,
    task: TaskSpec,
    repeat: int,
    *,
    snapshot_id: str,
    settings: str = "",
    code: str | None = None,
    toolset: str = "",
) -> str:
    """The hash identifying one task run's inputs.

    Args:
        cell: The cell.
        task: The task.
        repeat: The repeat index.
        snapshot_id: The catalog snapshot served.
        settings: A rendering of the run settings (budgets, retries) that change outcomes.
        code: The run code fingerprint (default: the cell's own,
            :func:`~datagouv_eval_pipeline.pipeline.experiment.fingerprints.cell_code_fingerprint`:
            an
            edit to one toolset version reruns only the cells on it).
        toolset: What the cell record does not say about the toolset's code: the started
            build's fingerprint (its spec and code digest), so an edited checkout reruns.
    """
    record = {k: v for k, v in cell.to_record().model_dump().items() if k not in NOT_AN_INPUT}
    payload = {
        "cell": record,
        "task": task.spec_hash(),
        "repeat": repeat,
        "snapshot": snapshot_id,
        "settings": settings,
        "code": code if code is not None else cell_code_fingerprint(cell),
    }
    if toolset:
        payload["toolset"] = toolset
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class AgentRunCache:
    """Traces stored under ``root/<hash[:2]>/<hash>.json``.

    Attributes:
        root: The cache directory.
    """

    root: Path

    def _path(self, input_hash: str) -> Path:
        return self.root / input_hash[:2] / f"{input_hash}.json"

    def get(self, input_hash: str) -> Trace | None:
        """The cached result, or None (an unreadable entry or a failure counts as a miss)."""
        try:
            data: Any = json.loads(self._path(input_hash).read_text(encoding="utf-8"))
            trace = Trace.model_validate(data)
        except (FileNotFoundError, ValueError):
            return None
        # A failure stored by an earlier version of this code is asked again, never reused.
        return trace if trace.status in CACHEABLE_STATUSES else None

    def put(self, input_hash: str, trace: Trace) -> bool:
        """Store a result (an ``ok`` trace); returns whether it was one."""
        if trace.status not in CACHEABLE_STATUSES:
            return False
        write_json_atomic(self._path(input_hash), trace.model_dump(mode="json"))
        return True


def default_agent_cache(run_store_root: Path | None = None) -> AgentRunCache:
    """The agent-run cache inside the run store: ``<run store>/cache/agent_runs``.

    Args:
        run_store_root: The run store (default: ``$DATAGOUV_EVAL_RUN_STORE`` or
            ``data/run_store``).
    """
    from datagouv_eval_pipeline.pipeline.experiment.store import default_run_store

    return AgentRunCache((run_store_root or default_run_store()) / "cache" / "agent_runs")
