"""Realistic warehouse inputs: example traces through the real mapper, scorer and judge."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from datagouv_eval_pipeline.core.benchmark.cells import Cell, CellRecord, expand_cells
from datagouv_eval_pipeline.core.benchmark.loader import load_benchmark_config
from datagouv_eval_pipeline.core.judges import DeterministicJudge, judge_trace_sync
from datagouv_eval_pipeline.core.judges.judgement_record import JudgementRecord
from datagouv_eval_pipeline.core.metrics import score_trace
from datagouv_eval_pipeline.core.metrics.score_record import ScoreRecord
from datagouv_eval_pipeline.core.semantic.mapper import map_trace
from datagouv_eval_pipeline.core.tasks.loader import load_task_specs
from datagouv_eval_pipeline.core.tasks.spec import TIERS, TaskSpec
from datagouv_eval_pipeline.core.traces import Provenance, Trace, TraceStatus, load_trace
from datagouv_eval_pipeline.pipeline.warehouse import CellLoad, RunLoad

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples" / "traces"

MCP_19 = "offline~baseline-oneshot__mcp@0.2.19__data_gouv_context"
MCP_26 = "offline~baseline-oneshot__mcp@0.2.26__data_gouv_context"
CODE = "offline~baseline-oneshot__code__data_gouv_context"


@functools.cache
def specs() -> dict[str, TaskSpec]:
    return {spec.task_id: spec for spec in load_task_specs([ROOT / "task_specs"])}


@functools.cache
def cells() -> dict[str, Cell]:
    return {cell.key: cell for cell in expand_cells(load_benchmark_config())}


def trace_for(cell: Cell, example: str, *, repeat: int = 0, **changes: Any) -> Trace:
    trace = load_trace(EXAMPLES / example)
    spec = specs()[trace.task_id]
    return trace.model_copy(
        update={
            "model": cell.model.name,
            "capabilities": list(cell.capabilities),
            "mcp_version": cell.mcp_version,
            "repeat": repeat,
            "provenance": Provenance(
                cell_key=cell.key,
                spec_hash=spec.spec_hash(),
                snapshot_id="snap-2026-11",
                system_prompt=cell.system_prompt,
                system_prompt_sha256=cell.system_prompt_sha256,
                code_version="abc1234",
                started_at="2026-11-30T10:00:00+00:00",
            ),
            **changes,
        }
    )


def failed_trace(cell: Cell, task_id: str = "task_0003") -> Trace:
    return Trace(
        task_id=task_id,
        status="error",
        status_reason="provider returned HTTP 500 three times",
        model=cell.model.name,
        capabilities=list(cell.capabilities),
        mcp_version=cell.mcp_version,
        latency_ms=1200.0,
        provenance=Provenance(cell_key=cell.key),
    )


def run_load(trace: Trace) -> RunLoad:
    """Map, judge and score a trace like the pipeline does (a failed run is not scored)."""
    if trace.status == "error":
        return RunLoad(trace)
    spec = specs()[trace.task_id]
    mapping = map_trace(trace)
    judgement = judge_trace_sync(DeterministicJudge(), spec, trace, mapping=mapping)
    accuracy = {tier: judgement.accuracy(tier).mean.value for tier in TIERS}
    score = score_trace(spec, trace, mapping=mapping, accuracy=accuracy)
    return RunLoad(trace, mapping, score, judgement)


def cell_load(cell: Cell, traces: list[Trace]) -> CellLoad:
    """Each trace of the cell mapped, judged and scored like the pipeline does."""
    return CellLoad(cell.to_record(), [run_load(trace) for trace in traces])


def realistic_experiment() -> list[CellLoad]:
    """Three cells: MCP 0.2.19 and 0.2.26 (same model), and code; one failed run."""
    loads = []
    for key in (MCP_19, MCP_26):
        cell = cells()[key]
        loads.append(
            cell_load(
                cell,
                [
                    trace_for(cell, "task_0002_mcp.json"),
                    trace_for(cell, "task_0002_mcp_wrong.json", repeat=1),
                    trace_for(cell, "task_0011_mcp_decline.json"),
                    *([failed_trace(cell)] if key == MCP_26 else []),
                ],
            )
        )
    code = cells()[CODE]
    loads.append(cell_load(code, [trace_for(code, "task_0002_code.json")]))
    return loads


# --- a small hand-built dataset whose aggregates are worked out by hand in the tests -----------

HAND = "hand~model-a__none__p"
HAND_B = "hand~model-b__none__p"


def hand_record(key: str = HAND, model: str = "model-a", **changes: Any) -> CellRecord:
    """A hand-made cell record (``changes`` replace its fields)."""
    return CellRecord.model_validate(_hand_record(key, model) | changes)


def _hand_record(key: str, model: str) -> dict[str, Any]:
    return {
        "key": key,
        "evaluation_types": ["hand"],
        "model_provider": "hand",
        "model_name": model,
        "model_kind": "offline",
        "model_is_llm": False,
        "model_label": None,
        "base_url": None,
        "api_key_env": None,
        "input_price_per_mtok": None,
        "output_price_per_mtok": None,
        "currency": "EUR",
        "capabilities": [],
        "mcp_version": None,
        "mcp_url": None,
        "skills_version": None,
        "skills_sha256": None,
        "system_prompt": "p",
        "system_prompt_sha256": "0" * 64,
        "metrics": ["action_usage"],
    }


def _mv(value: float | None, reason: str | None = None) -> dict[str, Any]:
    return {"value": value, "reason": reason if value is None else None}


_TIER_VALUES = (
    "action_type_precision",
    "action_type_recall",
    "action_type_f1",
    "action_precision",
    "action_f1",
    "trajectory_adherence",
)
_TIER_COUNTS = (
    "unverified_criteria",
    "required_action_types",
    "chain_actions",
    "actual_action_types",
    "actual_actions",
    "matched_action_types",
    "matched_actions",
    "matched_chain_actions",
)


def hand_score(
    task_id: str, recall: float | None, required: int, checks_value: bool | None = True
) -> ScoreRecord:
    """A complete score record whose only defined numbers are the recall and the count."""
    return ScoreRecord.model_validate(_hand_score(task_id, recall, required, checks_value))


def _hand_score(
    task_id: str, recall: float | None, required: int, checks_value: bool | None
) -> dict[str, Any]:
    tier: dict[str, Any] = {name: _mv(None, "hand") for name in _TIER_VALUES}
    tier.update(dict.fromkeys(_TIER_COUNTS))
    tier.update(required_action_types=0, chain_actions=0)
    tier.update(
        action_recall=_mv(recall, "the tier requires no action"),
        required_actions=required,
        missing_action_types=[],
        unmatched_required=[],
        pairs=[],
        trajectory_steps=[],
    )
    per_tier = {"minimal": _mv(None, "hand"), "optimal": _mv(None, "hand")}
    return {
        "task_id": task_id,
        "minimal": tier,
        "optimal": tier,
        "checks": {"value": {"passed": checks_value, "reason": "hand"}},
        "efficiency": {
            "latency_ms": _mv(1000.0),
            "wall_latency_ms": 1000.0,
            "rate_limit_wait_ms": 0.0,
            "input_tokens": 0,
            "output_tokens": 0,
            "total_tokens": 0,
            "accuracy": per_tier,
            "token_efficiency": per_tier,
            "time_efficiency": per_tier,
        },
        "mapping": {
            "mapped_fraction": _mv(1.0),
            "counts": {},
            "registry_version": "1.0.0",
            "error": None,
            "unmapped_call_ids": [],
            "warnings": [],
        },
        "actions": [],
        "provenance": {
            "spec_hash": "h",
            "task_version": 1,
            "model": "hand",
            "mcp_version": None,
            "capabilities": [],
            "code_version": {"package": None, "git_sha": None},
            "scorer_version": "1",
        },
    }


def _verdict(passed: bool | None, judge: str = "hand@1") -> dict[str, Any]:
    scored = passed is not None
    return {
        "question": "criterion",
        "status": "ok" if scored else "unscored",
        "passed": passed,
        "score": None,
        "reason": "hand",
        "error": None if scored else "needs an LLM judge",
        "judge_id": judge,
        "prompt_hash": "ph",
        "input_tokens": 10,
        "output_tokens": 2,
        "cost": None,
    }


def hand_judgement(
    task_id: str, criteria: list[bool | None], judge: str = "hand@1"
) -> JudgementRecord:
    """Criteria all in the minimal tier; accuracy = mean over the scored ones."""
    return JudgementRecord.model_validate(_hand_judgement(task_id, criteria, judge))


def _hand_judgement(task_id: str, criteria: list[bool | None], judge: str) -> dict[str, Any]:
    scored = [c for c in criteria if c is not None]
    mean = sum(scored) / len(scored) if scored else None
    accuracy = {
        "mean": _mv(mean, "all verdicts are unscored"),
        "scored": len(scored),
        "total": len(criteria),
        "coverage": _mv(len(scored) / len(criteria)),
    }
    block = {
        "accuracy": accuracy,
        "criteria": list(range(len(criteria))),
        "trajectory": {**_verdict(None), "question": "trajectory", "prompt_hash": ""},
        "action_precision": _mv(None, "hand"),
        "action_recall": _mv(None, "hand"),
        "action_f1": _mv(None, "hand"),
        "unverified_criteria": None,
        "arguments": [],
        "failure_modes": {},
    }
    return {
        "task_id": task_id,
        "judge_id": judge,
        "criteria": [
            {"index": i, "tier": "minimal", "criterion": f"c{i}", "verdict": _verdict(c, judge)}
            for i, c in enumerate(criteria)
        ],
        "tiers": {"minimal": block, "optimal": block},
        "classifications": [],
        "judge_spend": {
            "questions": len(criteria),
            "requests": len(criteria),
            "cache_hits": 0,
            "input_tokens": 10 * len(criteria),
            "output_tokens": 2 * len(criteria),
            "cost": None,
            "currency": None,
        },
    }


def hand_trace(task_id: str, status: TraceStatus = "ok", repeat: int = 0) -> Trace:
    return Trace(
        task_id=task_id,
        status=status,
        status_reason="boom" if status == "error" else None,
        answer="x",
        repeat=repeat,
        latency_ms=1000.0,
    )


def hand_run(
    task_id: str,
    criteria: list[bool | None] | None = None,
    *,
    recall: float | None = 1.0,
    judge: str = "hand@1",
    status: TraceStatus = "ok",
    repeat: int = 0,
) -> RunLoad:
    """One run scored with ``recall`` (one required action) and, given ``criteria``, judged."""
    return RunLoad(
        hand_trace(task_id, status=status, repeat=repeat),
        score=hand_score(task_id, recall, 1),
        judgement=None if criteria is None else hand_judgement(task_id, criteria, judge),
    )


def hand_cell(recall_b: float = 0.5) -> CellLoad:
    """Four runs of one cell.

    A: recall 1.0, 3 required, criteria [pass, unscored] -> accuracy 1.0
    B: recall ``recall_b``, 2 required, criteria [fail, pass] -> accuracy 0.5
    C: recall undefined (None), 0 required, criteria [unscored, unscored] -> accuracy None
    D: status error (scores given but must be ignored).
    """
    runs = [
        RunLoad(
            hand_trace("task_0001"),
            score=hand_score("task_0001", 1.0, 3),
            judgement=hand_judgement("task_0001", [True, None]),
        ),
        RunLoad(
            hand_trace("task_0002"),
            score=hand_score("task_0002", recall_b, 2),
            judgement=hand_judgement("task_0002", [False, True]),
        ),
        RunLoad(
            hand_trace("task_0003"),
            score=hand_score("task_0003", None, 0, checks_value=None),
            judgement=hand_judgement("task_0003", [None, None]),
        ),
        RunLoad(
            hand_trace("task_0004", status="error"),
            score=hand_score("task_0004", 0.0, 7),
            judgement=hand_judgement("task_0004", [False]),
        ),
    ]
    return CellLoad(hand_record(), runs)


def hand_cell_b() -> CellLoad:
    """Same setup with another model: task_0001 recall 0.0, task_0002 recall 1.0."""
    runs = [
        RunLoad(hand_trace("task_0001"), score=hand_score("task_0001", 0.0, 3)),
        RunLoad(hand_trace("task_0002"), score=hand_score("task_0002", 1.0, 2)),
    ]
    return CellLoad(hand_record(HAND_B, "model-b"), runs)
