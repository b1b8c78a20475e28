"""Judge configuration: which model answers which question, limits, timeouts and the cache.

A judge model is named ``<provider>/<model>`` as in ``task_specs/benchmark/models.yml`` (the agent
model registry); the provider's ``base_url``, ``api_key_env`` and prices are read from there, and
the model is reached through pydantic-ai's OpenAI-compatible client. Tests and benchmarks build
an :class:`~datagouv_eval_pipeline.core.judges.llm.LLMJudge` from pydantic-ai ``Model`` objects
directly (``FunctionModel``), bypassing the registry.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from datagouv_eval_pipeline.base.yaml_loading import safe_load
from datagouv_eval_pipeline.core.benchmark import ModelsFile, ProviderKind, model_key
from datagouv_eval_pipeline.core.providers import RateLimit

if TYPE_CHECKING:
    from pydantic_ai.models import Model

Role = Literal["criterion", "arguments", "trajectory", "failure_modes", "classification"]
ROLES: tuple[Role, ...] = (
    "criterion",
    "arguments",
    "trajectory",
    "failure_modes",
    "classification",
)


DEFAULT_CONCURRENCY = 8
"""Judge requests in flight at once when neither the judge's settings nor the provider's
``concurrency`` in ``models.yml`` say."""
DEFAULT_TIMEOUT_S = 60.0
"""Deadline of one judge request when neither the judge's settings nor the provider's
``timeout_s`` say."""
DEFAULT_RETRIES = 2
"""Retries of a judge request when neither the judge's settings nor the provider's ``retries``
say."""
DEFAULT_RETRY_DELAY_S = 2.0
"""Back-off before a judge request's first retry when the judge's settings do not say."""


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
    max_concurrency: int | None = Field(default=None, ge=1)
    """Judge requests in flight at once, per provider; None: the provider's ``concurrency``
    in ``models.yml``, else 8."""
    requests_per_minute: float | None = Field(default=None, gt=0)
    """The provider's request rate limit; None = unpaced."""
    timeout_s: float | None = Field(default=None, gt=0)
    """Deadline of one model request (waiting for a slot not included); None: the provider's
    ``timeout_s`` in ``models.yml``, else 60 s."""
    retries: int | None = Field(default=None, ge=0)
    """Retries of a request that failed for a transient reason (rate limit, 5xx, network);
    None: the provider's ``retries`` in ``models.yml``, else 2."""
    retry_delay_s: float = Field(default=DEFAULT_RETRY_DELAY_S, ge=0)
    """First back-off delay, doubled on each retry (its jitter never exceeds it)."""
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
        limiter_key: The provider quota its requests count against (the agents' key: the
            provider's name, or the model key for a model with its own ``rate_limit``).
        rate_limit: The quota from ``models.yml`` (None: the built-in default).
        rebuild: Makes the same model with a new HTTP client (for another event loop); None
            for models bound to no loop.
        concurrency: The provider's ``concurrency`` in ``models.yml`` (None: not set).
        timeout_s: The provider's ``timeout_s`` (None: not set).
        retries: The provider's ``retries`` (None: not set).
    """

    model: Model
    model_id: str
    temperature: float | None = 0.0
    input_price_per_mtok: float | None = None
    output_price_per_mtok: float | None = None
    currency: str | None = None
    limiter_key: str = ""
    rate_limit: RateLimit | None = None
    rebuild: Callable[[], Model] | None = None
    concurrency: int | None = None
    timeout_s: float | None = None
    retries: int | None = None

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
    if provider.kind is ProviderKind.OFFLINE:
        raise JudgeModelError(
            f"{name!r} is an offline baseline policy, not an LLM: it cannot judge "
            "(use --judge deterministic for the offline judge)"
        )
    if provider.kind is ProviderKind.LLAMA_CPP and base_url is None:
        raise JudgeModelError(
            f"{name!r} is served by the pipeline (llama_cpp): start its server first and pass "
            "its URL (the judge commands and the Dagster resource do)"
        )
    key_env = provider.api_key_env or ""
    # llama.cpp's server, started by the pipeline on 127.0.0.1, takes no key.
    api_key = "no-key" if provider.kind is ProviderKind.LLAMA_CPP else os.environ.get(key_env)
    if not api_key:
        if base_url is None:
            raise JudgeModelError(f"judge model {name!r} needs its API key in ${key_env}")
        api_key = "replay-no-key"  # a replay server answers from cassettes without a key

    from openai import AsyncOpenAI
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai_compatible import OpenAICompatibleProvider

    url = base_url or provider.base_url

    def build() -> Model:
        # max_retries=0: the shared RetryPolicy retries (providers.managed.ManagedModel), so one
        # failing request is never multiplied by the SDK's own retries.
        client = AsyncOpenAI(base_url=url, api_key=api_key, max_retries=0)
        compatible = OpenAICompatibleProvider(provider_name, openai_client=client)
        return OpenAIChatModel(model_name, provider=compatible)

    quota = provider.rate_limit_for(entry)
    limit = (
        RateLimit(quota.requests_per_minute, quota.tokens_per_minute) if quota is not None else None
    )
    per_model = quota is not None and quota.per_model
    return RoleModel(
        model=build(),
        model_id=name,
        temperature=temperature,
        input_price_per_mtok=entry.input_price_per_mtok,
        output_price_per_mtok=entry.output_price_per_mtok,
        currency=models.currency,
        limiter_key=model_key(provider.name, model_name) if per_model else provider.name,
        rate_limit=limit,
        rebuild=build,
        # A local server that answers one request at a time is not flooded by the judge.
        # A llama_cpp server the pipeline starts has one slot unless its concurrency says more.
        concurrency=provider.concurrency
        or (1 if provider.kind is ProviderKind.LLAMA_CPP else None),
        timeout_s=provider.timeout_s,
        retries=provider.retries,
    )


# --- which judge scores the pipeline's runs (task_specs/benchmark/judge.yml) ---------------------


class JudgeKind(StrEnum):
    """Which judge decides the verdicts of the pipeline."""

    DETERMINISTIC = "deterministic"
    """Rules only (offline, the default); what they cannot decide stays unscored."""
    LLM = "llm"
    """An LLM answers every question (strict argument values are still ruled first)."""
    HYBRID = "hybrid"
    """Every rule that can decide a verdict decides it; the LLM decides the rest."""


JUDGE_FILE = "judge.yml"
"""The pipeline's judge, next to the benchmark files (``task_specs/benchmark/judge.yml``)."""

PROMPT_VERSION = "1"
"""The version of the packaged judge prompts (``core/judges/prompts.py``)."""


class JudgeSpec(_Strict):
    """The judge of the pipeline (``task_specs/benchmark/judge.yml``, overridable per run)."""

    kind: JudgeKind = JudgeKind.DETERMINISTIC
    """``deterministic`` (offline default), ``llm`` or ``hybrid``."""
    model: str | None = Field(default=None, pattern=r"^[^/\s]+/\S+$")
    """``<provider>/<model>`` from ``models.yml``; required by ``llm`` and ``hybrid``."""
    prompt_version: str = PROMPT_VERSION
    """The packaged prompt version the verdicts must come from (a stale file is an error)."""
    temperature: float | None = Field(default=0.0, ge=0.0, le=2.0)
    """Sent to the model; null for models that reject the setting."""
    concurrency: int | None = Field(default=None, ge=1)
    """Judge requests in flight at once; null: the provider's ``concurrency`` in
    ``models.yml``, else 8."""
    timeout_s: float | None = Field(default=None, gt=0)
    """Deadline of one model request; null: the provider's ``timeout_s``, else 60 s."""
    retries: int | None = Field(default=None, ge=0)
    """Retries of a request that failed for a transient reason (429, 5xx, network); null: the
    provider's ``retries``, else 2."""
    retry_delay_s: float | None = Field(default=None, ge=0)
    """Back-off before the first retry, doubled on each later one (plus a random jitter of up
    to 1 s, never more than this delay); a ``Retry-After`` header replaces it. Null: 2 s. The
    environment variable ``DATAGOUV_EVAL_JUDGE_RETRY_DELAY_S`` overrides it."""
    base_url: str | None = Field(default=None, pattern=r"^https?://")
    """Send every judge request to this OpenAI-compatible URL instead of the provider's
    (a record/replay server, a local model); the API key is then optional."""

    @model_validator(mode="after")
    def _coherent(self) -> JudgeSpec:
        if self.kind is not JudgeKind.DETERMINISTIC and self.model is None:
            raise ValueError(
                f"kind {self.kind.value!r} needs a model: '<provider>/<model>' from models.yml"
            )
        if self.prompt_version != PROMPT_VERSION:
            raise ValueError(
                f"prompt_version {self.prompt_version!r} is not packaged: this code has prompt "
                f"version {PROMPT_VERSION!r} (core/judges/prompts.py)"
            )
        return self

    def with_choice(self, choice: str) -> JudgeSpec:
        """This spec with ``KIND[:PROVIDER/MODEL]`` (the ``--judge`` option) applied.

        Raises:
            JudgeSpecError: The choice does not parse, or the result is incomplete.
        """
        kind_text, _, model = choice.strip().partition(":")
        try:
            kind = JudgeKind(kind_text)
        except ValueError:
            raise JudgeSpecError(
                f"--judge {choice!r}: expected KIND[:PROVIDER/MODEL] with KIND one of "
                f"{', '.join(k.value for k in JudgeKind)}"
            ) from None
        update: dict[str, Any] = {"kind": kind}
        if model:
            update["model"] = model
        try:
            return JudgeSpec.model_validate(self.model_dump() | update)
        except ValidationError as error:
            raise JudgeSpecError(f"--judge {choice!r}: {_first_message(error)}") from None


class JudgeSpecError(ValueError):
    """The judge configuration is invalid (the message names the file or option and field)."""


def _first_message(error: ValidationError) -> str:
    parts = []
    for item in error.errors():
        where = ".".join(str(p) for p in item["loc"])
        parts.append(f"{where}: {item['msg']}" if where else str(item["msg"]))
    return "; ".join(parts)


RETRY_DELAY_ENV = "DATAGOUV_EVAL_JUDGE_RETRY_DELAY_S"
"""Overrides ``judge.yml``'s ``retry_delay_s`` (seconds >= 0), e.g. for a short back-off
against a local server that fails on purpose."""


def load_judge_spec(path: Path, env: Mapping[str, str] | None = None) -> JudgeSpec:
    """Read ``judge.yml``; a missing file means the deterministic judge.

    Args:
        path: The judge file.
        env: Where ``DATAGOUV_EVAL_JUDGE_RETRY_DELAY_S`` is read (default: the process's).

    Raises:
        JudgeSpecError: Naming the file or variable, the field and what was expected.
    """
    spec = _read_judge_file(path)
    raw = (os.environ if env is None else env).get(RETRY_DELAY_ENV, "").strip()
    if not raw:
        return spec
    try:
        delay = float(raw)
    except ValueError:
        delay = -1.0
    if not delay >= 0:  # also refuses nan
        raise JudgeSpecError(f"{RETRY_DELAY_ENV}={raw!r}: expected a number of seconds >= 0")
    return spec.model_copy(update={"retry_delay_s": delay})


def _read_judge_file(path: Path) -> JudgeSpec:
    import yaml

    if not path.exists():
        return JudgeSpec()
    try:
        data = safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise JudgeSpecError(f"{path}: cannot read the judge configuration: {error}") from None
    if data is None:
        return JudgeSpec()
    if not isinstance(data, dict):
        raise JudgeSpecError(f"{path}: expected a mapping of judge settings")
    try:
        return JudgeSpec.model_validate(data)
    except ValidationError as error:
        raise JudgeSpecError(f"{path}: {_first_message(error)}") from None
