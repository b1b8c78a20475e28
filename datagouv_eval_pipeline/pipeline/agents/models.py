"""The model registry: a cell's model → a pydantic-ai model.

* ``openai_compatible`` providers (Mistral, OpenAI, Albert, a local replay server): an
  :class:`CompatibleChatModel` on an ``AsyncOpenAI`` client with the provider's base URL and the
  API key read from the environment variable the YAML names. The key is never logged, stored or
  put in an error message. The SDK's own retries are off: the runner's
  :class:`~datagouv_eval_pipeline.core.providers.managed.ManagedModel` (the judges' too) retries
  instead, so it can honour ``Retry-After`` and count the wait.
* ``offline`` providers: the deterministic baseline policies (``baselines/``), not LLMs.

The model's settings from ``models.yml`` reach the wire here: the provider's ``timeout_s`` is
the client's request timeout, and the generation settings (:func:`generation_settings`) are the
pydantic-ai ``ModelSettings`` of every request. ``max_output_tokens`` goes out as
``max_tokens``, the field every OpenAI-compatible server knows, except to OpenAI's own API,
whose reasoning models accept only ``max_completion_tokens``.

Mistral's quirks (``message.content`` as a list of parts, ``tool_calls[].type`` null) are
handled in one place, :func:`normalise_completion`, called from the one completion-validation
hook ``OpenAIChatModel`` offers to subclasses.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlparse

from openai import AsyncOpenAI
from openai.types import chat
from pydantic_ai.models import Model
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.profiles.openai import OpenAIModelProfile
from pydantic_ai.providers.openai_compatible import OpenAICompatibleProvider
from pydantic_ai.settings import ModelSettings

from datagouv_eval_pipeline.core.benchmark import (
    DEFAULT_TIMEOUT_S,
    CellModel,
    ModelCallSettings,
    ProviderKind,
)
from datagouv_eval_pipeline.pipeline.agents.baselines import get_policy, policy_model

__all__ = ["DEFAULT_TIMEOUT_S"]  # where the agents' request timeout was first defined

_MAX_COMPLETION_TOKENS_HOSTS = frozenset({"api.openai.com"})
"""APIs that take ``max_completion_tokens`` (their reasoning models refuse ``max_tokens``)."""


class MissingApiKeyError(RuntimeError):
    """The environment variable that should hold a provider's key is unset or empty."""


def normalise_completion(data: dict[str, Any]) -> dict[str, Any]:
    """Reshape an OpenAI-compatible completion that follows Mistral's conventions, in place.

    * ``message.content`` given as a list of parts becomes the concatenated text parts;
    * ``tool_calls[].type`` null (or missing) becomes ``"function"``.

    Returns:
        The same dict, for chaining.
    """
    for choice in data.get("choices") or []:
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if isinstance(content, list):
            texts = [
                str(part.get("text", ""))
                for part in content
                if isinstance(part, dict) and part.get("type", "text") == "text"
            ]
            message["content"] = "".join(texts) if texts else None
        for call in message.get("tool_calls") or []:
            if isinstance(call, dict) and call.get("type") is None and "function" in call:
                call["type"] = "function"
    return data


class CompatibleChatModel(OpenAIChatModel):
    """``OpenAIChatModel`` that accepts the answers of OpenAI-compatible providers like Mistral."""

    def _validate_completion(self, response: chat.ChatCompletion) -> Any:
        # The documented subclass hook that runs before pydantic-ai validates the completion.
        data = normalise_completion(response.model_dump(warnings=False))
        # ``construct`` (the openai SDK's) rebuilds nested typed objects without validating;
        # the parent hook then validates leniently as usual.
        return super()._validate_completion(chat.ChatCompletion.construct(**data))


def generation_settings(settings: ModelCallSettings) -> ModelSettings:
    """The pydantic-ai settings of a model's requests: only those ``models.yml`` sets."""
    found = ModelSettings()
    if settings.temperature is not None:
        found["temperature"] = settings.temperature
    if settings.top_p is not None:
        found["top_p"] = settings.top_p
    if settings.seed is not None:
        found["seed"] = settings.seed
    if settings.max_output_tokens is not None:
        found["max_tokens"] = settings.max_output_tokens
    if settings.stop is not None:
        found["stop_sequences"] = list(settings.stop)
    return found


def api_key_for(model: CellModel, environ: Mapping[str, str] | None = None) -> str:
    """Read the provider's key from the environment variable the YAML names.

    Raises:
        MissingApiKeyError: The variable is unset or empty (the message names the variable,
            never a value).
    """
    env = os.environ if environ is None else environ
    if model.api_key_env is None:
        raise MissingApiKeyError(f"provider {model.provider!r} names no api_key_env")
    key = env.get(model.api_key_env, "").strip()
    if not key:
        raise MissingApiKeyError(
            f"set the environment variable {model.api_key_env} to the API key of provider "
            f"{model.provider!r} (it is read from the environment only, never from a file)"
        )
    return key


def missing_api_key(model: CellModel, environ: Mapping[str, str] | None = None) -> str | None:
    """Why a live model cannot be asked (its key's variable is unset or empty), or None.

    Offline models need no key. The reason is :func:`api_key_for`'s message (the variable's
    name, never a value).
    """
    if model.kind == ProviderKind.OFFLINE:
        return None
    try:
        api_key_for(model, environ)
    except MissingApiKeyError as error:
        return str(error)
    return None


def live_model(
    model: CellModel,
    *,
    base_url: str | None = None,
    environ: Mapping[str, str] | None = None,
    timeout_s: float | None = None,
) -> CompatibleChatModel:
    """A chat model for an ``openai_compatible`` or ``llama_cpp`` provider, with its YAML settings.

    Args:
        model: The cell's model.
        base_url: Overrides the YAML's base URL (e.g. a local replay server).
        environ: Where to read the key (``os.environ`` by default).
        timeout_s: Per-request timeout (default: the provider's ``timeout_s``, else 180 s).

    Raises:
        MissingApiKeyError: The key's environment variable is unset.
        ValueError: The provider is offline, or has no URL (a ``llama_cpp`` model needs
            ``base_url``: its server's).
    """
    if model.kind == ProviderKind.OFFLINE:
        raise ValueError(f"model {model.key} is an offline baseline policy, not an LLM")
    url = base_url or model.base_url
    if url is None:
        # A llama_cpp model's URL is its server's, known once the run has started it.
        raise ValueError(f"provider {model.provider!r} has no base_url")
    # llama.cpp's server, started by the pipeline on 127.0.0.1, takes no key.
    key = "no-key" if model.kind == ProviderKind.LLAMA_CPP else api_key_for(model, environ)
    # max_retries=0: providers.managed.ManagedModel retries, honouring Retry-After.
    timeout = timeout_s if timeout_s is not None else model.settings.request_timeout_s
    client = AsyncOpenAI(base_url=url, api_key=key, max_retries=0, timeout=timeout)
    # The provider's own host decides the field (a replay server stands in for it).
    host = urlparse(model.base_url or url).hostname or ""
    profile = OpenAIModelProfile(
        openai_chat_supports_max_completion_tokens=host in _MAX_COMPLETION_TOKENS_HOSTS
    )
    provider = OpenAICompatibleProvider(model.provider, openai_client=client, profile=profile)
    return CompatibleChatModel(
        model.name, provider=provider, settings=generation_settings(model.settings)
    )


def base_model(
    model: CellModel, *, base_url: str | None = None, environ: Mapping[str, str] | None = None
) -> Model:
    """The pydantic-ai model of a cell's model (a baseline policy for offline providers).

    Raises:
        KeyError: An offline model without a baseline policy.
        MissingApiKeyError: A live model whose key is unset.
    """
    if model.kind == ProviderKind.OFFLINE:
        return policy_model(get_policy(model.name))
    return live_model(model, base_url=base_url, environ=environ)
