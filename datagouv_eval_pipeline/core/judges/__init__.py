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
        CALIBRATION_DIR,
        KAPPA_REQUIRED,
        TRAJECTORY_PASS_SCORE,
        CalibrationError,
        CalibrationFile,
        CalibrationItem,
        CalibrationReport,
        EvidenceItem,
        InstanceItem,
        KindAgreement,
        LabelProvenance,
        Sample,
        VerdictKind,
        calibrate,
        calibration_files,
        cohen_kappa,
        criterion_sha,
        kappa_interval,
        load_calibration,
        refused_kappa,
        restricted,
        select_labels,
        set_sha,
        target_sha,
    )
    from datagouv_eval_pipeline.core.judges.config import (
        JUDGE_FILE,
        ROLES,
        JudgeConfig,
        JudgeKind,
        JudgeModelError,
        JudgeSpec,
        JudgeSpecError,
        RoleModel,
        RoleSettings,
        load_judge_spec,
        resolve_model,
    )
    from datagouv_eval_pipeline.core.judges.deterministic import DeterministicJudge
    from datagouv_eval_pipeline.core.judges.factory import build_judge
    from datagouv_eval_pipeline.core.judges.hybrid import HybridJudge
    from datagouv_eval_pipeline.core.judges.judgement_record import (
        JudgementRecord,
        StoredClassification,
        StoredJudgeSpend,
    )
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
    from datagouv_eval_pipeline.core.judges.render import clip
    from datagouv_eval_pipeline.core.judges.runner import (
        classify_unmapped,
        judge_trace,
        judge_trace_sync,
    )
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
    "Aggregate": ".verdict",
    "CALIBRATION_DIR": ".calibration",
    "CalibrationError": ".calibration",
    "CalibrationFile": ".calibration",
    "CalibrationItem": ".calibration",
    "CalibrationReport": ".calibration",
    "CallClassification": ".verdict",
    "CriterionInput": ".protocol",
    "DeterministicJudge": ".deterministic",
    "EvidenceItem": ".calibration",
    "FailureMode": ".verdict",
    "FailureModeInput": ".protocol",
    "HybridJudge": ".hybrid",
    "InstanceItem": ".calibration",
    "JUDGE_FILE": ".config",
    "Judge": ".protocol",
    "JudgeCache": ".cache",
    "JudgeConfig": ".config",
    "JudgeKind": ".config",
    "JudgeModelError": ".config",
    "JudgePrompt": ".prompts",
    "JudgeSpec": ".config",
    "JudgeSpecError": ".config",
    "JudgeSpend": ".verdict",
    "JudgementRecord": ".judgement_record",
    "KAPPA_REQUIRED": ".calibration",
    "KindAgreement": ".calibration",
    "LLMJudge": ".llm",
    "LabelProvenance": ".calibration",
    "NEEDS_LLM": ".verdict",
    "PROMPTS": ".prompts",
    "Question": ".verdict",
    "ROLES": ".config",
    "RoleModel": ".config",
    "RoleSettings": ".config",
    "Sample": ".calibration",
    "StoredClassification": ".judgement_record",
    "StoredJudgeSpend": ".judgement_record",
    "TRAJECTORY_PASS_SCORE": ".calibration",
    "ToolEvidence": ".protocol",
    "TrajectoryInput": ".protocol",
    "Verdict": ".verdict",
    "VerdictKind": ".calibration",
    "VerdictStatus": ".verdict",
    "aggregate": ".verdict",
    "build_judge": ".factory",
    "cache_key": ".cache",
    "calibrate": ".calibration",
    "calibration_files": ".calibration",
    "classify_unmapped": ".runner",
    "clip": ".render",
    "cohen_kappa": ".calibration",
    "criterion_sha": ".calibration",
    "judge_spend": ".verdict",
    "judge_trace": ".runner",
    "judge_trace_sync": ".runner",
    "kappa_interval": ".calibration",
    "load_calibration": ".calibration",
    "load_judge_spec": ".config",
    "refused_kappa": ".calibration",
    "resolve_model": ".config",
    "restricted": ".calibration",
    "select_labels": ".calibration",
    "set_sha": ".calibration",
    "target_sha": ".calibration",
    "tool_evidence": ".protocol",
}
"""Each public name, and the module that defines it."""

if not TYPE_CHECKING:  # hidden from mypy, which then checks each name imported from the face

    def __getattr__(name: str) -> Any:
        """Import the module defining a public name on first use (PEP 562)."""
        module = _MODULE_OF.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, __name__), name)
        globals()[name] = value
        return value


__all__ = [
    "CALIBRATION_DIR",
    "JUDGE_FILE",
    "KAPPA_REQUIRED",
    "NEEDS_LLM",
    "PROMPTS",
    "ROLES",
    "TRAJECTORY_PASS_SCORE",
    "Aggregate",
    "CalibrationError",
    "CalibrationFile",
    "CalibrationItem",
    "CalibrationReport",
    "CallClassification",
    "CriterionInput",
    "DeterministicJudge",
    "EvidenceItem",
    "FailureMode",
    "FailureModeInput",
    "HybridJudge",
    "InstanceItem",
    "Judge",
    "JudgeCache",
    "JudgeConfig",
    "JudgeKind",
    "JudgeModelError",
    "JudgePrompt",
    "JudgeSpec",
    "JudgeSpecError",
    "JudgeSpend",
    "JudgementRecord",
    "KindAgreement",
    "LLMJudge",
    "LabelProvenance",
    "Question",
    "RoleModel",
    "RoleSettings",
    "Sample",
    "StoredClassification",
    "StoredJudgeSpend",
    "ToolEvidence",
    "TrajectoryInput",
    "Verdict",
    "VerdictKind",
    "VerdictStatus",
    "aggregate",
    "build_judge",
    "cache_key",
    "calibrate",
    "calibration_files",
    "classify_unmapped",
    "clip",
    "cohen_kappa",
    "criterion_sha",
    "judge_spend",
    "judge_trace",
    "judge_trace_sync",
    "kappa_interval",
    "load_calibration",
    "load_judge_spec",
    "refused_kappa",
    "resolve_model",
    "restricted",
    "select_labels",
    "set_sha",
    "target_sha",
    "tool_evidence",
]
