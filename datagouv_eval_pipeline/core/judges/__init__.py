"""Judges: structured verdicts from a deterministic judge or an LLM judge, with a cache.

``docs/judges.md`` documents the protocol, the rules of the deterministic judge, the prompts,
the cache, the calibration set and the review workflow.
"""

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
