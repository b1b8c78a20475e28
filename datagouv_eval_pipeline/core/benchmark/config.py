"""The benchmark configuration files of ``task_specs/benchmark/``, as strict pydantic models.

Five files, one top-level key each: ``models.yml`` (``providers``), ``mcp_versions.yml``,
``skills_versions.yml``, ``system_prompts.yml`` and ``evaluation_types.yml``. Every model
forbids unknown keys, and every entry states ``active`` explicitly. Names that end up in cell
keys are restricted (see ``keys.py``) so that keys stay readable, unambiguous and valid Dagster
partition keys.
"""

from __future__ import annotations

import hashlib
import json
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Any, Protocol, TypeVar

from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


_IDENTIFIER = r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$"
"""Lower snake case without double or trailing underscores (so ``__`` can separate key parts)."""

_PROVIDER = r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$"
_MODEL_NAME = re.compile(r"^[A-Za-z0-9]+(?:[._-][A-Za-z0-9]+|/[A-Za-z0-9]+)*$")
_ENV_VAR = re.compile(r"^[A-Z][A-Z0-9_]*$")
_VERSION_TEXT = re.compile(r"^[0-9][0-9a-z.]*$")
URL_PLACEHOLDERS = frozenset({"twin_port"})
"""Placeholders an MCP URL may contain; filled in when the local twin has started."""


def _released_version(value: str) -> str:
    """Check that a version is a normalised PEP 440 public version, e.g. ``0.2.26``."""
    try:
        parsed = Version(value)
    except InvalidVersion:
        raise ValueError(f"{value!r} is not a valid PEP 440 version (e.g. '0.2.26')") from None
    if str(parsed) != value:
        raise ValueError(f"write the version in its normalised PEP 440 form {str(parsed)!r}")
    if not _VERSION_TEXT.match(value):
        raise ValueError(f"{value!r}: epochs ('!') and local labels ('+') are not allowed here")
    return value


class ProviderKind(StrEnum):
    """How a provider's models are reached."""

    OPENAI_COMPATIBLE = "openai_compatible"
    """A real model behind an OpenAI-compatible chat completions API."""
    OFFLINE = "offline"
    """A deterministic baseline policy run in-process: not an LLM, no network, no key."""
    LLAMA_CPP = "llama_cpp"
    """A GGUF file served by llama.cpp's OpenAI-compatible server, which the pipeline starts on
    127.0.0.1 for the run and stops after (``docs/agents.md``): no base_url, no key."""


@dataclass(frozen=True)
class LocalServerSettings:
    """How the pipeline serves a ``llama_cpp`` model (see ``local_models/``).

    Attributes:
        gguf: The model file, as written in ``models.yml`` (``~`` and ``$VARS`` expanded when
            the server starts).
        chat_template_file: A Jinja chat template replacing the GGUF's own (a path, or the name
            of one the project ships, e.g. ``chatml_tools.jinja``); None: the GGUF's own.
        threads: CPU threads of the server; None: every core the pipeline may use.
        slots: Requests the server answers at once (the provider's ``concurrency``, default 1).
    """

    gguf: str
    chat_template_file: str | None = None
    threads: int | None = None
    slots: int = 1


class RateLimitSpec(_Strict):
    """Requests and tokens per minute a provider (or one model) allows.

    A field left out is inherited (a model's from its provider's); ``null`` means no limit.
    """

    requests_per_minute: float | None = Field(default=None, gt=0)
    """Model requests per minute; requests are spaced evenly, never sent in bursts."""
    tokens_per_minute: float | None = Field(default=None, gt=0)
    """Input plus output tokens per minute."""

    @model_validator(mode="after")
    def _not_empty(self) -> RateLimitSpec:
        if not self.model_fields_set:
            raise ValueError(
                "an empty rate_limit sets nothing: give requests_per_minute and/or "
                "tokens_per_minute (a number > 0, or null for no limit), or remove it"
            )
        return self


@dataclass(frozen=True)
class ModelRateLimit:
    """The rate limit that applies to one model, resolved from its provider and its own entry.

    Attributes:
        requests_per_minute: Requests per minute, None for no limit.
        tokens_per_minute: Tokens per minute, None for no limit.
        per_model: True when the model has its own ``rate_limit`` (its own quota, counted apart
            from the provider's other models); False when it shares its provider's.
    """

    requests_per_minute: float | None
    tokens_per_minute: float | None
    per_model: bool


DEFAULT_TIMEOUT_S = 180.0
"""Deadline of one model request when the provider sets no ``timeout_s``."""

DEFAULT_RETRIES = 5
"""Retries of a transient model failure when the provider sets no ``retries``."""


@dataclass(frozen=True)
class ModelCallSettings:
    """The settings of one model's requests, resolved from its entry and its provider.

    None everywhere means "not set": the built-in default (timeout, retries) or the server's own
    (generation settings, which are then not sent). Every setting that is set changes what a run
    sends or how long it waits, so :meth:`record` goes into the trace's provenance and the cell
    record, and :meth:`tag` into the cell key. ``concurrency`` is not here: it says how many
    runs are in flight, not what any of them does.

    Attributes:
        timeout_s: Deadline of one model request (the provider's ``timeout_s``).
        retries: Retries of a transient failure (the provider's ``retries``).
        temperature: Sampling temperature.
        top_p: Nucleus sampling mass.
        seed: Sampling seed, for servers that honour it.
        max_output_tokens: Longest answer of one request (``max_tokens`` on the wire).
        stop: Stop sequences.
        context_window: Tokens the model reads and writes per request; tool results are cut to
            fit it, and a request that cannot fit is not sent.
    """

    timeout_s: float | None = None
    retries: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    max_output_tokens: int | None = None
    stop: tuple[str, ...] | None = None
    context_window: int | None = None

    def record(self) -> dict[str, Any]:
        """The settings that are set, by name (JSON-ready; empty when none is set)."""
        found: dict[str, Any] = {}
        for item in fields(self):
            value = getattr(self, item.name)
            if value is not None:
                found[item.name] = list(value) if isinstance(value, tuple) else value
        return found

    def tag(self) -> str | None:
        """8 hex digits of the settings that are set, for the cell key; None when none is."""
        found = self.record()
        if not found:
            return None
        text = json.dumps(found, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:8]

    @property
    def request_timeout_s(self) -> float:
        """The deadline of one request (the default when not set)."""
        return self.timeout_s if self.timeout_s is not None else DEFAULT_TIMEOUT_S


_GENERATION_SETTINGS = (
    "temperature",
    "top_p",
    "seed",
    "max_output_tokens",
    "stop",
    "context_window",
)
_REQUEST_SETTINGS = ("timeout_s", "retries")


class ModelEntry(_Strict):
    """One model of a provider."""

    name: str
    """The model id exactly as the provider's API spells it, e.g. ``mistral-small-2603``."""
    active: bool
    """Only active models enter the cross-product."""
    input_price_per_mtok: float | None = Field(ge=0)
    """Price per million input tokens, in the file's currency; null when unknown."""
    output_price_per_mtok: float | None = Field(ge=0)
    """Price per million output tokens, in the file's currency; null when unknown."""
    label: str | None = None
    """Shown next to the model in reports, e.g. ``small`` or ``baseline policy, not an LLM``."""
    rate_limit: RateLimitSpec | None = None
    """This model's own quota, overriding the provider's field by field (fields left out are
    inherited). A model with its own ``rate_limit`` is throttled apart from its provider's other
    models."""
    temperature: float | None = Field(default=None, ge=0, le=2)
    """Sampling temperature sent with every request; null: the server's default."""
    top_p: float | None = Field(default=None, gt=0, le=1)
    """Nucleus sampling mass sent with every request; null: the server's default."""
    seed: int | None = None
    """Sampling seed sent with every request (servers that honour it repeat themselves)."""
    max_output_tokens: int | None = Field(default=None, ge=1)
    """Longest answer of one request, in tokens (``max_tokens`` on the wire)."""
    stop: list[str] | None = Field(default=None, min_length=1)
    """Stop sequences sent with every request."""
    context_window: int | None = Field(default=None, ge=512)
    """Tokens the model reads and writes per request (the server's context size). Tool results
    that would overflow it are cut with a visible marker; a request that still cannot fit is
    not sent and the run ends ``error`` (``context_overflow``)."""

    gguf: str | None = Field(default=None, min_length=1)
    """``llama_cpp`` providers only: the GGUF file to serve (``~`` and ``$VARS`` expanded)."""
    chat_template_file: str | None = Field(default=None, min_length=1)
    """``llama_cpp`` providers only: a Jinja chat template replacing the GGUF's own (a path, or
    ``chatml_tools.jinja``, shipped for ChatML models whose own template shows no tools)."""

    @field_validator("stop")
    @classmethod
    def _non_empty_stops(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and any(not item for item in value):
            raise ValueError("a stop sequence is an empty string: remove it")
        return value

    @model_validator(mode="after")
    def _window_holds_answer(self) -> ModelEntry:
        window, answer = self.context_window, self.max_output_tokens
        if window is not None and answer is not None and answer >= window:
            raise ValueError(
                f"max_output_tokens ({answer}) must be smaller than context_window ({window}): "
                "the prompt has to fit in the window too"
            )
        return self

    @field_validator("name")
    @classmethod
    def _key_safe_name(cls, value: str) -> str:
        if not _MODEL_NAME.match(value) or "__" in value:
            raise ValueError(
                f"model name {value!r} may only use letters, digits and single '.', '-', '_' or "
                "'/' between them (it becomes part of the cell key)"
            )
        return value


class Provider(_Strict):
    """A model provider and how to reach it."""

    name: str = Field(pattern=_PROVIDER)
    """Short lower-case name, e.g. ``mistral``."""
    kind: ProviderKind = ProviderKind.OPENAI_COMPATIBLE
    """``openai_compatible`` (needs base_url and api_key_env) or ``offline`` (needs neither)."""
    base_url: str | None = Field(default=None, pattern=r"^https?://\S+$")
    """Base URL of the OpenAI-compatible API, e.g. ``https://api.mistral.ai/v1``."""
    api_key_env: str | None = None
    """NAME of the environment variable that holds the API key (never the key itself)."""
    rate_limit: RateLimitSpec | None = None
    """Quota shared by the provider's models (one API key). Without one (here and on the model),
    the runner falls back to a conservative built-in default for known providers."""
    concurrency: int | None = Field(default=None, ge=1)
    """Task runs of this provider in flight at once, across every run of the Dagster instance
    (its pool ``agent_runs.<name>``), and judge requests in flight when the judge runs on it.
    null: sized to the machine for an offline provider (8 per CPU core), 4 for a remote one
    (the judge's default, 8, when it judges)."""
    timeout_s: float | None = Field(default=None, gt=0)
    """Deadline of one model request, in seconds (agents and the judge). null: 180 s for the
    agents, the judge's own default (60 s) when it judges. A request that passes it is retried
    like any transient failure (see ``retries``)."""
    retries: int | None = Field(default=None, ge=0)
    """Retries of a model request that failed for a transient reason (429, 5xx, timeout,
    connection). null: 5 for the agents, the judge's own default (2) when it judges. A slow
    local server is better served by 0 or 1: each retry starts the request over."""
    threads: int | None = Field(default=None, ge=1)
    """``llama_cpp`` providers only: CPU threads of each server (null: every core). 1 is
    faster on a machine whose cores other jobs share (OpenMP threads spin-wait)."""
    models: list[ModelEntry] = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _renamed_fields(cls, data: Any) -> Any:
        if isinstance(data, dict) and "slots" in data:
            raise ValueError("`slots` is now called `concurrency`: rename the field")
        return data

    def settings_for(self, entry: ModelEntry) -> ModelCallSettings:
        """The request settings of one of this provider's models."""
        return ModelCallSettings(
            timeout_s=self.timeout_s,
            retries=self.retries,
            temperature=entry.temperature,
            top_p=entry.top_p,
            seed=entry.seed,
            max_output_tokens=entry.max_output_tokens,
            stop=tuple(entry.stop) if entry.stop is not None else None,
            context_window=entry.context_window,
        )

    def server_for(self, entry: ModelEntry) -> LocalServerSettings | None:
        """How the pipeline serves one of this provider's models (None unless ``llama_cpp``)."""
        if self.kind != ProviderKind.LLAMA_CPP or entry.gguf is None:
            return None
        return LocalServerSettings(
            gguf=entry.gguf,
            chat_template_file=entry.chat_template_file,
            threads=self.threads,
            slots=self.concurrency or 1,
        )

    def rate_limit_for(self, entry: ModelEntry) -> ModelRateLimit | None:
        """The rate limit of one of this provider's models; None when neither sets one."""
        if entry.rate_limit is None and self.rate_limit is None:
            return None
        values: dict[str, float | None] = {"requests_per_minute": None, "tokens_per_minute": None}
        for spec in (self.rate_limit, entry.rate_limit):
            if spec is not None:
                for name in spec.model_fields_set & set(values):
                    values[name] = getattr(spec, name)
        return ModelRateLimit(
            requests_per_minute=values["requests_per_minute"],
            tokens_per_minute=values["tokens_per_minute"],
            per_model=entry.rate_limit is not None,
        )

    @field_validator("api_key_env")
    @classmethod
    def _env_var_name(cls, value: str | None) -> str | None:
        # The value is deliberately not echoed: it might be a pasted key.
        if value is not None and not _ENV_VAR.match(value):
            raise ValueError(
                "api_key_env must be the NAME of an environment variable in upper case, such as "
                "MISTRAL_API_KEY, never the key itself"
            )
        return value

    @model_validator(mode="after")
    def _kind_matches_access(self) -> Provider:
        served = [
            f"models.{index} ({entry.name}) {field}"
            for index, entry in enumerate(self.models)
            for field in ("gguf", "chat_template_file")
            if getattr(entry, field) is not None
        ]
        if self.kind == ProviderKind.LLAMA_CPP:
            present = [f for f in ("base_url", "api_key_env") if getattr(self, f) is not None]
            if present:
                raise ValueError(
                    f"a llama_cpp provider takes no {' or '.join(present)}: the pipeline starts "
                    "its server on 127.0.0.1 (use openai_compatible for a server you run)"
                )
            missing = [f"models.{i} ({e.name})" for i, e in enumerate(self.models) if not e.gguf]
            if missing:
                raise ValueError(f"{', '.join(missing)}: a llama_cpp model needs its gguf file")
            return self
        if served or self.threads is not None:
            given = [*served, *(["threads"] if self.threads is not None else [])]
            raise ValueError(f"only a llama_cpp provider takes {', '.join(given)}")
        if self.kind == ProviderKind.OPENAI_COMPATIBLE:
            missing = [f for f in ("base_url", "api_key_env") if getattr(self, f) is None]
            if missing:
                raise ValueError(f"an openai_compatible provider needs {' and '.join(missing)}")
        else:
            present = [
                f
                for f in ("base_url", "api_key_env", *_REQUEST_SETTINGS)
                if getattr(self, f) is not None
            ]
            if present:
                raise ValueError(f"an offline provider takes no {' or '.join(present)}")
            for index, entry in enumerate(self.models):
                given = [f for f in _GENERATION_SETTINGS if getattr(entry, f) is not None]
                if given:
                    raise ValueError(
                        f"models.{index} ({entry.name}): an offline baseline policy is not an "
                        f"LLM and takes no {' or '.join(given)}"
                    )
        return self


class ModelsFile(_Strict):
    """``models.yml``: the models under evaluation, grouped by provider."""

    currency: str = Field(pattern=r"^[A-Z]{3}$")
    """ISO 4217 code of every price in the file, e.g. ``EUR``."""
    providers: list[Provider] = Field(min_length=1)


class McpSource(StrEnum):
    """Where the MCP server of an entry comes from."""

    TWIN = "twin"
    """The local twin's emulation of the release (the embedded default, offline)."""
    URL = "url"
    """A deployed server at a fixed URL (live)."""
    BUILD = "build"
    """The real server's code, installed into its own environment and started locally."""


_PACKAGE_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9][A-Za-z0-9.+!_-]*)$")
_GIT_SPEC = re.compile(
    r"^(?P<url>(?:https?|ssh|git|file)://\S+?|[\w.-]+@[\w.-]+:\S+?)@(?P<ref>[^@\s]+)$"
)
_PYTHON_VERSION = re.compile(r"^3\.[0-9]+(?:\.[0-9]+)?$")
_SOURCE_NAME = r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$"


class McpBuild(_Strict):
    """A build of the real MCP server: exactly one of ``package``, ``git`` or ``path``.

    The build is installed into an environment of its own (its dependencies, e.g. ``mcp<2``,
    never meet the pipeline's) and started on 127.0.0.1 for the run.
    """

    package: str | None = None
    """A pinned package from the package index, ``NAME==VERSION``."""
    git: str | None = None
    """A repository and a ref, ``URL@REF`` (a tag, branch or commit; cloning needs the network)."""
    path: str | None = None
    """A local checkout of the server, absolute or relative to the benchmark configuration
    directory; its code is run in place, so edits count at the next run."""
    python: str | None = None
    """Python version of the environment, e.g. ``3.13`` (default: the pipeline's interpreter;
    another version is fetched by uv, which needs the network once)."""

    @model_validator(mode="after")
    def _exactly_one_origin(self) -> McpBuild:
        given = [name for name in ("package", "git", "path") if getattr(self, name) is not None]
        if len(given) != 1:
            found = f"got {' and '.join(given)}" if given else "got none"
            raise ValueError(
                "a build names exactly one origin: package (NAME==VERSION), git (URL@REF) or "
                f"path (a local checkout); {found}"
            )
        return self

    @field_validator("package")
    @classmethod
    def _pinned_package(cls, value: str | None) -> str | None:
        if value is not None and not _PACKAGE_PIN.match(value):
            raise ValueError(
                f"expected NAME==VERSION, e.g. 'datagouv-mcp==0.2.26'; got {value!r} (a build "
                "is pinned to one version so its cache and results stay reproducible)"
            )
        return value

    @field_validator("git")
    @classmethod
    def _git_ref(cls, value: str | None) -> str | None:
        if value is not None and not _GIT_SPEC.match(value):
            raise ValueError(
                "expected URL@REF, e.g. 'https://github.com/datagouv/datagouv-mcp@v0.2.26'; "
                f"got {value!r}"
            )
        return value

    @field_validator("path")
    @classmethod
    def _non_empty_path(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("the path of a local checkout is empty")
        return value

    @field_validator("python")
    @classmethod
    def _python_version(cls, value: str | None) -> str | None:
        if value is not None and not _PYTHON_VERSION.match(value):
            raise ValueError(f"expected a Python version such as '3.13'; got {value!r}")
        return value

    @property
    def origin(self) -> str:
        """``package``, ``git`` or ``path``."""
        return next(name for name in ("package", "git", "path") if getattr(self, name))

    @property
    def spec(self) -> str:
        """The build as one line, e.g. ``package:datagouv-mcp==0.2.26`` (provenance)."""
        text = f"{self.origin}:{getattr(self, self.origin)}"
        return text if self.python is None else f"{text} (python {self.python})"


def twin_mcp_url(version: str) -> str:
    """The twin's endpoint of a release, with ``{twin_port}`` to fill in."""
    return f"http://127.0.0.1:{{twin_port}}/mcp/v{version}/mcp"


class McpVersion(_Strict):
    """One pinned version of the data.gouv.fr MCP server, and where its server comes from.

    Without ``url`` or ``build`` the twin serves its emulation of the version. The emulation
    and a build of the same version are two entries, told apart by ``name``.
    """

    version: str
    """Normalised PEP 440 version, e.g. ``0.2.26`` (quote it in YAML); the semantic layer
    resolves the server's tool names at this version."""
    active: bool
    """Only active versions enter the cross-product (unless an evaluation type names them)."""
    source: McpSource | None = None
    """``twin``, ``url`` or ``build``; inferred when left out (``build`` given: build; a
    ``url`` without ``{twin_port}``: url; otherwise twin)."""
    url: str | None = Field(default=None, pattern=r"^https?://\S+$")
    """Streamable-HTTP endpoint: a deployed server (``url``), or the twin's endpoint with
    ``{twin_port}`` (filled in when the twin starts; the default for the twin)."""
    build: McpBuild | None = None
    """The real server to install and start (``build`` entries only)."""
    name: str | None = Field(default=None, pattern=_SOURCE_NAME)
    """Tells entries of one version apart in cell keys (``mcp@0.2.14~build``); a build is
    named ``build`` unless given a name, the twin and a URL have none unless given one."""

    @field_validator("version")
    @classmethod
    def _valid_version(cls, value: str) -> str:
        return _released_version(value)

    @field_validator("url")
    @classmethod
    def _known_placeholders(cls, value: str | None) -> str | None:
        if value is None:
            return value
        try:
            fields = {name for _, name, _, _ in string.Formatter().parse(value) if name is not None}
        except ValueError as error:
            raise ValueError(f"malformed placeholder in URL {value!r}: {error}") from None
        unknown = fields - URL_PLACEHOLDERS
        if unknown:
            raise ValueError(
                f"unknown placeholder(s) {sorted(unknown)} in URL; allowed: "
                f"{', '.join('{' + name + '}' for name in sorted(URL_PLACEHOLDERS))}"
            )
        return value

    @model_validator(mode="after")
    def _source_matches(self) -> McpVersion:
        inferred = self._inferred_source()
        if self.source is not None and self.source != inferred:
            wants = {
                McpSource.TWIN: "no build, and no url or one with {twin_port}",
                McpSource.URL: "a url without placeholder (the deployed server) and no build",
                McpSource.BUILD: "a build (package, git or path) and no url",
            }
            raise ValueError(f"source {self.source.value!r} needs {wants[self.source]}")
        if self.build is not None and self.url is not None:
            raise ValueError("a build is started locally: give build or url, not both")
        return self

    def _inferred_source(self) -> McpSource:
        if self.build is not None:
            return McpSource.BUILD
        if self.url is not None and "{twin_port}" not in self.url:
            return McpSource.URL
        return McpSource.TWIN

    @property
    def origin(self) -> McpSource:
        """Where the server comes from (``source``, given or inferred)."""
        return self.source or self._inferred_source()

    @property
    def label(self) -> str | None:
        """The name in cell keys: ``name``, ``build`` for an unnamed build, else None."""
        if self.name is not None:
            return self.name
        return "build" if self.origin == McpSource.BUILD else None

    @property
    def endpoint(self) -> str | None:
        """The configured endpoint (the twin's by default); None for a build (not yet started)."""
        if self.origin == McpSource.BUILD:
            return None
        return self.url if self.url is not None else twin_mcp_url(self.version)

    @property
    def key(self) -> str:
        """The name evaluation types select this entry by: ``0.2.26``, ``0.2.14~build``."""
        return self.version if self.label is None else f"{self.version}~{self.label}"


class McpVersionsFile(_Strict):
    """``mcp_versions.yml``: the MCP server versions an evaluation can pin."""

    mcp_versions: list[McpVersion] = Field(min_length=1)


class SkillsVersion(_Strict):
    """One version of the skills document appended to the system prompt."""

    version: str
    """Normalised PEP 440 version, e.g. ``0.0.1`` (quote it in YAML)."""
    file: str = Field(min_length=1)
    """Path of the Markdown document, relative to the benchmark configuration directory."""
    active: bool
    """Only active versions enter the cross-product (unless an evaluation type names them)."""

    @field_validator("version")
    @classmethod
    def _valid_version(cls, value: str) -> str:
        return _released_version(value)

    @property
    def key(self) -> str:
        """The name evaluation types select this entry by."""
        return self.version


class SkillsVersionsFile(_Strict):
    """``skills_versions.yml``: the skills documents an evaluation can use."""

    skills_versions: list[SkillsVersion] = Field(min_length=1)


class SystemPrompt(_Strict):
    """A named system prompt."""

    name: str = Field(pattern=_IDENTIFIER)
    """Lower snake case, e.g. ``data_gouv_context``."""
    active: bool
    """Selected by evaluation types whose ``system_prompts`` is ``active``."""
    text: str
    """The prompt itself (may be empty, for a no-system-prompt variant)."""

    @property
    def key(self) -> str:
        """The name evaluation types select this entry by."""
        return self.name


class SystemPromptsFile(_Strict):
    """``system_prompts.yml``: the named system prompts."""

    system_prompts: list[SystemPrompt] = Field(min_length=1)


class Capability(StrEnum):
    """What an agent is given besides the model."""

    MCP = "mcp"
    """The data.gouv.fr MCP server, at one pinned version."""
    SKILLS = "skills"
    """The skills document, appended to the system prompt, at one version."""
    CODE = "code"
    """A sandbox that runs Python (and reaches the REST and Tabular APIs)."""
    WEB_SEARCH = "web_search"
    """A web search tool."""
    DATAGOUV_CLI = "datagouv-cli"
    """The ``datagouv`` command line, run inside the code sandbox."""
    PYTHON_SDK = "python-sdk"
    """The ``datagouv-client`` library, importable inside the code sandbox."""


class Metric(StrEnum):
    """Groups of metrics an evaluation type computes."""

    RESULT_ACCURACY = "result_accuracy"
    """Criteria verdicts on the answer, deterministic answer checks and failure modes."""
    EFFICIENCY = "efficiency"
    """Tokens, latency, tool calls and cost."""
    ACTION_USAGE = "action_usage"
    """Semantic action precision/recall, parameters and trajectory against the task's chains."""


class Factor(StrEnum):
    """What an evaluation type's question varies: cells differing in that factor only are paired.

    The statistics stage (``eval.question_comparisons``) pairs two cells of the type for a
    factor when every other coordinate is the same, by the definitions below.
    """

    MODEL = "model"
    """The model (provider and id); everything else the same."""
    MCP_VERSION = "mcp_version"
    """The MCP server version (and where it comes from), both cells having ``mcp``."""
    CAPABILITY = "capability"
    """The way of reaching the catalogue (none, mcp, code, code with the CLI...): the capability
    set ignoring ``skills``. The skills version is the same on both sides; the MCP version may
    differ only because one side has no ``mcp``."""
    SKILLS = "skills"
    """The skills document: the same setup with and without it, or with two of its versions."""
    SYSTEM_PROMPT = "system_prompt"
    """The system prompt; everything else the same."""


SELECTOR_WORDS = ("active", "all")


class EvaluationType(_Strict):
    """A question the benchmark answers, and the part of the cross-product it needs."""

    name: str = Field(pattern=_IDENTIFIER)
    """Lower snake case, e.g. ``mcp_versions``."""
    description: str = Field(min_length=1)
    """The question this evaluation type answers."""
    active: bool
    """Active types are expanded by default; an inactive one only when asked for by name."""
    capability_sets: list[list[Capability]] = Field(min_length=1)
    """Each set is one configuration, e.g. ``[mcp, web_search]``; ``[]`` means no tools."""
    system_prompts: str | list[str] = "active"
    """``active`` (the active prompts), ``all``, or a list of names (used even when inactive)."""
    mcp_versions: str | list[str] = "active"
    """For sets with ``mcp``: ``active``, ``all`` or a list of versions."""
    skills_versions: str | list[str] = "active"
    """For sets with ``skills``: ``active``, ``all`` or a list of versions."""
    metrics: list[Metric] = Field(min_length=1)
    """The metric groups computed for this type's cells."""
    compares: list[Factor] = Field(min_length=1)
    """What the question varies: ``model``, ``mcp_version``, ``capability``, ``skills`` or
    ``system_prompt``. Each factor is answered apart, by pairing the type's cells that differ in
    it only (``eval.question_comparisons``)."""

    @field_validator("system_prompts", "mcp_versions", "skills_versions")
    @classmethod
    def _selector(cls, value: str | list[str]) -> str | list[str]:
        if isinstance(value, str) and value not in SELECTOR_WORDS:
            raise ValueError(
                f"expected 'active', 'all' or a list of names; got {value!r}"
                + (" (write a single name as a one-item list)" if value else "")
            )
        if isinstance(value, list):
            if not value:
                raise ValueError("the list of names is empty: name at least one, or use 'all'")
            repeated = sorted({item for item in value if value.count(item) > 1})
            if repeated:
                raise ValueError(f"names listed more than once: {', '.join(repeated)}")
        return value

    @field_validator("capability_sets")
    @classmethod
    def _distinct_sets(cls, value: list[list[Capability]]) -> list[list[Capability]]:
        seen: dict[frozenset[Capability], int] = {}
        for index, capability_set in enumerate(value):
            as_set = frozenset(capability_set)
            if len(as_set) != len(capability_set):
                raise ValueError(f"capability set {index} names a capability twice")
            if as_set in seen:
                raise ValueError(
                    f"capability sets {seen[as_set]} and {index} are the same set "
                    f"({sorted(as_set)}): order does not matter"
                )
            seen[as_set] = index
        return value

    @field_validator("metrics")
    @classmethod
    def _distinct_metrics(cls, value: list[Metric]) -> list[Metric]:
        if len(set(value)) != len(value):
            raise ValueError("a metric is listed more than once")
        return value

    @field_validator("compares")
    @classmethod
    def _distinct_factors(cls, value: list[Factor]) -> list[Factor]:
        if len(set(value)) != len(value):
            raise ValueError("a factor is listed more than once")
        return value


class EvaluationTypesFile(_Strict):
    """``evaluation_types.yml``: the evaluation types."""

    evaluation_types: list[EvaluationType] = Field(min_length=1)


class Selectable(Protocol):
    """An entry an evaluation type can select: by name, or because it is active."""

    @property
    def key(self) -> str: ...  # noqa: D102

    @property
    def active(self) -> bool: ...  # noqa: D102


S = TypeVar("S", bound=Selectable)


def select(selector: str | list[str], entries: Sequence[S]) -> list[S]:
    """Resolve a selector against entries, in the order of the selector (names) or the file.

    Args:
        selector: ``active``, ``all`` or a list of entry names.
        entries: The entries of the configuration file.

    Returns:
        The selected entries; names that match no entry are skipped (the loader reports them).
    """
    if selector == "all":
        return list(entries)
    if selector == "active":
        return [entry for entry in entries if entry.active]
    by_key = {entry.key: entry for entry in entries}
    return [by_key[name] for name in selector if name in by_key]
