"""Rows of the warehouse tables, built from what the pipeline stages store.

Inputs are typed: the cell record, and per run (:class:`RunLoad`) the ``Trace``, the
``TraceMapping``, the ``ScoreRecord`` and the ``JudgementRecord`` (the validated forms of what
the stages write, see ``experiment.documents``). Nothing here touches DuckDB.

Rules that keep aggregates honest:

* a run that failed (status ``error``) or never ran (``skipped``) gets its metric rows with
  value NULL and the run's status as the reason, and no verdicts: never zeros;
* a run without a score (or a judgement) gets NULL metric values with "not scored" ("not
  judged");
* an unscored verdict has NULL ``passed``, ``score`` and ``value``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from datagouv_eval_pipeline.core.benchmark import CellRecord, run_id
from datagouv_eval_pipeline.core.judges import JudgementRecord, Verdict
from datagouv_eval_pipeline.core.metrics import ScoreRecord, pass_at_k, pass_hat_k, registry
from datagouv_eval_pipeline.core.semantic import ActionInstance, CallCategory, TraceMapping
from datagouv_eval_pipeline.core.tasks import TIERS, Tier
from datagouv_eval_pipeline.core.traces import Trace
from datagouv_eval_pipeline.pipeline.warehouse.schema import CELL_TABLES, TABLES_BY_NAME, Table

Row = dict[str, Any]

FAILED_STATUSES = frozenset({"error", "skipped"})
"""Run statuses whose scores are NULL whatever the scorer said."""


ALL_TIERS = registry.ALL_TIERS


class WarehouseInputError(ValueError):
    """An input of the loader is inconsistent or malformed."""


@dataclass(frozen=True)
class RunLoad:
    """What the warehouse stores for one run: its trace and what the later stages made of it.

    Attributes:
        trace: The run's trace (a failed run is a trace with status ``error``).
        mapping: Its action mapping; None when absent.
        score: Its deterministic scores; None when absent.
        judgement: Its judgement; None when absent.
    """

    trace: Trace
    mapping: TraceMapping | None = None
    score: ScoreRecord | None = None
    judgement: JudgementRecord | None = None


@dataclass
class CellRows:
    """Rows of every cell table for one cell, column-name dicts per table."""

    tables: dict[str, list[Row]] = field(
        default_factory=lambda: {table.name: [] for table in CELL_TABLES}
    )

    def add(self, table: str, row: Row) -> None:
        """Append a row after checking its columns against the schema."""
        _check_row(TABLES_BY_NAME[table], row)
        self.tables[table].append(row)

    def counts(self) -> dict[str, int]:
        """Rows per table."""
        return {name: len(rows) for name, rows in self.tables.items()}


_COLUMN_SETS: dict[str, frozenset[str]] = {
    name: frozenset(table.column_names) for name, table in TABLES_BY_NAME.items()
}


def _check_row(table: Table, row: Row) -> None:
    names = table.column_names
    if row.keys() != _COLUMN_SETS[table.name]:
        missing = sorted(set(names) - set(row))
        extra = sorted(set(row) - set(names))
        raise WarehouseInputError(
            f"{table.qualified}: row columns differ from the schema "
            f"(missing {missing}, unexpected {extra})"
        )
    for name in table.required:
        if row[name] is None:
            raise WarehouseInputError(f"{table.qualified}.{name}: NULL in a NOT NULL column")


def _check_unit(where: str, value: float | None, bounded: bool) -> None:
    if bounded and value is not None and not 0.0 <= value <= 1.0:
        raise WarehouseInputError(f"{where}: {value} is outside [0, 1]")


def build_cell_rows(
    cell: CellRecord,
    runs: Sequence[RunLoad],
    *,
    loaded_at: datetime | None = None,
    stale_reason: str | None = None,
) -> CellRows:
    """Build every row of one cell.

    Args:
        cell: The cell record.
        runs: One entry per run of the cell.
        loaded_at: Load timestamp (now by default).
        stale_reason: Why the documents are not from the cell's last attempt (a failed stage);
            None when they are.

    Raises:
        WarehouseInputError: On a trace of another cell, a task id that differs between a trace
            and its score or judgement, a duplicate (task, repeat), or a bounded value outside
            [0, 1].
    """
    rows = CellRows()
    rows.add("cells", _cell_row(cell, loaded_at or datetime.now(UTC), stale_reason))
    seen: set[tuple[str, int]] = set()
    for position, run in enumerate(runs):
        trace = run.trace
        where = f"cell {cell.key}, run #{position} ({trace.task_id} repeat {trace.repeat})"
        if trace.provenance.cell_key not in (None, cell.key):
            raise WarehouseInputError(
                f"{where}: trace.provenance.cell_key is {trace.provenance.cell_key!r}"
            )
        for label, doc in (("score", run.score), ("judgement", run.judgement)):
            if doc is not None and doc.task_id != trace.task_id:
                raise WarehouseInputError(f"{where}: the {label} is for task {doc.task_id!r}")
        key = (trace.task_id, trace.repeat)
        if key in seen:
            raise WarehouseInputError(f"{where}: duplicate (task, repeat) in one cell")
        seen.add(key)
        _RunBuilder(cell, trace, run.mapping, run.score, run.judgement, rows, where).build()
    _pass_k_rows(cell.key, rows)
    return rows


def _pass_k_rows(cell_key: str, rows: CellRows) -> None:
    """pass@k and pass^k per task × tier of a cell whose tasks ran more than once.

    A run counts in ``n`` when its accuracy was decided, and passes only when its accuracy is 1
    *and* every criterion was decided (``accuracy_coverage`` 1): an accuracy of 1 over the
    decided criteria only says nothing of the undecided ones, so such a run is not a pass.
    """
    measures: dict[tuple[str, str, int], dict[str, float | None]] = {}
    for row in rows.tables["metrics"]:
        if row["metric"] in ("accuracy", "accuracy_coverage") and row["tier"] in TIERS:
            run = (row["task_id"], row["tier"], row["repeat_index"])
            measures.setdefault(run, {})[row["metric"]] = row["value"]
    runs: dict[tuple[str, str], list[tuple[float | None, float | None]]] = {}
    for (task_id, tier, _repeat), measure in sorted(measures.items()):
        pair = (measure.get("accuracy"), measure.get("accuracy_coverage"))
        runs.setdefault((task_id, tier), []).append(pair)
    for (task_id, tier), values in sorted(runs.items()):
        if len(values) < 2:
            continue
        decided = [(a, cov) for a, cov in values if a is not None]
        n = len(decided)
        c = sum(1 for a, cov in decided if a == 1.0 and cov == 1.0)
        partial = sum(1 for a, cov in decided if a == 1.0 and cov != 1.0)
        note = (
            f"{partial} run(s) with accuracy 1 had undecided criteria: not counted as passed"
            if partial
            else None
        )
        for k in range(1, len(values) + 1):
            at_k, hat_k = pass_at_k(n, c, k), pass_hat_k(n, c, k)
            reason = at_k.reason if at_k.value is None else None
            rows.add(
                "pass_k",
                {
                    "cell_key": cell_key,
                    "task_id": task_id,
                    "tier": tier,
                    "k": k,
                    "runs": len(values),
                    "n": n,
                    "c": c,
                    "pass_at_k": at_k.value,
                    "pass_hat_k": hat_k.value,
                    "reason": "; ".join(r for r in (reason, note) if r) or None,
                },
            )


def _cell_row(cell: CellRecord, loaded_at: datetime, stale_reason: str | None) -> Row:
    row = cell.model_dump()
    row["cell_key"] = row.pop("key")
    settings = row["model_settings"]
    row["model_settings"] = None if settings is None else json.dumps(settings, sort_keys=True)
    row["capability_set"] = cell.capability_set
    row["loaded_at"] = loaded_at
    row["stale_reason"] = stale_reason
    return row


@dataclass
class _RunBuilder:
    cell: CellRecord
    trace: Trace
    mapping: TraceMapping | None
    score: ScoreRecord | None
    judgement: JudgementRecord | None
    rows: CellRows
    where: str

    def __post_init__(self) -> None:
        self.failed = self.trace.status in FAILED_STATUSES
        if self.failed:
            # A failed run's scores are NULL, never the zeros a scorer may have produced.
            self.score = None
            self.judgement = None
        self.key: Row = {
            "run_id": run_id(self.cell.key, self.trace.task_id, self.trace.repeat),
            "cell_key": self.cell.key,
            "task_id": self.trace.task_id,
            "repeat_index": self.trace.repeat,
        }

    def null_reason(self, source: str) -> str:
        if self.failed:
            detail = f": {self.trace.status_reason}" if self.trace.status_reason else ""
            return f"run {self.trace.status}{detail}"
        return "not scored" if source == "scorer" else "not judged"

    def build(self) -> None:
        self.rows.add("runs", self.run_row())
        self.tool_calls()
        self.instances()
        self.metrics()
        self.verdicts()
        self.references()

    # -- references ----------------------------------------------------------------------------

    def references(self) -> None:
        if self.score is None:
            return
        details = self.score.value_details()
        for name, entry in sorted(details.expected.items()):
            value = entry.value
            spec_value = entry.spec_value if entry.spec_value is not None else value
            source = entry.source or "task spec"
            recomputed = source != "task spec"
            self.rows.add(
                "references",
                {
                    **self.key,
                    "name": name,
                    "value": value,
                    "spec_value": spec_value,
                    "tolerance": entry.tolerance or 0.0,
                    "source": source,
                    "recomputed": recomputed,
                    "changed": recomputed and value != spec_value,
                    "error": entry.reference_error,
                    "found": details.found.get(name),
                },
            )

    # -- runs ----------------------------------------------------------------------------------

    def run_row(self) -> Row:
        trace, cell, score, judgement = self.trace, self.cell, self.score, self.judgement
        provenance = score.provenance if score is not None else None
        mapped_fraction: float | None = None
        registry_version: str | None = None
        if score is not None:
            mapped_fraction = score.mapping.mapped_fraction.value
            registry_version = score.mapping.registry_version
        elif self.mapping is not None and not self.failed:
            mapped_fraction = self.mapping.mapped_fraction
        if not registry_version and self.mapping is not None:
            registry_version = self.mapping.registry_version
        spend = judgement.judge_spend if judgement is not None else None
        prompt_hashes = sorted(
            {v.prompt_hash for v in judgement.verdicts_with_prompt()} if judgement else set()
        )
        started_at = trace.provenance.started_at
        code = provenance.code_version if provenance is not None else None
        return {
            **self.key,
            "model_provider": cell.model_provider,
            "model_name": cell.model_name,
            "capability_set": cell.capability_set,
            "capabilities": list(cell.capabilities),
            "mcp_version": cell.mcp_version,
            "skills_version": cell.skills_version,
            "system_prompt": cell.system_prompt,
            "system_prompt_sha256": cell.system_prompt_sha256,
            "spec_hash": (provenance.spec_hash if provenance else None)
            or trace.provenance.spec_hash,
            "task_version": provenance.task_version if provenance else None,
            "snapshot_id": trace.provenance.snapshot_id,
            "judge_id": judgement.judge_id if judgement is not None else None,
            "judge_prompt_hash": ",".join(prompt_hashes) or None,
            # The code that ran the agent first; the scorer's commit only as a fallback.
            "code_version": trace.provenance.code_version
            or (code.git_sha if code else None)
            or (code.package if code else None),
            "code_dirty": trace.provenance.code_dirty,
            "toolset_version": trace.provenance.toolset_version,
            "scorer_version": provenance.scorer_version if provenance else None,
            "registry_version": registry_version,
            "status": trace.status,
            "status_reason": trace.status_reason,
            "scored": score is not None,
            "judged": judgement is not None,
            "started_at": datetime.fromisoformat(started_at) if started_at else None,
            "latency_ms": trace.latency_ms,
            "rate_limit_wait_ms": trace.rate_limit_wait_ms,
            "effective_latency_ms": (
                None if self.failed else max(trace.latency_ms - trace.rate_limit_wait_ms, 0.0)
            ),
            "input_tokens": trace.usage.input_tokens,
            "output_tokens": trace.usage.output_tokens,
            "total_tokens": trace.usage.total_tokens,
            "requests": trace.usage.requests,
            "tool_call_count": len(trace.tool_calls),
            "cost": trace.cost,
            "currency": cell.currency,
            "judge_questions": spend.questions if spend else None,
            "judge_requests": spend.requests if spend else None,
            "judge_input_tokens": spend.input_tokens if spend else None,
            "judge_output_tokens": spend.output_tokens if spend else None,
            "judge_cost": spend.cost if spend else None,
            "answer": trace.answer,
            "declined": trace.declined,
            "mapped_fraction": mapped_fraction,
            "mapping_error": score.mapping.error if score is not None else None,
        }

    # -- tool calls and instances ----------------------------------------------------------------

    def tool_calls(self) -> None:
        mapped = {c.call_id: c for c in self.mapping.calls} if self.mapping else {}
        for index, call in enumerate(self.trace.tool_calls):
            m = mapped.get(call.id)
            self.rows.add(
                "tool_calls",
                {
                    **self.key,
                    "call_index": index,
                    "call_id": call.id,
                    "tool_name": call.name,
                    "arguments": json.dumps(call.arguments, ensure_ascii=False, sort_keys=True),
                    "result": call.result,
                    "result_chars": (
                        call.result_chars if call.result_chars is not None else len(call.result)
                    ),
                    "tool_error": call.error,
                    "duration_ms": call.duration_ms,
                    "category": m.category.value if m else None,
                    "mapping_status": m.status.value if m else None,
                    "errored": m.errored if m else None,
                    "error_reason": (m.error_reason or None) if m else None,
                    "confidence": m.confidence if m else None,
                    "mapping_reason": m.reason if m else None,
                },
            )

    def instances(self) -> None:
        index = 0
        mapped = self.mapping.calls if self.mapping else ()
        calls = {c.call_id: c for c in mapped}
        for call in mapped:
            for instance in call.instances:
                self.add_instance(index, instance, "mapper")
                index += 1
        for classified in self.judgement.classifications if self.judgement else []:
            verdict = classified.verdict
            source = calls.get(classified.call_id)
            if not verdict.scored or not verdict.passed:
                continue
            for action in classified.actions:
                found = ActionInstance(
                    action=action.action,
                    args=dict(action.args),
                    source_call_id=classified.call_id,
                    source_tool=source.tool_name if source else "",
                    category=source.category if source else CallCategory.UNCLASSIFIED,
                    confidence=0.7,
                    errored=source.errored if source else False,
                    reason=f"classified by {verdict.judge_id}",
                )
                self.add_instance(index, found, "classification")
                index += 1

    def add_instance(self, index: int, instance: ActionInstance, origin: str) -> None:
        self.rows.add(
            "action_instances",
            {
                **self.key,
                "instance_index": index,
                "action": instance.action,
                "args": json.dumps(instance.args, ensure_ascii=False, sort_keys=True),
                "source_call_id": instance.source_call_id,
                "source_tool": instance.source_tool,
                "category": instance.category.value,
                "confidence": float(instance.confidence),
                "errored": instance.errored,
                "reason": instance.reason,
                "origin": origin,
            },
        )

    # -- metrics -------------------------------------------------------------------------------

    def metric(
        self,
        tier: str,
        name: str,
        aggregation: str,
        bounded: bool,
        source: str,
        value: float | None,
        reason: str | None,
    ) -> None:
        _check_unit(f"{self.where}: metric {tier}.{name}", value, bounded)
        self.rows.add(
            "metrics",
            {
                **self.key,
                "tier": tier,
                "metric": name,
                "value": value,
                "reason": reason if value is None else None,
                "aggregation": aggregation,
                "bounded": bounded,
                "source": source,
            },
        )

    def metrics(self) -> None:
        """One row per registered metric and tier (``core/metrics/registry.py``)."""
        judged = self.judgement.tiers if self.judgement is not None else None
        run = registry.ScoredRun(self.score, judged)
        tiered = [m for m in registry.METRICS if m.tiered]
        for tier in TIERS:
            for entry in tiered:
                self.registered_metric(entry, tier, run)
        for entry in registry.METRICS:
            if not entry.tiered:
                self.registered_metric(entry, None, run)

    def registered_metric(
        self, entry: registry.Metric, tier: Tier | None, run: registry.ScoredRun
    ) -> None:
        reading = entry.read(run, tier)
        value, reason = reading if reading is not None else (None, self.null_reason(entry.source))
        self.metric(
            tier or ALL_TIERS,
            entry.name,
            entry.aggregation,
            entry.bounded,
            entry.source,
            value,
            reason,
        )

    # -- verdicts ------------------------------------------------------------------------------

    def verdict_row(self, tier: str, kind: str, name: str, detail: str | None, row: Row) -> None:
        passed, score = row["passed"], row["score"]
        if row["status"] != "ok":
            passed = score = None
        value = float(score) if score is not None else (None if passed is None else float(passed))
        _check_unit(f"{self.where}: verdict {tier}.{kind}.{name}", value, True)
        self.rows.add(
            "verdicts",
            {
                **self.key,
                **row,
                "tier": tier,
                "kind": kind,
                "name": name,
                "detail": detail,
                "passed": passed,
                "score": score,
                "value": value,
            },
        )

    def verdict(
        self,
        tier: str,
        kind: str,
        name: str,
        detail: str | None,
        verdict: Verdict,
        *,
        inherited: bool = False,
    ) -> None:
        self.verdict_row(
            tier,
            kind,
            name,
            detail,
            {
                "passed": verdict.passed,
                "score": verdict.score,
                "status": verdict.status.value,
                "reason": verdict.reason,
                "error": verdict.error,
                "judge_id": verdict.judge_id,
                "prompt_hash": verdict.prompt_hash,
                "inherited": inherited,
                "input_tokens": None if inherited else verdict.input_tokens,
                "output_tokens": None if inherited else verdict.output_tokens,
                "cost": None if inherited else verdict.cost,
                "cached": verdict.cached,
            },
        )

    def verdicts(self) -> None:
        if self.score is not None:
            scorer = f"scorer@{self.score.provenance.scorer_version}"
            for name, check in self.score.checks.items():
                self.verdict_row(
                    ALL_TIERS,
                    "check",
                    name,
                    name,
                    {
                        "passed": check.passed,
                        "score": None,
                        "status": "ok" if check.passed is not None else "not_applicable",
                        "reason": check.reason,
                        "error": None,
                        "judge_id": scorer,
                        "prompt_hash": None,
                        "inherited": False,
                        "input_tokens": 0,
                        "output_tokens": 0,
                        "cost": None,
                        "cached": None,
                    },
                )
        judgement = self.judgement
        if judgement is None:
            return
        for criterion in judgement.criteria:
            for counted_in in TIERS:
                if criterion.tier == "optimal" and counted_in == "minimal":
                    continue
                self.verdict(
                    counted_in,
                    "criterion",
                    f"criterion:{criterion.index}",
                    criterion.criterion,
                    criterion.verdict,
                    inherited=criterion.tier == "minimal" and counted_in == "optimal",
                )
        tiers = judgement.tiers
        minimal_required = len(tiers["minimal"].arguments) if "minimal" in tiers else 0
        for tier, block in tiers.items():
            for result in block.arguments:
                for candidate, verdict in zip(result.candidates, result.verdicts, strict=False):
                    self.verdict(
                        tier,
                        "arguments",
                        f"arguments:{result.required_index}:{result.action}:{candidate}",
                        result.action,
                        verdict,
                        # Optimal required actions start with the minimal ones (same verdicts).
                        inherited=tier == "optimal"
                        and "minimal" in tiers
                        and result.required_index < minimal_required,
                    )
            self.verdict(tier, "trajectory", "trajectory", None, block.trajectory)
            for mode, verdict in block.failure_modes.items():
                self.verdict(tier, "failure_mode", mode, mode, verdict)
                scored = verdict.scored and verdict.passed is not None
                self.rows.add(
                    "failure_modes",
                    {
                        **self.key,
                        "tier": tier,
                        "mode": mode,
                        "present": (not verdict.passed) if scored else None,
                        "status": verdict.status.value,
                        "reason": verdict.reason,
                        "error": verdict.error,
                        "judge_id": verdict.judge_id,
                        "prompt_hash": verdict.prompt_hash,
                    },
                )
        for classified in judgement.classifications:
            self.verdict(
                ALL_TIERS,
                "classification",
                classified.call_id,
                ", ".join(a.action for a in classified.actions) or None,
                classified.verdict,
            )


def task_row(spec: Any) -> Row:
    """The ``eval.tasks`` row of a ``TaskSpec``."""
    row: Row = {
        "task_id": spec.task_id,
        "spec_hash": spec.spec_hash(),
        "task_version": spec.version,
        "task_name": spec.task_name,
        "language": spec.meta.language,
        "expected_behaviour": str(spec.expected_behaviour),
        "status": str(spec.meta.status),
        "source": str(spec.meta.source),
    }
    _check_row(TABLES_BY_NAME["tasks"], row)
    return row


def task_feature_rows(spec: Any) -> list[Row]:
    """The ``eval.task_features`` rows of a ``TaskSpec``: one per feature in ``meta.exercises``.

    A feature listed twice is one row (the key is task × spec hash × feature).
    """
    spec_hash = spec.spec_hash()
    rows: list[Row] = []
    for feature in dict.fromkeys(spec.meta.exercises):
        row: Row = {
            "task_id": spec.task_id,
            "spec_hash": spec_hash,
            "task_version": spec.version,
            "feature": feature,
            "area": feature.split(".", 1)[0],
        }
        _check_row(TABLES_BY_NAME["task_features"], row)
        rows.append(row)
    return rows
