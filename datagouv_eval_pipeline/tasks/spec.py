"""The task specification: one curated question with its criteria, expected actions and checks.

These pydantic models are the boundary for ``task_specs/*.yml``. Every model forbids unknown keys
so that a typo in a spec is an error, never a silently ignored field.
"""

from __future__ import annotations

import hashlib
import json
import re
from enum import StrEnum
from typing import Any, Literal

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from datagouv_eval_pipeline.tasks.chain import ChainNode, parse_chain


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class TaskStatus(StrEnum):
    """Lifecycle of a task; only ``active`` tasks are run."""

    DRAFT = "draft"
    ACTIVE = "active"
    DEPRECATED = "deprecated"


class TaskSource(StrEnum):
    """Where the question came from."""

    FORUM = "forum"
    SUPPORT = "support"
    INTERVIEW = "interview"
    SYNTHETIC = "synthetic"


class ExpectedBehaviour(StrEnum):
    """Whether a good agent answers the question or declines it."""

    ANSWER = "answer"
    DECLINE = "decline"


class TaskMeta(_Strict):
    """Bookkeeping about a task."""

    status: TaskStatus
    """Only ``active`` tasks are run."""
    source: TaskSource
    """Where the question came from."""
    language: str = Field(default="fr", pattern=r"^[a-z]{2}$")
    """ISO 639-1 code of the prompt's language."""
    exercises: list[str] = Field(default_factory=list)
    """Toolset features the task exercises, as ``area.feature`` (e.g. ``search.and_semantics``,
    ``tabular.filters``, ``dataservice.openapi``), so version comparisons can be read by feature."""
    difficulty: str | None = Field(default=None, min_length=1)
    """Why the task is hard, in one sentence (the trap a shallow agent falls into)."""
    paraphrases: list[str] = Field(default_factory=list)
    """Rewordings of the prompt, written by us, asking the same thing: the offline baselines must
    take the same actions on each of them (their decisions must not depend on exact wording)."""
    history: list[str] = Field(default_factory=list)
    """Dated notes on the edits that changed what is expected and why, oldest first
    (``YYYY-MM-DD: …``), e.g. a figure recomputed when the twin's catalogue grew."""

    @field_validator("history")
    @classmethod
    def _history_is_dated(cls, value: list[str]) -> list[str]:
        for note in value:
            if not re.match(r"\d{4}-\d{2}-\d{2}: \S", note):
                raise ValueError(f"history note {note[:40]!r} does not start with 'YYYY-MM-DD: '")
        return value

    @field_validator("exercises")
    @classmethod
    def _exercises_are_area_feature(cls, value: list[str]) -> list[str]:
        for feature in value:
            if not re.fullmatch(r"[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*", feature):
                raise ValueError(
                    f"exercise {feature!r} is not of the form area.feature "
                    "(lower case, e.g. search.and_semantics)"
                )
        return value


class Criterion(_Strict):
    """One property a good answer has, judged independently of the tools used."""

    criteria: str = Field(min_length=1)
    """The property, in plain words, as a judge reads it."""
    keywords: list[str] = Field(default_factory=list)
    """Optional words that must all appear in the answer (case- and accent-insensitive)."""
    patterns: list[str] = Field(default_factory=list)
    """Optional regular expressions that must all match the answer."""

    @field_validator("patterns")
    @classmethod
    def _patterns_compile(cls, value: list[str]) -> list[str]:
        for index, pattern in enumerate(value):
            try:
                re.compile(pattern)
            except re.error as error:
                raise ValueError(
                    f"pattern {index} ({pattern!r}) is not a valid regular expression: {error}"
                ) from None
        return value


class EvaluationCriteria(_Strict):
    """Criteria per tier; ``optimal`` lists only what it adds to ``minimal``."""

    minimal: list[Criterion] = Field(min_length=1)
    optimal: list[Criterion] = Field(default_factory=list)


class RequiredActionArg(_Strict):
    """An argument of an expected action: exactly one of ``strict_value`` or ``criteria``."""

    name: str = Field(min_length=1)
    """Semantic argument name (``query``, ``dataset_id``, ``resource_id``, …)."""
    strict_value: str | int | float | bool | None = None
    """An exact value, compared after normalising case, whitespace and quotes."""
    criteria: str | None = None
    """A natural-language condition on the value, for a judge."""

    @model_validator(mode="after")
    def _exactly_one(self) -> RequiredActionArg:
        has_value = self.strict_value is not None
        has_criteria = self.criteria is not None and self.criteria.strip() != ""
        if has_value == has_criteria:
            found = "both" if has_value else "neither"
            raise ValueError(
                f"argument {self.name!r} needs exactly one of 'strict_value' or 'criteria' "
                f"(found {found})"
            )
        return self


class RequiredAction(_Strict):
    """One expected semantic action instance."""

    name: str = Field(min_length=1)
    """Semantic action name, e.g. ``get.dataset.info``."""
    args: list[RequiredActionArg] = Field(default_factory=list)


class ActionChainLevel(_Strict):
    """The expected trajectory of one tier."""

    chain: str = Field(min_length=1)
    """The trajectory in the chain grammar (``>`` sequence, ``+`` parallel, parentheses)."""
    required_actions: list[RequiredAction] = Field(default_factory=list)

    @field_validator("chain")
    @classmethod
    def _parses(cls, value: str) -> str:
        parse_chain(value)
        return value

    def tree(self) -> ChainNode:
        """Return the parsed chain."""
        return parse_chain(self.chain)


class ActionChains(_Strict):
    """Expected actions per tier; ``optimal.required_actions`` lists only the additions."""

    minimal: ActionChainLevel
    optimal: ActionChainLevel | None = None


class RowFilter(_Strict):
    """A filter applied to a tabular resource when recomputing an expected value."""

    column: str = Field(min_length=1)
    operator: Literal[
        "exact", "differs", "contains", "less", "greater", "strictly_less", "strictly_greater"
    ] = "exact"
    value: str | int | float


class Recompute(_Strict):
    """How to recompute an expected value from a resource at evaluation time."""

    resource_id: str = Field(min_length=1)
    filters: list[RowFilter] = Field(default_factory=list)
    aggregate: Literal["count", "sum", "avg", "min", "max", "count_distinct"] = "count"
    column: str | None = None
    """The aggregated column; required for every aggregate except ``count``."""

    @model_validator(mode="after")
    def _column_when_needed(self) -> Recompute:
        if self.aggregate != "count" and not self.column:
            raise ValueError(f"aggregate {self.aggregate!r} needs a 'column'")
        return self


class ExpectedValue(_Strict):
    """A number a correct answer states."""

    name: str = Field(min_length=1)
    """Short identifier, e.g. ``datasets_before_2012``."""
    value: float
    unit: str | None = None
    """What the number counts, e.g. ``jeux de données``."""
    tolerance: float = Field(default=0.0, ge=0)
    """Absolute tolerance: a stated number within ``value ± tolerance`` counts."""
    recompute: Recompute | None = None
    about: list[list[str]] | None = None
    """What the number is stated about: one entry per entity (a place, a period), each the
    names an answer may call it by, e.g. ``[[Toulouse, "31555"]]``. The value check requires
    one name of every entity in the context of the sentence stating the number. Left out, the
    entities are derived from ``name`` and the ``recompute`` filters (years, département codes,
    commune names); give it when a filter holds a commune code."""

    @field_validator("about")
    @classmethod
    def _about_names(cls, about: list[list[str]] | None) -> list[list[str]] | None:
        if about is None:
            return None
        for position, names in enumerate(about):
            if not names:
                raise ValueError(f"about[{position}] must list at least one name")
            for name in names:
                if not any(char.isalnum() for char in name):
                    raise ValueError(
                        f"about[{position}] has the name {name!r}: expected a word or a code"
                    )
        return about


class SourceType(StrEnum):
    """Catalog object types."""

    DATASET = "dataset"
    RESOURCE = "resource"
    DATASERVICE = "dataservice"
    ORGANIZATION = "organization"


class ExpectedSource(_Strict):
    """A catalog object whose data.gouv.fr URL a good answer cites."""

    type: Literal[SourceType.DATASET, SourceType.DATASERVICE]
    id: str = Field(min_length=1)
    slug: str | None = None
    """The object's slug on data.gouv.fr. Leave it out: the scoring stage fills it from the
    catalog record of ``id`` (the twin's or the live API's), so a page URL by slug counts."""


class CheckFn(StrEnum):
    """Resource pre-flight checks (see docs/validation.md for their parameters)."""

    SAME_TITLE_DESCRIPTION = "same_title_description"
    DOWNLOAD_URL_REACHABLE = "download_url_reachable"
    TABULAR_API_AVAILABLE = "tabular_api_available"
    TABULAR_API_UNAVAILABLE = "tabular_api_unavailable"
    UPDATE_DATE_MORE_RECENT_THAN = "update_date_more_recent_than"
    SCHEMA_UNCHANGED = "schema_unchanged"
    ROW_COUNT_WITHIN = "row_count_within"
    EXPECTED_VALUES_HOLD = "expected_values_hold"


class ResourceCheck(_Strict):
    """One validation check on a catalog object."""

    fn: CheckFn
    params: dict[str, Any] = Field(default_factory=dict)


class ResourceRef(_Strict):
    """A catalog object the task relies on, with its pre-flight checks."""

    type: SourceType
    id: str = Field(min_length=1)
    dataset_id: str | None = None
    """Parent dataset; required when ``type`` is ``resource``."""
    checks: list[ResourceCheck] = Field(default_factory=list)

    @model_validator(mode="after")
    def _resource_has_dataset(self) -> ResourceRef:
        if self.type == SourceType.RESOURCE and not self.dataset_id:
            raise ValueError("a resource needs its parent 'dataset_id'")
        return self


class ToolsetConstraints(_Strict):
    """PEP 440 specifiers for the toolset versions a task makes sense on."""

    mcp: str | None = None
    """E.g. ``>=0.2.15`` for a task that needs the dataservice tools."""

    @field_validator("mcp")
    @classmethod
    def _valid_specifier(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                SpecifierSet(value)
            except InvalidSpecifier as error:
                raise ValueError(
                    f"{value!r} is not a valid PEP 440 version specifier (e.g. '>=0.2.15')"
                ) from error
        return value


class TaskSpec(_Strict):
    """A curated question and everything needed to score an agent's attempt at it."""

    task_id: str = Field(pattern=r"^task_\d{4}$")
    """Unique id, ``task_NNNN``."""
    version: int = Field(ge=1)
    """Bumped on every edit that changes what is expected."""
    task_name: str = Field(min_length=1)
    meta: TaskMeta
    prompt: str
    """The single-turn user message."""
    expected_behaviour: ExpectedBehaviour = ExpectedBehaviour.ANSWER
    evaluation_criteria: EvaluationCriteria
    action_chain: ActionChains
    expected_values: list[ExpectedValue] = Field(default_factory=list)
    expected_sources: list[ExpectedSource] = Field(default_factory=list)
    resources: list[ResourceRef] = Field(default_factory=list)
    toolset_constraints: ToolsetConstraints = Field(default_factory=ToolsetConstraints)

    @field_validator("prompt")
    @classmethod
    def _prompt_not_empty(cls, value: str) -> str:
        stripped = value.strip()
        if not stripped:
            raise ValueError("the prompt is empty: write the user's question")
        return stripped

    def criteria(self, tier: Tier) -> list[Criterion]:
        """Return the criteria of a tier (optimal = minimal + additions)."""
        minimal = list(self.evaluation_criteria.minimal)
        return minimal if tier == "minimal" else minimal + list(self.evaluation_criteria.optimal)

    def chain(self, tier: Tier) -> ActionChainLevel:
        """Return the chain of a tier, with optimal required actions = minimal + additions."""
        minimal = self.action_chain.minimal
        optimal = self.action_chain.optimal
        if tier == "minimal" or optimal is None:
            return minimal
        return ActionChainLevel(
            chain=optimal.chain,
            required_actions=list(minimal.required_actions) + list(optimal.required_actions),
        )

    def spec_hash(self) -> str:
        """Return a stable sha256 of the spec's content (provenance for every result row)."""
        data = self.model_dump(mode="json")
        # An unset slug is left out so that adding the field kept every existing spec's hash.
        for source in data["expected_sources"]:
            if source.get("slug") is None:
                source.pop("slug", None)
        payload = json.dumps(data, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()


Tier = Literal["minimal", "optimal"]
TIERS: tuple[Tier, Tier] = ("minimal", "optimal")
