"""The task specification: one curated question with its criteria, expected actions and checks.

These pydantic models are the boundary for ``task_specs/*.yml``. Every model forbids unknown keys
so that a typo in a spec is an error, never a silently ignored field.
"""

from __future__ import annotations

import hashlib
import json
import re
from enum import StrEnum
from typing import Annotated, Any, Literal

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from datagouv_eval_pipeline.base.vocabulary import ValueOperator
from datagouv_eval_pipeline.core.tasks.chain import ChainNode, parse_chain


class _Strict(BaseModel):
    # A tolerance of .inf would accept any number, a nan value none: numbers must be finite.
    model_config = ConfigDict(
        extra="forbid", frozen=True, use_attribute_docstrings=True, allow_inf_nan=False
    )


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


class ContainsWords(_Strict):
    """Strings to look for in the answer: exactly one of ``any``, ``all`` or ``none``."""

    any: list[str] | None = Field(default=None, min_length=1)
    """At least one of these strings appears."""
    all: list[str] | None = Field(default=None, min_length=1)
    """Every one of these strings appears."""
    none: list[str] | None = Field(default=None, min_length=1)
    """None of these strings appears."""

    @model_validator(mode="after")
    def _exactly_one(self) -> ContainsWords:
        given = [name for name in ("any", "all", "none") if getattr(self, name) is not None]
        if len(given) != 1:
            found = ", ".join(given) if given else "none of them"
            raise ValueError(
                f"'contains' needs exactly one of 'any', 'all' or 'none' (found {found})"
            )
        for word in self.words():
            if not word.strip():
                raise ValueError("'contains' has an empty string: it would match every answer")
        return self

    def mode(self) -> Literal["any", "all", "none"]:
        """Which of ``any``, ``all`` or ``none`` is given."""
        if self.any is not None:
            return "any"
        return "all" if self.all is not None else "none"

    def words(self) -> list[str]:
        """The strings of the given mode."""
        return list(self.any or self.all or self.none or [])


Entity = str | list[str]
"""A named entity an answer must state: one string, or a list of alternative spellings."""


class NumberAssertion(_Strict):
    """A number the answer states about named entities.

    Either ``value`` ± ``tolerance`` or an ``expected`` value of the task by name (its value,
    tolerance and unit).
    """

    value: float | None = None
    """The number; leave it out to use ``expected``."""
    expected: str | None = Field(default=None, min_length=1)
    """The ``name`` of one of the task's ``expected_values`` (value, tolerance and unit from it)."""
    tolerance: float | None = Field(default=None, ge=0)
    """Absolute tolerance (default: the expected value's, else 0)."""
    unit: str | list[str] | None = None
    """What the number counts, or its accepted words: the word right after the number must start
    with one's stem (when a filler or nothing follows, a stem must be in its sentence). Not
    inherited from ``expected``: name the words a right answer uses (``[autorisation, ligne]``)."""
    about: list[Entity] = Field(default_factory=list)
    """Entities (place, year, …) that must each appear in the number's sentence; a list item that
    is itself a list is satisfied by any of its spellings."""

    @model_validator(mode="after")
    def _value_or_expected(self) -> NumberAssertion:
        if (self.value is None) == (self.expected is None):
            found = "both" if self.value is not None else "neither"
            raise ValueError(f"'number' needs exactly one of 'value' or 'expected' (found {found})")
        _check_entities(self.about, self.unit)
        return self


class NumericRange(_Strict):
    """Some number of the answer within ``[min, max]``, stated about named entities."""

    min: float | None = None
    """Lowest accepted value (inclusive)."""
    max: float | None = None
    """Highest accepted value (inclusive)."""
    unit: str | list[str] | None = None
    """What the number counts, or its accepted words (see ``number.unit``)."""
    about: list[Entity] = Field(default_factory=list)
    """Entities that must each appear in the number's sentence (see ``number.about``)."""

    @model_validator(mode="after")
    def _bounds(self) -> NumericRange:
        if self.min is None and self.max is None:
            raise ValueError("'numeric_range' needs 'min', 'max' or both")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"'numeric_range' has min {self.min:g} above max {self.max:g}")
        _check_entities(self.about, self.unit)
        return self


def _check_entities(about: list[Entity], unit: str | list[str] | None = None) -> None:
    units = [unit] if isinstance(unit, str) else unit
    if units is not None and (not units or any(not word.strip() for word in units)):
        raise ValueError("'unit' needs non-empty words")
    for entity in about:
        spellings = [entity] if isinstance(entity, str) else entity
        if not spellings or any(not spelling.strip() for spelling in spellings):
            raise ValueError("'about' has an empty entity: give a word the sentence must contain")


class CitesAssertion(_Strict):
    """A source the answer cites: exactly one of ``dataset``, ``dataservice`` or ``url``."""

    dataset: str | None = Field(default=None, min_length=1)
    """A dataset id: its data.gouv.fr page URL (by id, or by slug when it is an expected source)."""
    dataservice: str | None = Field(default=None, min_length=1)
    """A dataservice id: its data.gouv.fr page URL."""
    url: str | None = Field(default=None, min_length=1)
    """A URL prefix (scheme and ``www.`` ignored, case-insensitive), e.g. ``annuaire.sante.fr``."""

    @model_validator(mode="after")
    def _exactly_one(self) -> CitesAssertion:
        given = [name for name in ("dataset", "dataservice", "url") if getattr(self, name)]
        if len(given) != 1:
            found = ", ".join(given) if given else "none of them"
            raise ValueError(
                f"'cites' needs exactly one of 'dataset', 'dataservice' or 'url' (found {found})"
            )
        return self


def _contains_shorthand(value: Any) -> Any:
    """``contains: word`` and ``contains: [a, b]`` mean ``contains: {all: [...]}``."""
    if isinstance(value, str):
        return {"all": [value]}
    if isinstance(value, list):
        return {"all": value}
    return value


ASSERTION_KINDS = (
    "contains",
    "regex",
    "number",
    "numeric_range",
    "equals",
    "cites",
    "declines",
    "all",
    "any",
)
"""The keys of an ``assert`` mapping; each mapping holds exactly one."""


class Assertion(_Strict):
    """A machine-checkable rendering of a criterion: exactly one kind per mapping.

    ``all`` and ``any`` combine a list of assertions.
    """

    contains: (
        Annotated[
            ContainsWords,
            BeforeValidator(
                _contains_shorthand, json_schema_input_type=str | list[str] | ContainsWords
            ),
        ]
        | None
    ) = None
    """Strings in the answer, accent- and case-folded: one string, a list (all of them), or a
    mapping ``any`` / ``all`` / ``none``."""
    regex: str | None = Field(default=None, min_length=1)
    """A Python regular expression searched in the answer as written (use ``(?i)`` to ignore
    case)."""
    number: NumberAssertion | None = None
    """A number ± tolerance stated about named entities."""
    numeric_range: NumericRange | None = None
    """A number within bounds stated about named entities."""
    equals: str | list[str] | None = None
    """The whole answer, folded and stripped of surrounding punctuation, equals this string (or
    one of these strings)."""
    cites: CitesAssertion | None = None
    """A dataset, dataservice or URL the answer cites."""
    declines: bool | None = None
    """``true``: the answer says no suitable data exists or declines; ``false``: it does not."""
    all: list[Assertion] | None = Field(default=None, min_length=1)
    """Every assertion of the list holds."""
    any: list[Assertion] | None = Field(default=None, min_length=1)
    """At least one assertion of the list holds."""

    @model_validator(mode="after")
    def _exactly_one_kind(self) -> Assertion:
        given = self.kinds()
        if len(given) != 1:
            found = ", ".join(given) if given else "none"
            raise ValueError(
                f"an assertion needs exactly one of {', '.join(ASSERTION_KINDS)} (found {found}); "
                "combine several with 'all' or 'any'"
            )
        if self.regex is not None:
            try:
                re.compile(self.regex)
            except re.error as error:
                raise ValueError(
                    f"'regex' {self.regex!r} is not a valid regular expression: {error}"
                ) from None
        equals = [self.equals] if isinstance(self.equals, str) else self.equals
        if isinstance(equals, list) and (not equals or any(not w.strip() for w in equals)):
            raise ValueError("'equals' needs non-empty strings")
        return self

    def kinds(self) -> list[str]:
        """The kinds given in this mapping (exactly one once validated)."""
        return [kind for kind in ASSERTION_KINDS if getattr(self, kind) is not None]

    def kind(self) -> str:
        """The one kind of this assertion."""
        return self.kinds()[0]

    def expected_names(self) -> list[str]:
        """The expected-value names this assertion (and its parts) refers to."""
        if self.number is not None and self.number.expected is not None:
            return [self.number.expected]
        parts = self.all or self.any or []
        return [name for part in parts for name in part.expected_names()]


class Criterion(_Strict):
    """One property a good answer has, judged independently of the tools used."""

    model_config = ConfigDict(populate_by_name=True)

    criteria: str = Field(min_length=1)
    """The property, in plain words, as a judge reads it."""
    keywords: list[str] = Field(default_factory=list)
    """Optional words that must all appear in the answer (case- and accent-insensitive)."""
    patterns: list[str] = Field(default_factory=list)
    """Optional regular expressions that must all match the answer."""
    assertion: Assertion | None = Field(default=None, alias="assert")
    """Optional machine-checkable assertion (YAML key ``assert``): the deterministic judge decides
    the criterion from it (see docs/tasks.md); without one, only the hints above apply."""

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
    operator: ValueOperator = "exact"
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
    """Resource pre-flight checks (see docs/preflight.md for their parameters)."""

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
        # Likewise an absent assertion, so that adding the field kept every spec's hash.
        for tier in ("minimal", "optimal"):
            for criterion in data["evaluation_criteria"][tier]:
                if criterion.get("assertion") is None:
                    criterion.pop("assertion", None)
        payload = json.dumps(data, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()


Tier = Literal["minimal", "optimal"]
TIERS: tuple[Tier, Tier] = ("minimal", "optimal")
