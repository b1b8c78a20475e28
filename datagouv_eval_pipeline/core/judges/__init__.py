"""Judges: structured verdicts from a deterministic judge or an LLM judge, with a cache.

``docs/judges.md`` documents the protocol, the rules of the deterministic judge, the prompts,
the cache, the calibration set and the review workflow.

The public names are imported on first use (PEP 562): the asset modules that import a judge's
configuration at definition time do not import pydantic-ai, numpy and the LLM judge behind the
other names.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from datagouv_eval_pipeline.core.judges.cache import JudgeCache, cache_key
    from datagouv_eval_pipeline.core.judges.calibration import (
        CalibrationReport,
        calibrate,
        cohen_kappa,
        load_calibration,
    )
    from datagouv_eval_pipeline.core.judges.config import JudgeConfig, RoleModel, resolve_model
    from datagouv_eval_pipeline.core.judges.deterministic import DeterministicJudge
    from datagouv_eval_pipeline.core.judges.hybrid import HybridJudge
    from datagouv_eval_pipeline.core.judges.judgement_record import JudgementRecord
    from datagouv_eval_pipeline.core.judges.llm import LLMJudge
    from datagouv_eval_pipeline.core.judges.prompts import PROMPTS, JudgePrompt
    from datagouv_eval_pipeline.core.judges.protocol import (
        CriterionInput,
        FailureModeInput,
        Judge,
        ToolEvidence,
        TrajectoryInput,
        tool_evidence,
    )
    from datagouv_eval_pipeline.core.judges.runner import judge_trace, judge_trace_sync
    from datagouv_eval_pipeline.core.judges.verdict import (
        NEEDS_LLM,
        Aggregate,
        CallClassification,
        FailureMode,
        JudgeSpend,
        Question,
        Verdict,
        VerdictStatus,
        aggregate,
        judge_spend,
    )

_MODULE_OF: dict[str, str] = {
    "Aggregate": "verdict",
    "aggregate": "verdict",
    "cache_key": "cache",
    "calibrate": "calibration",
    "CalibrationReport": "calibration",
    "CallClassification": "verdict",
    "cohen_kappa": "calibration",
    "CriterionInput": "protocol",
    "DeterministicJudge": "deterministic",
    "FailureMode": "verdict",
    "FailureModeInput": "protocol",
    "HybridJudge": "hybrid",
    "Judge": "protocol",
    "judge_spend": "verdict",
    "judge_trace": "runner",
    "judge_trace_sync": "runner",
    "JudgeCache": "cache",
    "JudgeConfig": "config",
    "JudgementRecord": "judgement_record",
    "JudgePrompt": "prompts",
    "JudgeSpend": "verdict",
    "LLMJudge": "llm",
    "load_calibration": "calibration",
    "NEEDS_LLM": "verdict",
    "PROMPTS": "prompts",
    "Question": "verdict",
    "resolve_model": "config",
    "RoleModel": "config",
    "tool_evidence": "protocol",
    "ToolEvidence": "protocol",
    "TrajectoryInput": "protocol",
    "Verdict": "verdict",
    "VerdictStatus": "verdict",
}
"""Each public name, and the module of this package that defines it."""


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "NEEDS_LLM",
    "PROMPTS",
    "Aggregate",
    "CalibrationReport",
    "CallClassification",
    "CriterionInput",
    "DeterministicJudge",
    "FailureMode",
    "FailureModeInput",
    "HybridJudge",
    "Judge",
    "JudgeCache",
    "JudgeConfig",
    "JudgePrompt",
    "JudgeSpend",
    "JudgementRecord",
    "LLMJudge",
    "Question",
    "RoleModel",
    "ToolEvidence",
    "TrajectoryInput",
    "Verdict",
    "VerdictStatus",
    "aggregate",
    "cache_key",
    "calibrate",
    "cohen_kappa",
    "judge_spend",
    "judge_trace",
    "judge_trace_sync",
    "load_calibration",
    "resolve_model",
    "tool_evidence",
]
