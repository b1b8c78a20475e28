"""Build the judge a :class:`~datagouv_eval_pipeline.core.judges.config.JudgeSpec` names.

The one place where the pipeline, the ``experiment`` command and the ``judge`` commands turn a
judge configuration into a :class:`~datagouv_eval_pipeline.core.judges.protocol.Judge`.
"""

from __future__ import annotations

from pathlib import Path

from datagouv_eval_pipeline.core.benchmark import ModelsFile
from datagouv_eval_pipeline.core.judges.config import (
    DEFAULT_RETRY_DELAY_S,
    JudgeConfig,
    JudgeKind,
    JudgeSpec,
    RoleSettings,
    resolve_model,
)
from datagouv_eval_pipeline.core.judges.deterministic import DeterministicJudge
from datagouv_eval_pipeline.core.judges.hybrid import HybridJudge
from datagouv_eval_pipeline.core.judges.llm import LLMJudge
from datagouv_eval_pipeline.core.judges.protocol import Judge


def build_judge(
    spec: JudgeSpec,
    models: ModelsFile,
    *,
    cache_dir: Path | None = None,
    base_url: str | None = None,
) -> Judge:
    """The judge of ``spec``.

    Args:
        spec: Kind, model, prompt version, temperature, concurrency, limits.
        models: The model registry (``models.yml``) the judge model is looked up in.
        cache_dir: Where the LLM answers are cached (None: no cache).
        base_url: Overrides ``spec.base_url`` and the provider's URL.

    Raises:
        JudgeModelError: The model is unknown, an offline policy, or its key is unset.
    """
    if spec.kind is JudgeKind.DETERMINISTIC:
        return DeterministicJudge()
    assert spec.model is not None  # JudgeSpec refuses an LLM kind without a model
    role_model = resolve_model(
        spec.model, models, spec.temperature, base_url=base_url or spec.base_url
    )
    config = JudgeConfig(
        default=RoleSettings(model=spec.model, temperature=spec.temperature),
        max_concurrency=spec.concurrency,
        requests_per_minute=None,
        timeout_s=spec.timeout_s,
        retries=spec.retries,
        cache_dir=cache_dir,
        retry_delay_s=DEFAULT_RETRY_DELAY_S if spec.retry_delay_s is None else spec.retry_delay_s,
    )
    llm = LLMJudge.from_config(config, {"default": role_model})
    return llm if spec.kind is JudgeKind.LLM else HybridJudge(llm)
