"""Rows of the warehouse tables, built from what the pipeline stages store.

Inputs are the JSON forms each stage writes to its per-partition files (``Cell.to_record()``,
``Trace``, ``TraceMapping.to_dict()``, ``TraceScore.to_json()``, ``TraceJudgement.to_json()``);
the objects themselves are accepted too and converted. Nothing here touches DuckDB.

Rules that keep aggregates honest:

* a run that failed (status ``error``) or never ran (``skipped``) gets its metric rows with
  value NULL and the run's status as the reason, and no verdicts: never zeros;
* a run without a score (or a judgement) gets NULL metric values with "not scored" ("not
  judged");
* an unscored verdict has NULL ``passed``, ``score`` and ``value``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from datagouv_eval_pipeline.metrics.passk import pass_at_k, pass_hat_k
from datagouv_eval_pipeline.traces import Trace
from datagouv_eval_pipeline.warehouse.schema import CELL_TABLES, TABLES_BY_NAME, Table

Row = dict[str, Any]

FAILED_STATUSES = frozenset({"error", "skipped"})
"""Run statuses whose scores are NULL whatever the scorer said."""

TIERS = ("minimal", "optimal")
ALL_TIERS = "all"

# (metric, aggregation, bounded in [0, 1])
SCORER_TIER_METRICS: tuple[tuple[str, str, bool], ...] = (
    ("action_type_precision", "avg", True),
    ("action_type_recall", "avg", True),
    ("action_type_f1", "avg", True),
    ("action_precision", "avg", True),
    ("action_recall", "avg", True),
    ("action_f1", "avg", True),
    ("trajectory_adherence", "avg", True),
    ("token_efficiency", "avg", False),
    ("time_efficiency", "avg", False),
    ("required_action_types", "sum", False),
    ("required_actions", "sum", False),
    ("chain_actions", "sum", False),
    ("actual_action_types", "sum", False),
    ("actual_actions", "sum", False),
    ("matched_action_types", "sum", False),
    ("matched_actions", "sum", False),
    ("matched_chain_actions", "sum", False),
    ("unverified_criteria", "sum", False),
)
"""Deterministic per-tier metrics taken from ``TraceScore.to_json()``."""

JUDGE_TIER_METRICS: tuple[tuple[str, str, bool], ...] = (
    ("accuracy", "avg", True),
    ("accuracy_coverage", "avg", True),
    ("judged_action_precision", "avg", True),
    ("judged_action_recall", "avg", True),
    ("judged_action_f1", "avg", True),
    ("criteria_total", "sum", False),
    ("criteria_scored", "sum", False),
)
"""Per-tier metrics taken from ``TraceJudgement.to_json()``."""

SCORER_RUN_METRICS: tuple[tuple[str, str, bool], ...] = (
    ("mapped_fraction", "avg", True),
    ("latency_ms", "avg", False),
)
"""Tier-independent metrics (tier ``all``)."""


class WarehouseInputError(ValueError):
    """An input of the loader is inconsistent or malformed."""


class CellRecord(BaseModel):
    """``Cell.to_record()``, validated at the warehouse boundary."""

    model_config = ConfigDict(extra="forbid")

    key: str
    evaluation_types: list[str]
    model_provider: str
    model_name: str
    model_kind: str
    model_is_llm: bool
    model_label: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    input_price_per_mtok: float | None = None
    output_price_per_mtok: float | None = None
    currency: str
    capabilities: list[str]
    mcp_version: str | None = None
    mcp_url: str | None = None
    mcp_source: str | None = None
    mcp_build: str | None = None
    skills_version: str | None = None
    skills_sha256: str | None = None
    system_prompt: str
    system_prompt_sha256: str
    metrics: list[str]

    @property
    def capability_set(self) -> str:
        """Sorted capabilities joined with ``+``; ``none`` when empty."""
        return "+".join(sorted(self.capabilities)) or "none"


def parse_cell_record(record: Mapping[str, Any] | Any) -> CellRecord:
    """Validate a cell record (a ``Cell`` is converted with ``to_record()``).

    Raises:
        WarehouseInputError: Naming each offending field.
    """
    data = record.to_record() if hasattr(record, "to_record") else record
    try:
        return CellRecord.model_validate(data)
    except ValidationError as error:
        lines = ["invalid cell record"]
        for item in error.errors():
            loc = ".".join(str(part) for part in item["loc"]) or "<root>"
            lines.append(f"  cell_record.{loc}: {item['msg']}")
        raise WarehouseInputError("\n".join(lines)) from error


def as_json(obj: Any, method: str) -> dict[str, Any] | None:
    """Return ``obj.<method>()`` for objects, the dict itself for dicts, None for None."""
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return dict(obj)
    converter = getattr(obj, method, None)
    if converter is None:
        raise WarehouseInputError(f"expected a dict or an object with {method}(), got {obj!r}")
    result = converter()
    if not isinstance(result, dict):
        raise WarehouseInputError(f"{type(obj).__name__}.{method}() did not return a dict")
    return result


def run_id(cell_key: str, task_id: str, repeat_index: int) -> str:
    """The text id of one run (``|`` never occurs in cell keys or task ids)."""
    return f"{cell_key}|{task_id}|{repeat_index}"


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


def _value(block: Mapping[str, Any] | None) -> tuple[float | None, str | None]:
    """Read a ``MetricValue.to_json()`` block."""
    if block is None:
        return None, "missing"
    value = block.get("value")
    return (float(value) if value is not None else None), block.get("reason")


def _check_unit(where: str, value: float | None, bounded: bool) -> None:
    if bounded and value is not None and not 0.0 <= value <= 1.0:
        raise WarehouseInputError(f"{where}: {value} is outside [0, 1]")


def build_cell_rows(
    cell: CellRecord,
    traces: list[Trace],
    mappings: list[dict[str, Any] | None],
    scores: list[dict[str, Any] | None],
    judgements: list[dict[str, Any] | None],
    *,
    loaded_at: datetime | None = None,
    stale_reason: str | None = None,
) -> CellRows:
    """Build every row of one cell.

    Args:
        cell: The validated cell record.
        traces: One trace per run of the cell.
        mappings: ``TraceMapping.to_dict()`` per trace (None when absent).
        scores: ``TraceScore.to_json()`` per trace (None when absent).
        judgements: ``TraceJudgement.to_json()`` per trace (None when absent).
        loaded_at: Load timestamp (now by default).
        stale_reason: Why the documents are not from the cell's last attempt (a failed stage);
            None when they are.

    Raises:
        WarehouseInputError: On a length mismatch, a trace of another cell, a task id that
            differs between a trace and its score or judgement, a duplicate (task, repeat), or a
            bounded value outside [0, 1].
    """
    lengths = {len(traces), len(mappings), len(scores), len(judgements)}
    if len(lengths) != 1:
        raise WarehouseInputError(
            f"cell {cell.key}: traces, mappings, scores and judgements must be parallel lists "
            f"(lengths {len(traces)}, {len(mappings)}, {len(scores)}, {len(judgements)})"
        )
    rows = CellRows()
    rows.add("cells", _cell_row(cell, loaded_at or datetime.now(UTC), stale_reason))
    seen: set[tuple[str, int]] = set()
    for position, (trace, mapping, score, judgement) in enumerate(
        zip(traces, mappings, scores, judgements, strict=True)
    ):
        where = f"cell {cell.key}, run #{position} ({trace.task_id} repeat {trace.repeat})"
        if trace.provenance.cell_key not in (None, cell.key):
            raise WarehouseInputError(
                f"{where}: trace.provenance.cell_key is {trace.provenance.cell_key!r}"
            )
        for label, doc in (("score", score), ("judgement", judgement)):
            if doc is not None and doc.get("task_id") != trace.task_id:
                raise WarehouseInputError(
                    f"{where}: the {label} is for task {doc.get('task_id')!r}"
                )
        key = (trace.task_id, trace.repeat)
        if key in seen:
            raise WarehouseInputError(f"{where}: duplicate (task, repeat) in one cell")
        seen.add(key)
        _RunBuilder(cell, trace, mapping, score, judgement, rows, where).build()
    _pass_k_rows(cell.key, rows)
    return rows


def _pass_k_rows(cell_key: str, rows: CellRows) -> None:
    """pass@k and pass^k per task × tier of a cell whose tasks ran more than once."""
    runs: dict[tuple[str, str], list[float | None]] = {}
    for row in rows.tables["metrics"]:
        if row["metric"] == "accuracy" and row["tier"] in TIERS:
            runs.setdefault((row["task_id"], row["tier"]), []).append(row["value"])
    for (task_id, tier), values in sorted(runs.items()):
        if len(values) < 2:
            continue
        decided = [v for v in values if v is not None]
        n, c = len(decided), sum(1 for v in decided if v == 1.0)
        for k in range(1, len(values) + 1):
            at_k, hat_k = pass_at_k(n, c, k), pass_hat_k(n, c, k)
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
                    "reason": at_k.reason if at_k.value is None else None,
                },
            )


def _cell_row(cell: CellRecord, loaded_at: datetime, stale_reason: str | None) -> Row:
    row = cell.model_dump()
    row["cell_key"] = row.pop("key")
    row["capability_set"] = cell.capability_set
    row["loaded_at"] = loaded_at
    row["stale_reason"] = stale_reason
    return row


@dataclass
class _RunBuilder:
    cell: CellRecord
    trace: Trace
    mapping: dict[str, Any] | None
    score: dict[str, Any] | None
    judgement: dict[str, Any] | None
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
        value_check = ((self.score or {}).get("checks") or {}).get("value") or {}
        details = value_check.get("details") or {}
        found = details.get("found") or {}
        for name, entry in sorted((details.get("expected") or {}).items()):
            value = float(entry["value"])
            spec_value = float(entry.get("spec_value", value))
            source = str(entry.get("source") or "task spec")
            recomputed = source != "task spec"
            self.rows.add(
                "references",
                {
                    **self.key,
                    "name": name,
                    "value": value,
                    "spec_value": spec_value,
                    "tolerance": float(entry.get("tolerance") or 0.0),
                    "source": source,
                    "recomputed": recomputed,
                    "changed": recomputed and value != spec_value,
                    "error": entry.get("reference_error"),
                    "found": found.get(name),
                },
            )

    # -- runs ----------------------------------------------------------------------------------

    def run_row(self) -> Row:
        trace, cell, score, judgement = self.trace, self.cell, self.score, self.judgement
        provenance = (score or {}).get("provenance", {})
        mapping_block = (score or {}).get("mapping", {})
        code = provenance.get("code_version") or {}
        spend = (judgement or {}).get("judge_spend") or {}
        prompt_hashes = sorted({v["prompt_hash"] for v in _judge_verdicts(judgement)})
        mapped_fraction: float | None = None
        if score is not None:
            mapped_fraction, _ = _value(mapping_block.get("mapped_fraction"))
        elif self.mapping is not None and not self.failed:
            raw = self.mapping.get("mapped_fraction")
            mapped_fraction = float(raw) if raw is not None else None
        registry_version = mapping_block.get("registry_version") or (self.mapping or {}).get(
            "registry_version"
        )
        started_at = trace.provenance.started_at
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
            "spec_hash": provenance.get("spec_hash") or trace.provenance.spec_hash,
            "task_version": provenance.get("task_version"),
            "snapshot_id": trace.provenance.snapshot_id,
            "judge_id": (judgement or {}).get("judge_id"),
            "judge_prompt_hash": ",".join(prompt_hashes) or None,
            # The code that ran the agent first; the scorer's commit only as a fallback.
            "code_version": trace.provenance.code_version
            or code.get("git_sha")
            or code.get("package"),
            "code_dirty": trace.provenance.code_dirty,
            "scorer_version": provenance.get("scorer_version"),
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
            "judge_calls": spend.get("calls"),
            "judge_input_tokens": spend.get("input_tokens"),
            "judge_output_tokens": spend.get("output_tokens"),
            "judge_cost": spend.get("cost"),
            "answer": trace.answer,
            "declined": trace.declined,
            "mapped_fraction": mapped_fraction,
            "mapping_error": mapping_block.get("error"),
        }

    # -- tool calls and instances ----------------------------------------------------------------

    def tool_calls(self) -> None:
        mapped = {c["call_id"]: c for c in (self.mapping or {}).get("calls", [])}
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
                    "category": m["category"] if m else None,
                    "mapping_status": m["status"] if m else None,
                    "errored": m["errored"] if m else None,
                    "error_reason": (m["error_reason"] or None) if m else None,
                    "confidence": m["confidence"] if m else None,
                    "mapping_reason": m["reason"] if m else None,
                },
            )

    def instances(self) -> None:
        index = 0
        for call in (self.mapping or {}).get("calls", []):
            for instance in call.get("instances", []):
                self.add_instance(index, instance, "mapper")
                index += 1
        calls = {c["call_id"]: c for c in (self.mapping or {}).get("calls", [])}
        for classified in (self.judgement or {}).get("classifications", []):
            verdict = classified["verdict"]
            call = calls.get(classified["call_id"], {})
            if verdict["status"] != "ok" or not verdict.get("passed"):
                continue
            for action in classified.get("actions", []):
                self.add_instance(
                    index,
                    {
                        "action": action["action"],
                        "args": action.get("args", {}),
                        "source_call_id": classified["call_id"],
                        "source_tool": call.get("tool_name", ""),
                        "category": call.get("category", "unclassified"),
                        "confidence": 0.7,
                        "errored": bool(call.get("errored", False)),
                        "reason": f"classified by {verdict['judge_id']}",
                    },
                    "classification",
                )
                index += 1

    def add_instance(self, index: int, instance: Mapping[str, Any], origin: str) -> None:
        self.rows.add(
            "action_instances",
            {
                **self.key,
                "instance_index": index,
                "action": instance["action"],
                "args": json.dumps(instance.get("args", {}), ensure_ascii=False, sort_keys=True),
                "source_call_id": instance["source_call_id"],
                "source_tool": instance["source_tool"],
                "category": instance["category"],
                "confidence": float(instance["confidence"]),
                "errored": bool(instance["errored"]),
                "reason": instance.get("reason", ""),
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
        score, judgement = self.score, self.judgement
        efficiency = (score or {}).get("efficiency", {})
        value: float | None
        reason: str | None
        for tier in TIERS:
            block = (score or {}).get(tier)
            for name, aggregation, bounded in SCORER_TIER_METRICS:
                if score is None or block is None:
                    value, reason = None, self.null_reason("scorer")
                elif name in ("token_efficiency", "time_efficiency"):
                    value, reason = _value(efficiency.get(name, {}).get(tier))
                elif aggregation == "sum":
                    raw = block.get(name)
                    value = float(raw) if raw is not None else None
                    reason = None if raw is not None else "the trace could not be mapped"
                else:
                    value, reason = _value(block.get(name))
                self.metric(tier, name, aggregation, bounded, "scorer", value, reason)
            judged = (judgement or {}).get("tiers", {}).get(tier)
            for name, aggregation, bounded in JUDGE_TIER_METRICS:
                if judged is None:
                    value, reason = None, self.null_reason("judge")
                else:
                    value, reason = _judge_metric(judged, name)
                self.metric(tier, name, aggregation, bounded, "judge", value, reason)
        for name, aggregation, bounded in SCORER_RUN_METRICS:
            if score is None:
                value, reason = None, self.null_reason("scorer")
            elif name == "latency_ms":
                value, reason = _value(efficiency.get("latency_ms"))
            else:
                value, reason = _value(score.get("mapping", {}).get("mapped_fraction"))
            self.metric(ALL_TIERS, name, aggregation, bounded, "scorer", value, reason)

    # -- verdicts ------------------------------------------------------------------------------

    def verdict(
        self,
        tier: str,
        kind: str,
        name: str,
        detail: str | None,
        verdict: Mapping[str, Any],
        *,
        inherited: bool = False,
    ) -> None:
        status = verdict["status"]
        passed = verdict.get("passed")
        score = verdict.get("score")
        if status != "ok":
            passed = score = None
        value = float(score) if score is not None else (None if passed is None else float(passed))
        _check_unit(f"{self.where}: verdict {tier}.{kind}.{name}", value, True)
        self.rows.add(
            "verdicts",
            {
                **self.key,
                "tier": tier,
                "kind": kind,
                "name": name,
                "detail": detail,
                "passed": passed,
                "score": score,
                "value": value,
                "status": status,
                "reason": verdict.get("reason") or "",
                "error": verdict.get("error"),
                "judge_id": verdict["judge_id"],
                "prompt_hash": verdict.get("prompt_hash"),
                "inherited": inherited,
                "input_tokens": None if inherited else verdict.get("input_tokens", 0),
                "output_tokens": None if inherited else verdict.get("output_tokens", 0),
                "cost": None if inherited else verdict.get("cost"),
                "cached": verdict.get("cached"),
            },
        )

    def verdicts(self) -> None:
        if self.score is not None:
            scorer = f"scorer@{self.score.get('provenance', {}).get('scorer_version', '?')}"
            for name, check in self.score.get("checks", {}).items():
                passed = check.get("passed")
                self.verdict(
                    ALL_TIERS,
                    "check",
                    name,
                    name,
                    {
                        "status": "ok" if passed is not None else "not_applicable",
                        "passed": passed,
                        "reason": check.get("reason", ""),
                        "judge_id": scorer,
                        "prompt_hash": None,
                        "input_tokens": 0,
                        "output_tokens": 0,
                    },
                )
        judgement = self.judgement
        if judgement is None:
            return
        for criterion in judgement.get("criteria", []):
            own_tier = criterion["tier"]
            for tier in TIERS:
                if own_tier == "optimal" and tier == "minimal":
                    continue
                self.verdict(
                    tier,
                    "criterion",
                    f"criterion:{criterion['index']}",
                    criterion.get("criterion"),
                    criterion["verdict"],
                    inherited=own_tier == "minimal" and tier == "optimal",
                )
        tiers = judgement.get("tiers", {})
        minimal_required = len(tiers.get("minimal", {}).get("arguments", []))
        for tier, block in tiers.items():
            for result in block.get("arguments", []):
                for candidate, verdict in zip(
                    result["candidates"], result["verdicts"], strict=False
                ):
                    self.verdict(
                        tier,
                        "arguments",
                        f"arguments:{result['required_index']}:{result['action']}:{candidate}",
                        result["action"],
                        verdict,
                        # Optimal required actions start with the minimal ones (same verdicts).
                        inherited=tier == "optimal"
                        and "minimal" in tiers
                        and result["required_index"] < minimal_required,
                    )
            if "trajectory" in block:
                self.verdict(tier, "trajectory", "trajectory", None, block["trajectory"])
            for mode, verdict in block.get("failure_modes", {}).items():
                self.verdict(tier, "failure_mode", mode, mode, verdict)
                scored = verdict["status"] == "ok" and verdict.get("passed") is not None
                self.rows.add(
                    "failure_modes",
                    {
                        **self.key,
                        "tier": tier,
                        "mode": mode,
                        "present": (not verdict["passed"]) if scored else None,
                        "status": verdict["status"],
                        "reason": verdict.get("reason") or "",
                        "error": verdict.get("error"),
                        "judge_id": verdict["judge_id"],
                        "prompt_hash": verdict["prompt_hash"],
                    },
                )
        for classified in judgement.get("classifications", []):
            self.verdict(
                ALL_TIERS,
                "classification",
                classified["call_id"],
                ", ".join(a["action"] for a in classified.get("actions", [])) or None,
                classified["verdict"],
            )


def _judge_metric(block: Mapping[str, Any], name: str) -> tuple[float | None, str | None]:
    accuracy = block.get("accuracy", {})
    if name == "accuracy":
        return _value(accuracy.get("mean"))
    if name == "accuracy_coverage":
        return _value(accuracy.get("coverage"))
    if name == "criteria_total":
        return float(accuracy.get("total", 0)), None
    if name == "criteria_scored":
        return float(accuracy.get("scored", 0)), None
    return _value(block.get(name.removeprefix("judged_")))


def _judge_verdicts(judgement: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    if judgement is None:
        return []
    found: list[Mapping[str, Any]] = [c["verdict"] for c in judgement.get("criteria", [])]
    for block in judgement.get("tiers", {}).values():
        if "trajectory" in block:
            found.append(block["trajectory"])
        found.extend(block.get("failure_modes", {}).values())
    return [v for v in found if v.get("prompt_hash")]


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
