"""The cross-product of the benchmark configuration: one cell per distinct agent setup.

For each selected evaluation type, each of its capability sets, each active model, each
selected MCP version (only for sets with ``mcp``), each selected skills version (only for sets
with ``skills``) and each selected system prompt, there is one cell. Evaluation types often
share configurations (``[mcp]`` at the latest version appears in several); such cells have the
same key and are merged: the cell runs once, records every evaluation type that includes it,
and computes the union of their metrics.
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import BaseModel, ConfigDict

from datagouv_eval_pipeline.core.benchmark.config import (
    Capability,
    EvaluationType,
    LocalServerSettings,
    McpBuild,
    McpVersion,
    Metric,
    ModelCallSettings,
    ModelEntry,
    ModelRateLimit,
    Provider,
    ProviderKind,
    SkillsVersion,
    select,
)
from datagouv_eval_pipeline.core.benchmark.keys import (
    capability_set,
    cell_key,
    model_key,
    setup_key,
)
from datagouv_eval_pipeline.core.benchmark.loader import BenchmarkConfig, build_path


class CellRecord(BaseModel):
    """The identity of a cell, as every stage document and the warehouse store it.

    A :class:`Cell` gives its own (:meth:`Cell.to_record`): the setup flattened, texts replaced
    by their hashes, without the execution settings (rate limits, server, build path).
    """

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
    model_settings: dict[str, Any] | None = None
    """The model's request settings that were set (``ModelCallSettings.record``)."""
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
        return capability_set(self.capabilities)


@dataclass(frozen=True)
class CellModel:
    """The model of a cell and how to reach it.

    Attributes:
        provider: Provider name, e.g. ``mistral``.
        name: Model id as the provider spells it.
        kind: ``openai_compatible`` or ``offline`` (a deterministic baseline, not an LLM).
        base_url: API base URL (None for offline models).
        api_key_env: Name of the environment variable holding the key (None for offline models).
        input_price_per_mtok: Price per million input tokens, None when unknown.
        output_price_per_mtok: Price per million output tokens, None when unknown.
        currency: ISO 4217 code of the prices.
        label: Free text shown in reports.
        rate_limit: Requests/tokens per minute from ``models.yml`` (provider, overridden by the
            model); None when neither sets one. An execution setting: not part of the key or
            of the cell record.
        settings: Request and generation settings from ``models.yml`` (timeout, retries,
            temperature, context window...). Part of the key (their digest) and of the cell
            record when any is set.
        server: How the pipeline serves a ``llama_cpp`` model (None for other kinds). An
            execution setting: the GGUF file is named by the model's name.
    """

    provider: str
    name: str
    kind: ProviderKind
    base_url: str | None
    api_key_env: str | None
    input_price_per_mtok: float | None
    output_price_per_mtok: float | None
    currency: str
    label: str | None = None
    rate_limit: ModelRateLimit | None = None
    settings: ModelCallSettings = field(default_factory=ModelCallSettings)
    server: LocalServerSettings | None = None

    @property
    def is_llm(self) -> bool:
        """False for the offline baseline policies."""
        return self.kind != ProviderKind.OFFLINE

    @property
    def key(self) -> str:
        """The model part of cell keys, e.g. ``albert~openai~gpt-oss-120b``.

        A model with request settings carries their digest: ``local~qwen2.5@3f9a02c1``.
        """
        return model_key(self.provider, self.name, self.settings.tag())

    @property
    def quota_key(self) -> str:
        """The model as its provider's API knows it (settings aside): a per-model quota's key."""
        return model_key(self.provider, self.name)


@dataclass(frozen=True)
class Cell:
    """One agent setup to run every task against.

    Attributes:
        key: Stable partition key (see ``keys.py``); decode it with ``decode_cell_key``.
        evaluation_types: Every evaluation type that includes this setup, in file order.
        model: The model.
        capabilities: Capability names, sorted.
        mcp_version: The pinned MCP version, None without ``mcp``.
        mcp_url: The MCP endpoint, possibly with ``{twin_port}``; None without ``mcp`` and for
            a build (its endpoint is known once it is started).
        skills_version: The skills version, None without ``skills``.
        skills_sha256: sha256 of the skills document, None without ``skills``.
        skills_text: The skills document, None without ``skills``.
        system_prompt: The system prompt name.
        system_prompt_sha256: sha256 of the system prompt text.
        system_prompt_text: The system prompt text.
        metrics: Metric groups to compute (union over ``evaluation_types``), in enum order.
        mcp_source: Where the MCP server comes from (``twin``, ``url`` or ``build``); None
            without ``mcp``.
        mcp_label: The MCP entry's source name in the key (``build``), None for an unnamed
            entry.
        mcp_build: The build to install and start (a ``path`` resolved to an absolute
            directory); None unless ``mcp_source`` is ``build``.
        mcp_build_spec: The build as configured (``path:../datagouv-mcp``), for provenance.
    """

    key: str
    evaluation_types: tuple[str, ...]
    model: CellModel
    capabilities: tuple[str, ...]
    mcp_version: str | None
    mcp_url: str | None
    skills_version: str | None
    skills_sha256: str | None
    system_prompt: str
    system_prompt_sha256: str
    metrics: tuple[str, ...]
    skills_text: str | None = field(default=None, repr=False)
    system_prompt_text: str = field(default="", repr=False)
    mcp_source: str | None = None
    mcp_label: str | None = None
    mcp_build: McpBuild | None = None
    mcp_build_spec: str | None = field(default=None, repr=False)

    @property
    def model_key(self) -> str:
        """The model part of the key (a possible first partition dimension)."""
        return self.model.key

    @property
    def capability_set(self) -> str:
        """The capabilities as one string, e.g. ``mcp+web_search``; ``none`` when empty."""
        return capability_set(self.capabilities)

    @property
    def setup_key(self) -> str:
        """The key without its model part (a possible second partition dimension)."""
        return setup_key(
            self.capabilities,
            self.mcp_version,
            self.skills_version,
            self.system_prompt,
            self.mcp_label,
        )

    def mcp_url_for(self, twin_port: int | None) -> str | None:
        """Return the MCP URL with ``{twin_port}`` filled in.

        Args:
            twin_port: The port the local twin listens on; may be None for URLs without it.

        Raises:
            ValueError: If the URL needs a port and none is given.
        """
        if self.mcp_url is None:
            return None
        if "{twin_port}" in self.mcp_url:
            if twin_port is None:
                raise ValueError(f"cell {self.key}: the MCP URL needs the twin's port")
            return self.mcp_url.format(twin_port=twin_port)
        return self.mcp_url

    def to_record(self) -> CellRecord:
        """The cell's identity as the documents and the warehouse store it."""
        return CellRecord(
            key=self.key,
            evaluation_types=list(self.evaluation_types),
            model_provider=self.model.provider,
            model_name=self.model.name,
            model_kind=str(self.model.kind),
            model_is_llm=self.model.is_llm,
            model_label=self.model.label,
            base_url=self.model.base_url,
            api_key_env=self.model.api_key_env,
            input_price_per_mtok=self.model.input_price_per_mtok,
            output_price_per_mtok=self.model.output_price_per_mtok,
            currency=self.model.currency,
            model_settings=self.model.settings.record() or None,
            capabilities=list(self.capabilities),
            mcp_version=self.mcp_version,
            mcp_url=self.mcp_url,
            mcp_source=self.mcp_source,
            mcp_build=self._build_record(),
            skills_version=self.skills_version,
            skills_sha256=self.skills_sha256,
            system_prompt=self.system_prompt,
            system_prompt_sha256=self.system_prompt_sha256,
            metrics=list(self.metrics),
        )

    def _build_record(self) -> str | None:
        # The build as configured, without the machine path a relative ``path`` resolves to.
        if self.mcp_build is None:
            return None
        return self.mcp_build_spec or self.mcp_build.spec


class UnknownEvaluationTypeError(ValueError):
    """An evaluation type asked for by name that the configuration does not define."""


def sha256_text(text: str) -> str:
    """Return the hex sha256 of a text encoded as UTF-8."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def expand_cells(
    config: BenchmarkConfig,
    evaluation_types: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
) -> list[Cell]:
    """Expand the configuration into its distinct cells.

    Args:
        config: A loaded configuration (``load_benchmark_config``).
        evaluation_types: Names of the evaluation types to expand (inactive ones included when
            named); None expands every active evaluation type.
        models: The models to expand, as ``PROVIDER/MODEL`` (inactive ones included; names
            that are not in ``models.yml`` are ignored, see ``selection.select_models``); None
            expands every active model.

    Returns:
        The cells in order of first appearance (file order of types, capability sets, models,
        versions and prompts), one per distinct key.

    Raises:
        UnknownEvaluationTypeError: If a name matches no evaluation type.
    """
    cells: dict[str, Cell] = {}
    chosen = _models(config, models)
    for etype in _selected_types(config, evaluation_types):
        for cell in _cells_of(config, etype, chosen):
            existing = cells.get(cell.key)
            cells[cell.key] = cell if existing is None else _merge(existing, cell)
    return list(cells.values())


def _selected_types(config: BenchmarkConfig, names: Sequence[str] | None) -> list[EvaluationType]:
    types = config.evaluation_types.evaluation_types
    if names is None:
        return [etype for etype in types if etype.active]
    by_name = {etype.name: etype for etype in types}
    unknown = [name for name in names if name not in by_name]
    if unknown:
        hints = []
        for name in unknown:
            close = difflib.get_close_matches(name, list(by_name), n=3, cutoff=0.6)
            hints.append(f"{name!r}" + (f" (did you mean {' or '.join(close)}?)" if close else ""))
        raise UnknownEvaluationTypeError(
            f"unknown evaluation type(s) {', '.join(hints)}; defined: {', '.join(by_name)}"
        )
    return [etype for etype in types if etype.name in set(names)]


def _models(config: BenchmarkConfig, names: Sequence[str] | None) -> list[CellModel]:
    """The active models, or those ``names`` lists (``PROVIDER/MODEL``), in file order."""
    wanted = set(names) if names is not None else None
    return [
        _cell_model(provider, entry, config.models.currency)
        for provider in config.models.providers
        for entry in provider.models
        if (entry.active if wanted is None else f"{provider.name}/{entry.name}" in wanted)
    ]


def _cell_model(provider: Provider, entry: ModelEntry, currency: str) -> CellModel:
    return CellModel(
        provider=provider.name,
        name=entry.name,
        kind=provider.kind,
        base_url=provider.base_url,
        api_key_env=provider.api_key_env,
        input_price_per_mtok=entry.input_price_per_mtok,
        output_price_per_mtok=entry.output_price_per_mtok,
        currency=currency,
        label=entry.label,
        rate_limit=provider.rate_limit_for(entry),
        settings=provider.settings_for(entry),
        server=provider.server_for(entry),
    )


def _cells_of(
    config: BenchmarkConfig, etype: EvaluationType, models: Sequence[CellModel]
) -> list[Cell]:
    prompts = select(etype.system_prompts, config.system_prompts.system_prompts)
    mcp_versions = select(etype.mcp_versions, config.mcp_versions.mcp_versions)
    skills_versions = select(etype.skills_versions, config.skills_versions.skills_versions)
    metrics = tuple(metric.value for metric in Metric if metric in etype.metrics)
    cells: list[Cell] = []
    for capability_choice in etype.capability_sets:
        capabilities = tuple(sorted(capability.value for capability in capability_choice))
        mcp_options: list[McpVersion | None] = (
            list(mcp_versions) if Capability.MCP in capability_choice else [None]
        )
        skills_options: list[SkillsVersion | None] = (
            list(skills_versions) if Capability.SKILLS in capability_choice else [None]
        )
        for model, mcp, skills, prompt in itertools.product(
            models, mcp_options, skills_options, prompts
        ):
            skills_text = config.skills_texts[skills.version] if skills else None
            cells.append(
                Cell(
                    key=cell_key(
                        model.provider,
                        model.name,
                        capabilities,
                        mcp.version if mcp else None,
                        skills.version if skills else None,
                        prompt.name,
                        mcp.label if mcp else None,
                        model.settings.tag(),
                    ),
                    evaluation_types=(etype.name,),
                    model=model,
                    capabilities=capabilities,
                    mcp_version=mcp.version if mcp else None,
                    mcp_url=mcp.endpoint if mcp else None,
                    skills_version=skills.version if skills else None,
                    skills_sha256=sha256_text(skills_text) if skills_text is not None else None,
                    system_prompt=prompt.name,
                    system_prompt_sha256=sha256_text(prompt.text),
                    metrics=metrics,
                    skills_text=skills_text,
                    system_prompt_text=prompt.text,
                    mcp_source=mcp.origin.value if mcp else None,
                    mcp_label=mcp.label if mcp else None,
                    mcp_build=_resolved_build(config, mcp),
                    mcp_build_spec=mcp.build.spec if mcp and mcp.build else None,
                )
            )
    return cells


def _resolved_build(config: BenchmarkConfig, mcp: McpVersion | None) -> McpBuild | None:
    """The entry's build, a ``path`` made absolute (the cell runs from any directory)."""
    if mcp is None or mcp.build is None:
        return None
    if mcp.build.path is None:
        return mcp.build
    return mcp.build.model_copy(update={"path": str(build_path(config.directory, mcp.build.path))})


def _merge(existing: Cell, other: Cell) -> Cell:
    """Merge two cells with the same key: same setup, more evaluation types and metrics."""
    same_setup = replace(
        other, evaluation_types=existing.evaluation_types, metrics=existing.metrics
    )
    if same_setup != existing:  # pragma: no cover - the configuration models make keys injective
        raise AssertionError(f"two different setups share the key {existing.key!r}")
    types = existing.evaluation_types + tuple(
        name for name in other.evaluation_types if name not in existing.evaluation_types
    )
    metrics = tuple(m.value for m in Metric if m.value in existing.metrics + other.metrics)
    return replace(existing, evaluation_types=types, metrics=metrics)
