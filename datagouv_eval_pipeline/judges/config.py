"""Judge configuration: which model answers which question, limits, timeouts and the cache.

A judge model is named ``<provider>/<model>`` as in ``task_specs/benchmark/models.yml`` (the agent
model registry); the provider's ``base_url``, ``api_key_env`` and prices are read from there, and
the model is reached through pydantic-ai's OpenAI-compatible client. Tests and benchmarks build
an :class:`~datagouv_eval_pipeline.judges.llm.LLMJudge` from pydantic-ai ``Model`` objects
directly (``FunctionModel``), bypassing the registry.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai.models import Model

from datagouv_eval_pipeline.benchmark.config import ModelsFile, ProviderKind

Role = Literal["criterion", "arguments", "trajectory", "failure_modes", "classification"]
ROLES: tuple[Role, ...] = (
    "criterion",
    "arguments",
    "trajectory",
    "failure_modes",
    "classification",
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class RoleSettings(_Strict):
    """The model of one role (or the default of every role)."""

    model: str = Field(min_length=1)
    """``<provider>/<model>`` from ``models.yml``, e.g. ``mistral/mistral-small-2603``."""
    temperature: float | None = Field(default=0.0, ge=0.0, le=2.0)
    """Sent to the provider; None for models that reject the setting (some reasoning models)."""


class JudgeConfig(_Strict):
    """How the LLM judge runs (a YAML file or CLI options map onto this)."""

    default: RoleSettings
    """The model of every role not listed in ``roles``."""
    roles: dict[Role, RoleSettings] = Field(default_factory=dict)
    """Per-role overrides (e.g. a cheaper model for classification)."""
    max_concurrency: int = Field(default=8, ge=1)
    """Judge requests in flight at once, per provider."""
    requests_per_minute: float | None = Field(default=None, gt=0)
    """The provider's request rate limit; None = unpaced."""
    timeout_s: float = Field(default=60.0, gt=0)
    """Deadline of one model request (waiting for a slot not included)."""
    retries: int = Field(default=2, ge=0)
    """Retries of a request that failed for a transient reason (rate limit, 5xx, network)."""
    retry_delay_s: float = Field(default=2.0, ge=0)
    """First back-off delay, doubled on each retry."""
    output_retries: int = Field(default=1, ge=0)
    """Times the model may fix an output that fails validation."""
    cache_dir: Path | None = None
    """Where the answer cache lives; None disables caching."""

    def settings(self, role: Role) -> RoleSettings:
        """The settings of a role."""
        return self.roles.get(role, self.default)


@dataclass(frozen=True)
class RoleModel:
    """A resolved judge model.

    Attributes:
        model: The pydantic-ai model.
        model_id: Stable id recorded in verdicts and cache keys.
        temperature: Sent when not None.
        input_price_per_mtok: Price per million input tokens, None when unknown.
        output_price_per_mtok: Price per million output tokens, None when unknown.
        currency: ISO 4217 code of the prices.
    """

    model: Model
    model_id: str
    temperature: float | None = 0.0
    input_price_per_mtok: float | None = None
    output_price_per_mtok: float | None = None
    currency: str | None = None

    def cost(self, input_tokens: int, output_tokens: int) -> float | None:
        """The cost of a call, or None when a price is unknown."""
        if self.input_price_per_mtok is None or self.output_price_per_mtok is None:
            return None
        return (
            input_tokens * self.input_price_per_mtok + output_tokens * self.output_price_per_mtok
        ) / 1_000_000


class JudgeModelError(ValueError):
    """A judge model cannot be resolved (unknown name, offline provider, missing key)."""


def resolve_model(
    name: str,
    models: ModelsFile,
    temperature: float | None = 0.0,
    *,
    base_url: str | None = None,
) -> RoleModel:
    """Build the pydantic-ai model for ``<provider>/<model>`` from the model registry.

    Args:
        name: ``<provider>/<model>``.
        models: The model registry.
        temperature: Sent when not None.
        base_url: Replaces the provider's URL, e.g. a local record/replay server
            (``docs/replay.md``); the API key is then optional.

    Raises:
        JudgeModelError: Naming what is wrong and what was expected.
    """
    provider_name, _, model_name = name.partition("/")
    provider = next((p for p in models.providers if p.name == provider_name), None)
    known = [f"{p.name}/{m.name}" for p in models.providers for m in p.models]
    if provider is None or not model_name:
        raise JudgeModelError(
            f"unknown judge model {name!r}: expected '<provider>/<model>' from models.yml, "
            f"one of {', '.join(known)}"
        )
    entry = next((m for m in provider.models if m.name == model_name), None)
    if entry is None:
        raise JudgeModelError(
            f"provider {provider_name!r} has no model {model_name!r} in models.yml "
            f"(known: {', '.join(m.name for m in provider.models)})"
        )
    if provider.kind is not ProviderKind.OPENAI_COMPATIBLE or not provider.base_url:
        raise JudgeModelError(
            f"{name!r} is an offline baseline policy, not an LLM: it cannot judge "
            "(use --judge deterministic for the offline judge)"
        )
    key_env = provider.api_key_env or ""
    api_key = os.environ.get(key_env)
    if not api_key:
        if base_url is None:
            raise JudgeModelError(f"judge model {name!r} needs its API key in ${key_env}")
        api_key = "replay-no-key"  # a replay server answers from cassettes without a key

    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai_compatible import OpenAICompatibleProvider

    model = OpenAIChatModel(
        model_name,
        provider=OpenAICompatibleProvider(
            provider.name, base_url=base_url or provider.base_url, api_key=api_key
        ),
    )
    return RoleModel(
        model=model,
        model_id=name,
        temperature=temperature,
        input_price_per_mtok=entry.input_price_per_mtok,
        output_price_per_mtok=entry.output_price_per_mtok,
        currency=models.currency,
    )
