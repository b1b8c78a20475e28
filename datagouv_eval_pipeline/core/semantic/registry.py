"""The versioned action registry: which literal calls perform which semantic action.

``actions.yml`` (package data) is validated by the pydantic models below and compiled once into an
:class:`ActionRegistry`, which answers the mapper's questions quickly: which actions an MCP tool
performs at a server version (with its arguments), which actions a URL, a ``datagouv`` CLI command
or a ``datagouv`` Python client call performs, and which tools of a version no action covers.

Versions are PEP 440. A label that is not (``"local"``, ``""``) raises :class:`UnknownVersionError`
instead of silently matching nothing.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qsl, unquote, urlsplit

import yaml
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from datagouv_eval_pipeline.base import vocabulary
from datagouv_eval_pipeline.base.yaml_loading import safe_load
from datagouv_eval_pipeline.core.semantic.code_calls import SENTINEL, ClientSpec

SEMANTIC_ARGUMENTS: tuple[str, ...] = vocabulary.ARGUMENT_NAMES
"""The semantic argument vocabulary shared with the task specs."""

TABULAR_FILTER_OPERATORS: frozenset[str] = frozenset(vocabulary.TABULAR_OPERATORS)
"""Tabular API row-filter operators (``<column>__<operator>=<value>``); sort is not a filter."""

CLIENT_CLASSES: frozenset[str] = frozenset(
    {"Client", "Dataset", "Resource", "Organization", "Topic"}
)

_ACTION_NAME = re.compile(r"^(search|get)\.[a-z_]+(\.[a-z_]+)?$")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)(?::(path|lang))?\}")
_DEFAULT_PATH = "actions.yml"


class RegistryError(ValueError):
    """The registry file is invalid; the message names the file, the field path and the problem."""


class UnknownVersionError(ValueError):
    """A version label is not a PEP 440 version, so no specifier can be evaluated against it."""

    def __init__(self, label: str, what: str = "MCP server version") -> None:
        self.label = label
        self.what = what
        super().__init__(
            f"{what} {label!r} is not a PEP 440 version; expected something like '0.2.26' "
            "(a leading 'v' and local suffixes such as '0.2.26+dev' are accepted). "
            "Pin the real version in the benchmark configuration instead of a label."
        )


class UncoveredVersionError(UnknownVersionError):
    """An MCP server version the registry does not explicitly cover (``mcp_coverage``).

    Open-ended specifiers (``>=0.2.15``) would otherwise map a never-seen version with the
    newest tool set, silently.
    """

    def __init__(self, label: str, coverage: Sequence[str]) -> None:
        ValueError.__init__(
            self,
            f"MCP server version {label!r} is not covered by the action registry (it covers "
            f"{' or '.join(repr(c) for c in coverage)}): add its tool set to "
            "semantic/actions.yml and widen `mcp_coverage` after checking it",
        )
        self.label = label
        self.what = "MCP server version"
        self.coverage = tuple(coverage)


def parse_version(label: str, what: str = "MCP server version") -> Version:
    """Parse a version label strictly.

    Args:
        label: The label, e.g. ``"0.2.26"`` or ``"v0.2.26"``.
        what: What the label names, used in the error message.

    Raises:
        UnknownVersionError: When the label is not a PEP 440 version.
    """
    return _parse_version_cached(label, what)


@lru_cache(maxsize=256)
def _parse_version_cached(label: str, what: str) -> Version:
    try:
        return Version(label.strip())
    except (InvalidVersion, TypeError, AttributeError):
        raise UnknownVersionError(label, what) from None


# ---------------------------------------------------------------------------------------------
# File models (the boundary): strict, every unknown key is an error.


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _check_specifier(value: str) -> str:
    try:
        SpecifierSet(value)
    except InvalidSpecifier:
        raise ValueError(
            f"{value!r} is not a PEP 440 version specifier (e.g. '>=0.2.6' or '>=0.2.0,<0.2.20')"
        ) from None
    return value


class ToolCondition(_Strict):
    """When a conditional MCP tool entry applies, tested on the call's literal arguments."""

    at_most: dict[str, float] = Field(default_factory=dict)
    """Each argument must be present and numeric, at most this value."""
    if_present_at_most: dict[str, float] = Field(default_factory=dict)
    """Each argument, when present, must be numeric and at most this value."""
    absent: list[str] = Field(default_factory=list)
    """Each argument must be missing, null or empty."""

    @model_validator(mode="after")
    def _not_empty(self) -> ToolCondition:
        if not (self.at_most or self.if_present_at_most or self.absent):
            raise ValueError(
                "a condition needs at least one of at_most, if_present_at_most, absent"
            )
        return self

    def holds(self, arguments: Mapping[str, Any]) -> bool:
        """Whether the condition holds for these literal arguments."""
        for name, limit in self.at_most.items():
            number = _as_number(arguments.get(name))
            if number is None or number > limit:
                return False
        for name, limit in self.if_present_at_most.items():
            value = arguments.get(name)
            if _is_missing(value):
                continue
            number = _as_number(value)
            if number is None or number > limit:
                return False
        return all(_is_missing(arguments.get(name)) for name in self.absent)

    def describe(self) -> str:
        """A short human description, used in mapping reasons."""
        parts = [f"{name} <= {_fmt(limit)}" for name, limit in self.at_most.items()]
        parts += [
            f"{name} absent or <= {_fmt(limit)}" for name, limit in self.if_present_at_most.items()
        ]
        if self.absent:
            parts.append("no " + "/".join(self.absent))
        return ", ".join(parts)


class ToolEntry(_Strict):
    """An MCP tool, optionally conditional on its arguments."""

    name: str = Field(min_length=1)
    when: ToolCondition | None = None


class McpBlock(_Strict):
    """MCP tools performing an action for the server versions in ``versions``."""

    versions: str
    tools: list[str | ToolEntry] = Field(min_length=1)

    _check = field_validator("versions")(_check_specifier)


class CliCommand(_Strict):
    """A ``datagouv`` subcommand and the semantic names of its positional arguments."""

    command: str = Field(min_length=1)
    args: list[str | None] = Field(default_factory=list)


class CliBlock(_Strict):
    """CLI commands performing an action for the CLI versions in ``versions``."""

    versions: str
    commands: list[CliCommand] = Field(min_length=1)

    _check = field_validator("versions")(_check_specifier)


class ApiEndpoint(_Strict):
    """An HTTP endpoint on one host family."""

    family: str
    method: str = "GET"
    path: str = Field(pattern=r"^/")
    page: bool = False
    """A human web page (not an API): credited with lower confidence, category web_page_fetch."""
    confidence: float | None = Field(default=None, gt=0, le=1)


class ClientCall(_Strict):
    """A ``datagouv`` Python client call: ``Class`` (constructor) or ``Class.member``."""

    call: str = Field(min_length=1)
    kind: Literal["constructor", "method", "property", "download_url"]
    args: list[str | None] = Field(default_factory=list)
    """Constructors and factories: positional argument names. Members: object ids carried.

    ``download_url`` marks an attribute holding a file URL: reading it does nothing, fetching it
    (``requests.get(res.url)``, ``pd.read_csv(res.url)``) performs the action.
    """


class ClientBlock(_Strict):
    """Python client calls performing an action for the client versions in ``versions``."""

    versions: str
    calls: list[ClientCall] = Field(min_length=1)

    _check = field_validator("versions")(_check_specifier)


class ActionDef(_Strict):
    """One semantic action and every way to perform it."""

    description: str = Field(min_length=1)
    mcp: list[McpBlock] = Field(default_factory=list)
    cli: list[CliBlock] = Field(default_factory=list)
    api: list[ApiEndpoint] = Field(default_factory=list)
    python_client: list[ClientBlock] = Field(default_factory=list)


class ArgumentNames(_Strict):
    """What one semantic argument is called in each framework."""

    mcp: list[str] = Field(default_factory=list)
    api: dict[str, list[str]] = Field(default_factory=dict)
    cli: list[str] = Field(default_factory=list)
    python_client: list[str] = Field(default_factory=list)


class CapabilityTools(_Strict):
    """Literal tool names of one non-MCP capability and the argument holding its input."""

    tools: list[str] = Field(min_length=1)
    argument_keys: list[str] = Field(min_length=1)


class CapabilityToolSets(_Strict):
    """The four non-MCP capability kinds the mapper understands."""

    shell: CapabilityTools
    python: CapabilityTools
    web_search: CapabilityTools
    web_fetch: CapabilityTools


class KnownUnmappedTool(_Strict):
    """An MCP tool that deliberately maps to no action."""

    name: str = Field(min_length=1)
    versions: str
    reason: str = Field(min_length=1)

    _check = field_validator("versions")(_check_specifier)


class KnownUnmappedCommand(_Strict):
    """A CLI command that deliberately maps to no action."""

    command: str = Field(min_length=1)
    reason: str = Field(min_length=1)


class KnownUnmapped(_Strict):
    """Calls known to perform no semantic action."""

    mcp: list[KnownUnmappedTool] = Field(default_factory=list)
    cli: list[KnownUnmappedCommand] = Field(default_factory=list)


class RegistryFile(_Strict):
    """The whole ``actions.yml``."""

    schema_version: Literal[1]
    registry_version: str = Field(min_length=1)
    hosts: dict[str, list[str]]
    capability_tools: CapabilityToolSets
    cli_executables: list[str] = Field(min_length=1)
    arguments: dict[str, ArgumentNames]
    known_unmapped: KnownUnmapped = Field(default_factory=KnownUnmapped)
    mcp_coverage: list[str] = Field(min_length=1)
    """PEP 440 specifiers of the MCP server versions whose tool sets were checked against the
    registry; any other version is an error, never the newest tool set by default."""
    actions: dict[str, ActionDef] = Field(min_length=1)

    @field_validator("mcp_coverage")
    @classmethod
    def _coverage_parses(cls, value: list[str]) -> list[str]:
        for item in value:
            try:
                SpecifierSet(item)
            except InvalidSpecifier:
                raise ValueError(f"{item!r} is not a PEP 440 version specifier") from None
        return value

    @model_validator(mode="after")
    def _cross_checks(self) -> RegistryFile:
        errors: list[str] = []
        unknown_args = set(self.arguments) - set(SEMANTIC_ARGUMENTS)
        if unknown_args:
            errors.append(
                f"arguments: unknown semantic argument(s) {sorted(unknown_args)}; "
                f"expected names among {list(SEMANTIC_ARGUMENTS)}"
            )
        if "any" in self.hosts:
            errors.append("hosts: 'any' is reserved (it means every host) and cannot be declared")
        for family, names in self.arguments.items():
            for api_family in names.api:
                if api_family not in self.hosts:
                    errors.append(f"arguments.{family}.api: unknown host family {api_family!r}")
        allowed_args = set(SEMANTIC_ARGUMENTS)
        for action, definition in self.actions.items():
            where = f"actions.{action}"
            if not _ACTION_NAME.match(action):
                errors.append(f"{where}: name must look like 'verb.object[.facet]' (search|get)")
            for index, endpoint in enumerate(definition.api):
                loc = f"{where}.api[{index}]"
                if endpoint.family != "any" and endpoint.family not in self.hosts:
                    errors.append(
                        f"{loc}.family: unknown host family {endpoint.family!r}; "
                        f"expected one of {sorted(self.hosts)} or 'any'"
                    )
                for name, _kind in _PLACEHOLDER.findall(endpoint.path):
                    if not name.startswith("_") and name not in allowed_args:
                        errors.append(
                            f"{loc}.path: placeholder {{{name}}} is neither a semantic argument "
                            "nor '_'-prefixed"
                        )
            for b_index, block in enumerate(definition.cli):
                for c_index, command in enumerate(block.commands):
                    for arg in command.args:
                        if arg is not None and arg not in allowed_args:
                            errors.append(
                                f"{where}.cli[{b_index}].commands[{c_index}].args: "
                                f"{arg!r} is not a semantic argument"
                            )
            for b_index, client_block in enumerate(definition.python_client):
                for c_index, call in enumerate(client_block.calls):
                    loc = f"{where}.python_client[{b_index}].calls[{c_index}]"
                    owner = call.call.split(".", 1)[0]
                    if owner not in CLIENT_CLASSES:
                        errors.append(
                            f"{loc}.call: unknown client class {owner!r}; "
                            f"expected one of {sorted(CLIENT_CLASSES)}"
                        )
                    if (call.kind == "constructor") == ("." in call.call):
                        errors.append(
                            f"{loc}: kind {call.kind!r} does not fit {call.call!r} "
                            "(constructors are 'Class', members are 'Class.member')"
                        )
                    for arg in call.args:
                        if arg is not None and arg not in allowed_args:
                            errors.append(f"{loc}.args: {arg!r} is not a semantic argument")
        shell_like = {
            tool
            for kind in ("shell", "python", "web_search", "web_fetch")
            for tool in getattr(self.capability_tools, kind).tools
        }
        for action, definition in self.actions.items():
            for mcp_block in definition.mcp:
                for tool in mcp_block.tools:
                    name = tool if isinstance(tool, str) else tool.name
                    if name in shell_like:
                        errors.append(
                            f"actions.{action}.mcp: tool {name!r} is also a capability tool name"
                        )
        if errors:
            raise ValueError("; ".join(errors))
        return self


# ---------------------------------------------------------------------------------------------
# Compiled registry.


@dataclass(frozen=True)
class McpResolution:
    """What one MCP call means at one server version.

    Attributes:
        tool: The literal tool name.
        actions: Semantic actions, in registry order (empty when none applies).
        known: Whether the registry knows this tool at this version (mapped or known-unmapped).
        reason: Why these actions (or none).
    """

    tool: str
    actions: tuple[str, ...]
    known: bool
    reason: str


@dataclass(frozen=True)
class UnmappedTool:
    """A tool that no action maps at a version.

    Attributes:
        name: The tool name.
        known: True when the registry deliberately maps it to nothing (e.g. a write tool).
        reason: Why it is unmapped.
    """

    name: str
    known: bool
    reason: str


@dataclass(frozen=True)
class UrlAction:
    """One action performed by a URL request.

    Attributes:
        action: The semantic action.
        args: Semantic arguments from the path and the query string.
        confidence: Confidence of the match (lowered when parts of the URL were unresolved).
        page: Whether the URL is a human web page rather than an API endpoint.
        pattern: The matched endpoint pattern, e.g. ``main GET /api/1/datasets/{dataset_id}/``.
    """

    action: str
    args: dict[str, Any]
    confidence: float
    page: bool
    pattern: str


@dataclass(frozen=True)
class UrlMatch:
    """The result of matching one URL against the registry's endpoints.

    Attributes:
        url: The URL as given.
        family: Host family (``main``, ``tabular``, ...), ``None`` for a host outside the catalog.
        actions: Matched actions (empty when the host is known but no endpoint matched).
        partial: Whether some part of the URL was unresolved (came from a value unknown statically).
    """

    url: str
    family: str | None
    actions: tuple[UrlAction, ...]
    partial: bool

    @property
    def catalog(self) -> bool:
        """Whether the host belongs to data.gouv.fr."""
        return self.family is not None


@dataclass(frozen=True)
class CliMatch:
    """What one ``datagouv`` CLI invocation means.

    Attributes:
        command: The matched subcommand (``"dataset get"``), or ``""``.
        actions: Semantic actions with their arguments, in registry order.
        known_no_action: Reason when the command deliberately maps to nothing.
        arity: Positional arguments the command takes after its words, as the registry lists
            them (None for a known command without actions).
    """

    command: str
    actions: tuple[tuple[str, dict[str, Any]], ...]
    known_no_action: str = ""
    arity: int | None = None


@dataclass(frozen=True)
class _Endpoint:
    family: str
    method: str
    template: str
    regex: re.Pattern[str]
    specificity: tuple[int, int]
    action: str
    page: bool
    confidence: float | None


_NO_NAMES: Mapping[str, str] = {}

_Limits = tuple[tuple[str, float], ...]
_McpPlan = tuple[tuple[tuple[_Limits, _Limits, tuple[str, ...], McpResolution], ...], McpResolution]
"""Conditional entries of one tool at one version (their ToolCondition as tuples), each with its
resolution, then the resolution when none holds."""
_MCP_PLAN_CACHE_SIZE = 4096


@dataclass
class _McpEntry:
    action: str
    when: ToolCondition | None
    spec: SpecifierSet


def _compile_path(template: str) -> tuple[re.Pattern[str], tuple[int, int]]:
    body = template.rstrip("/") or "/"
    pieces: list[str] = []
    literal = 0
    placeholders = 0
    last = 0
    for found in _PLACEHOLDER.finditer(body):
        text = body[last : found.start()]
        pieces.append(re.escape(text))
        literal += len(text.replace("/", ""))
        name, kind = found.group(1), found.group(2)
        if kind == "path":
            pieces.append(f"(?P<{name}>.*)")
            placeholders += 2  # a rest-of-path wildcard is the least specific
        elif kind == "lang":
            pieces.append(f"(?P<{name}>[a-z]{{2}})")
            placeholders += 1
        else:
            pieces.append(f"(?P<{name}>[^/]+)")
            placeholders += 1
        last = found.end()
    tail = body[last:]
    pieces.append(re.escape(tail))
    literal += len(tail.replace("/", ""))
    pattern = "".join(pieces)
    if body != "/":
        pattern += "/?"
    return re.compile(pattern), (literal, -placeholders)


class ActionRegistry:
    """The compiled, read-only action registry.

    Build it with :func:`load_registry`. All lookups are cached, so one registry can map many
    traces cheaply.
    """

    def __init__(
        self, data: RegistryFile, source: str, host_aliases: Mapping[str, str] | None = None
    ) -> None:
        """Compile a validated registry file.

        Args:
            data: The validated file content.
            source: Where it came from (for messages).
            host_aliases: Extra ``host[:port]`` → host family entries (e.g. a local server).
        """
        self.data = data
        self.source = source
        self.version: str = data.registry_version
        self.action_names: frozenset[str] = frozenset(data.actions)
        self.mcp_coverage: tuple[str, ...] = tuple(data.mcp_coverage)
        self._coverage = tuple(SpecifierSet(item) for item in data.mcp_coverage)
        self._host_family: dict[str, str] = {}
        for family, hosts in data.hosts.items():
            for host in hosts:
                self._host_family[host.lower()] = family
        self._aliases: dict[str, str] = {}
        for host, family in (host_aliases or {}).items():
            if family not in data.hosts:
                raise RegistryError(
                    f"host alias {host!r}: unknown host family {family!r}; "
                    f"expected one of {sorted(data.hosts)}"
                )
            self._aliases[host.lower()] = family
        self._mcp_entries: dict[str, list[_McpEntry]] = {}
        self._mcp_known_unmapped: dict[str, list[tuple[SpecifierSet, str]]] = {}
        self._cli_entries: list[tuple[tuple[str, ...], SpecifierSet, str, list[str | None]]] = []
        self._cli_known: dict[tuple[str, ...], str] = {}
        self._endpoints: dict[str, list[_Endpoint]] = {}
        self._client_entries: dict[str, list[tuple[SpecifierSet, str, ClientCall]]] = {}
        for action, definition in data.actions.items():
            for block in definition.mcp:
                spec = SpecifierSet(block.versions)
                for tool in block.tools:
                    entry = ToolEntry(name=tool) if isinstance(tool, str) else tool
                    self._mcp_entries.setdefault(entry.name, []).append(
                        _McpEntry(action, entry.when, spec)
                    )
            for cli_block in definition.cli:
                spec = SpecifierSet(cli_block.versions)
                for command in cli_block.commands:
                    words = tuple(command.command.split())
                    self._cli_entries.append((words, spec, action, list(command.args)))
            for endpoint in definition.api:
                regex, specificity = _compile_path(endpoint.path)
                self._endpoints.setdefault(endpoint.family, []).append(
                    _Endpoint(
                        family=endpoint.family,
                        method=endpoint.method.upper(),
                        template=endpoint.path,
                        regex=regex,
                        specificity=specificity,
                        action=action,
                        page=endpoint.page,
                        confidence=endpoint.confidence,
                    )
                )
            for client_block in definition.python_client:
                spec = SpecifierSet(client_block.versions)
                for call in client_block.calls:
                    self._client_entries.setdefault(call.call, []).append((spec, action, call))
        for family_endpoints in self._endpoints.values():
            # Most specific first; stable sort keeps file order among equals.
            family_endpoints.sort(key=lambda e: e.specificity, reverse=True)
        for known in data.known_unmapped.mcp:
            self._mcp_known_unmapped.setdefault(known.name, []).append(
                (SpecifierSet(known.versions), known.reason)
            )
        for known_cli in data.known_unmapped.cli:
            self._cli_known[tuple(known_cli.command.split())] = known_cli.reason
        self._mcp_index_cache: dict[str, dict[str, list[tuple[str, ToolCondition | None]]]] = {}
        self._mcp_plans: dict[tuple[str, str | None], _McpPlan] = {}
        self._arg_names: dict[str, dict[str, str]] = self._build_arg_names(data)
        caps = data.capability_tools
        self.shell_tools: frozenset[str] = frozenset(caps.shell.tools)
        self.python_tools: frozenset[str] = frozenset(caps.python.tools)
        self.web_search_tools: frozenset[str] = frozenset(caps.web_search.tools)
        self.web_fetch_tools: frozenset[str] = frozenset(caps.web_fetch.tools)
        self.cli_executables: frozenset[str] = frozenset(data.cli_executables)
        self._all_mcp_tools = frozenset(self._mcp_entries) | frozenset(self._mcp_known_unmapped)

    # -- construction helpers ------------------------------------------------------------------

    @staticmethod
    def _build_arg_names(data: RegistryFile) -> dict[str, dict[str, str]]:
        # framework key ("mcp", "api:main", ...) -> literal name -> semantic name
        table: dict[str, dict[str, str]] = {}
        for semantic, names in data.arguments.items():
            if semantic == "filters":
                continue  # a composite, assembled by code
            for literal in names.mcp:
                table.setdefault("mcp", {})[literal] = semantic
            for family, literals in names.api.items():
                for literal in literals:
                    if not literal.startswith("{"):
                        table.setdefault(f"api:{family}", {})[literal] = semantic
            for literal in names.python_client:
                table.setdefault("python_client", {}).setdefault(literal, semantic)
        return table

    def with_host_aliases(self, aliases: Mapping[str, str]) -> ActionRegistry:
        """Return a registry that also treats these hosts as catalog hosts.

        Args:
            aliases: ``host`` or ``host:port`` → host family, e.g.
                ``{"127.0.0.1:8765": "main"}`` for a local server.
        """
        merged = {**self._aliases, **aliases}
        return ActionRegistry(self.data, self.source, merged)

    # -- vocabulary ------------------------------------------------------------------------------

    def description(self, action: str) -> str:
        """The description of an action.

        Raises:
            KeyError: For an unknown action.
        """
        return self.data.actions[action].description

    def _check_action(self, action: str) -> None:
        if action not in self.data.actions:
            known = sorted(self.action_names)
            raise KeyError(f"unknown semantic action {action!r}; known: {known}")

    # -- MCP -------------------------------------------------------------------------------------

    def _mcp_index(self, version: str | None) -> dict[str, list[tuple[str, ToolCondition | None]]]:
        key = "*" if version is None else version
        cached = self._mcp_index_cache.get(key)
        if cached is not None:
            return cached
        parsed = None if version is None else self.check_mcp_version(version)
        index: dict[str, list[tuple[str, ToolCondition | None]]] = {}
        for tool, entries in self._mcp_entries.items():
            for entry in entries:
                if parsed is None or entry.spec.contains(parsed, prereleases=True):
                    pair = (entry.action, entry.when)
                    if pair not in index.setdefault(tool, []):
                        index[tool].append(pair)
        self._mcp_index_cache[key] = index
        return index

    def check_mcp_version(self, version: str) -> Version:
        """Parse an MCP server version and check the registry covers it.

        Raises:
            UnknownVersionError: When ``version`` is not PEP 440.
            UncoveredVersionError: When no ``mcp_coverage`` specifier contains it.
        """
        parsed = parse_version(version)
        if not any(spec.contains(parsed, prereleases=True) for spec in self._coverage):
            raise UncoveredVersionError(version, self.mcp_coverage)
        return parsed

    def mcp_tools(self, action: str, version: str) -> tuple[str, ...]:
        """MCP tools that can perform ``action`` at server ``version`` (conditional ones included).

        Raises:
            UnknownVersionError: When ``version`` is not PEP 440.
            KeyError: For an unknown action.
        """
        self._check_action(action)
        index = self._mcp_index(version)
        return tuple(tool for tool, pairs in index.items() if any(a == action for a, _ in pairs))

    def mcp_tool_names(self, version: str | None = None) -> frozenset[str]:
        """Every MCP tool the registry knows (mapped or known-unmapped), at ``version`` or ever."""
        if version is None:
            return self._all_mcp_tools
        parsed = parse_version(version)
        known = set(self._mcp_index(version))
        for tool, specs in self._mcp_known_unmapped.items():
            if any(spec.contains(parsed, prereleases=True) for spec, _ in specs):
                known.add(tool)
        return frozenset(known)

    def resolve_mcp_call(
        self, tool: str, version: str | None, arguments: Mapping[str, Any] | None = None
    ) -> McpResolution:
        """Decide the actions of one MCP call.

        Args:
            tool: The literal tool name.
            version: The server version; ``None`` matches every version's entries.
            arguments: The call's literal arguments (used by conditional entries).

        Raises:
            UnknownVersionError: When ``version`` is not PEP 440.
        """
        key = (tool, version)
        plan = self._mcp_plans.get(key)
        if plan is None:
            plan = self._mcp_plan(tool, version)  # raises for a bad version: nothing cached
            if len(self._mcp_plans) >= _MCP_PLAN_CACHE_SIZE:
                self._mcp_plans.clear()  # unknown tool names are unbounded; stay bounded
            self._mcp_plans[key] = plan
        conditional, fallback = plan
        if conditional:
            args = arguments or {}
            for at_most, if_present_at_most, absent, resolution in conditional:
                if _condition_holds(at_most, if_present_at_most, absent, args):
                    return resolution
        return fallback

    def _mcp_plan(self, tool: str, version: str | None) -> _McpPlan:
        """Everything about ``tool`` at ``version`` that does not depend on the arguments.

        Conditional entries, in order, each with its resolution, then the resolution when none
        holds. Resolutions are immutable, so one instance serves every call.
        """
        at = "any version" if version is None else version
        pairs = self._mcp_index(version).get(tool, [])
        if pairs:
            conditional = tuple(
                (
                    tuple(when.at_most.items()),
                    tuple(when.if_present_at_most.items()),
                    tuple(when.absent),
                    McpResolution(
                        tool, (action,), True, f"MCP {tool} at {at}: {when.describe()} → {action}"
                    ),
                )
                for action, when in pairs
                if when is not None
            )
            plain = tuple(action for action, when in pairs if when is None)
            if plain:
                fallback = McpResolution(
                    tool, plain, True, f"MCP {tool} at {at} → {', '.join(plain)}"
                )
            else:
                fallback = McpResolution(tool, (), True, f"MCP {tool} at {at}: no condition held")
            return conditional, fallback
        known_reason = self._known_unmapped_mcp(tool, version)
        if known_reason is not None:
            return (), McpResolution(tool, (), True, f"MCP {tool} at {at}: {known_reason}")
        if tool in self._mcp_entries:
            ranges = sorted({str(entry.spec) for entry in self._mcp_entries[tool]})
            reason = f"MCP {tool} is not mapped at {at} (mapped for {', '.join(ranges)})"
            return (), McpResolution(tool, (), False, reason)
        return (), McpResolution(tool, (), False, f"MCP tool {tool!r} is not in the registry")

    def actions_for_mcp_tool(
        self, tool: str, version: str, arguments: Mapping[str, Any] | None = None
    ) -> tuple[str, ...]:
        """The semantic actions one MCP call performs (exactly one for ``query_resource_data``).

        Raises:
            UnknownVersionError: When ``version`` is not PEP 440.
        """
        return self.resolve_mcp_call(tool, version, arguments).actions

    def _known_unmapped_mcp(self, tool: str, version: str | None) -> str | None:
        for spec, reason in self._mcp_known_unmapped.get(tool, []):
            if version is None or spec.contains(parse_version(version), prereleases=True):
                return reason
        return None

    def unmapped_tools(self, tool_names: Iterable[str], version: str) -> list[UnmappedTool]:
        """Tools of a server's tool list that no action maps at ``version``, in input order.

        Raises:
            UnknownVersionError: When ``version`` is not PEP 440.
        """
        index = self._mcp_index(version)
        result: list[UnmappedTool] = []
        for tool in tool_names:
            if tool in index:
                continue
            known_reason = self._known_unmapped_mcp(tool, version)
            if known_reason is not None:
                result.append(UnmappedTool(tool, True, known_reason))
            elif tool in self._mcp_entries:
                ranges = sorted({str(entry.spec) for entry in self._mcp_entries[tool]})
                result.append(
                    UnmappedTool(
                        tool, False, f"mapped only for versions {', '.join(ranges)}, not {version}"
                    )
                )
            else:
                result.append(UnmappedTool(tool, False, f"no action maps {tool!r} at {version}"))
        return result

    # -- arguments -------------------------------------------------------------------------------

    def semantic_args(
        self, framework: str, arguments: Mapping[str, Any], family: str | None = None
    ) -> dict[str, Any]:
        """Rename literal arguments to semantic names, dropping the others and empty values.

        Args:
            framework: ``"mcp"``, ``"api"`` or ``"python_client"``.
            arguments: Literal arguments.
            family: Host family, for ``"api"``.

        MCP ``filter_column``/``filter_operator``/``filter_value`` become ``filters``
        (``column__operator=value``). Strings are stripped of surrounding whitespace.
        """
        key = f"api:{family}" if framework == "api" else framework
        names = self._arg_names.get(key, _NO_NAMES)
        result: dict[str, Any] = {}
        for literal, value in arguments.items():
            semantic = names.get(literal)
            if semantic is None or value is None or semantic in result:
                continue
            if isinstance(value, str):  # blank_to_none, inlined (a hot loop)
                value = value.strip()
                if not value:
                    continue
            result[semantic] = value
        if framework == "mcp" and "filter_column" in arguments:
            column = blank_to_none(arguments.get("filter_column"))
            value = blank_to_none(arguments.get("filter_value"))
            if column is not None and value is not None:
                operator = blank_to_none(arguments.get("filter_operator")) or "exact"
                result["filters"] = f"{column}__{str(operator).lower()}={value}"
        return result

    # -- URLs ------------------------------------------------------------------------------------

    def host_family(self, netloc: str) -> str | None:
        """The host family of ``host`` or ``host:port`` (``None`` outside the catalog)."""
        host = netloc.rsplit("@", 1)[-1].lower()
        if host in self._aliases:
            return self._aliases[host]
        bare = host.split(":", 1)[0] if not host.startswith("[") else host
        return self._aliases.get(bare) or self._host_family.get(bare)

    def match_url(
        self,
        url: str,
        method: str = "GET",
        extra_params: Iterable[tuple[str, str]] = (),
    ) -> UrlMatch:
        """Match a URL (and extra query parameters) against the registry's endpoints.

        Args:
            url: Absolute URL; a missing scheme is tolerated. May contain the unresolved marker.
            method: HTTP method.
            extra_params: Query parameters given separately (``params=`` / ``curl -G -d``).
        """
        return self._match_url(url, method.upper(), tuple(extra_params))

    @lru_cache(maxsize=2048)  # noqa: B019 - the registry lives as long as the process
    def _match_url(
        self, url: str, method: str, extra_params: tuple[tuple[str, str], ...]
    ) -> UrlMatch:
        text = url.strip()
        if "://" not in text:
            text = "https://" + text.lstrip("/")
        parts = urlsplit(text)
        family = self.host_family(parts.netloc)
        partial = SENTINEL in url or any(SENTINEL in k + v for k, v in extra_params)
        path = re.sub(r"/{2,}", "/", unquote(parts.path) or "/")
        candidates: list[_Endpoint] = []
        if family is not None:
            candidates = self._endpoints.get(family, [])
        elif SENTINEL not in parts.netloc:
            candidates = self._endpoints.get("any", [])
        found: list[tuple[_Endpoint, dict[str, str]]] = []
        best: tuple[int, int] | None = None
        best_template = ""
        for endpoint in candidates:
            if endpoint.method != method:
                continue
            if best is not None and endpoint.template != best_template:
                if endpoint.specificity < best:
                    break
                continue
            hit = endpoint.regex.fullmatch(path)
            if hit is None:
                continue
            if best is None:
                best, best_template = endpoint.specificity, endpoint.template
            found.append((endpoint, hit.groupdict()))
        if not found:
            return UrlMatch(url, family, (), partial)
        query = parse_qsl(parts.query, keep_blank_values=True) + list(extra_params)
        params_family = found[0][0].family
        query_args = self._query_args(params_family, query)
        actions: list[UrlAction] = []
        for endpoint, groups in found:
            args: dict[str, Any] = {}
            for name, value in groups.items():
                if name.startswith("_") or value is None:
                    continue
                if SENTINEL in value or value == "":
                    continue  # unresolved statically: value unknown
                args[name] = value.strip()
            for name, value in query_args.items():
                args.setdefault(name, value)
            confidence = endpoint.confidence if endpoint.confidence is not None else 0.9
            if endpoint.page:
                confidence = min(confidence, 0.7)
            if partial:
                confidence = min(confidence, 0.8)
            pattern = f"{endpoint.family} {endpoint.method} {endpoint.template}"
            actions.append(UrlAction(endpoint.action, args, confidence, endpoint.page, pattern))
        return UrlMatch(url, family, tuple(actions), partial)

    def _query_args(self, family: str, query: list[tuple[str, str]]) -> dict[str, Any]:
        names = self._arg_names.get(f"api:{family}", {})
        result: dict[str, Any] = {}
        filters: list[str] = []
        for key, value in query:
            if SENTINEL in key:
                continue
            semantic = names.get(key)
            if semantic is not None:
                normalised = blank_to_none(value)
                if normalised is not None and SENTINEL not in str(normalised):
                    result.setdefault(semantic, _maybe_int(normalised))
                continue
            if family == "tabular" and "__" in key:
                column, _, operator = key.rpartition("__")
                if column and operator in TABULAR_FILTER_OPERATORS:
                    filters.append(f"{column}__{operator}={value.strip()}" if value else key)
        if filters and not any(SENTINEL in term for term in filters):
            result["filters"] = "&".join(filters)
        return result

    # -- CLI -------------------------------------------------------------------------------------

    def match_cli(self, words: Collection[str], version: str | None = None) -> CliMatch | None:
        """Match the words after the ``datagouv`` executable (options already removed).

        Args:
            words: Positional words, e.g. ``["dataset", "get", "5d13..."]``.
            version: CLI version; ``None`` accepts every block.

        Returns:
            The match, or ``None`` when no command (mapped or known) fits.

        Raises:
            UnknownVersionError: When ``version`` is not PEP 440.
        """
        tokens = tuple(words)
        parsed = None if version is None else parse_version(version, "datagouv CLI version")
        actions: list[tuple[str, dict[str, Any]]] = []
        matched = ""
        arity = 0
        for command_words, spec, action, arg_names in self._cli_entries:
            if tokens[: len(command_words)] != command_words:
                continue
            if parsed is not None and not spec.contains(parsed, prereleases=True):
                continue
            matched = " ".join(command_words)
            arity = max(arity, len(arg_names))
            positional = tokens[len(command_words) :]
            args: dict[str, Any] = {}
            for name, value in zip(arg_names, positional, strict=False):
                normalised = blank_to_none(value)
                if name is not None and normalised is not None and SENTINEL not in str(normalised):
                    args[name] = normalised
            actions.append((action, args))
        if actions:
            return CliMatch(matched, tuple(actions), arity=arity)
        for length in (2, 1):
            reason = self._cli_known.get(tokens[:length])
            if reason is not None:
                return CliMatch(" ".join(tokens[:length]), (), reason)
        return None

    # -- Python client ---------------------------------------------------------------------------

    def client_specs(self, version: str | None = None) -> tuple[ClientSpec, ...]:
        """The client calls that perform actions, as the code analyser needs them.

        Raises:
            UnknownVersionError: When ``version`` is not PEP 440.
        """
        return self._client_specs(version)

    @lru_cache(maxsize=16)  # noqa: B019 - the registry lives as long as the process
    def _client_specs(self, version: str | None) -> tuple[ClientSpec, ...]:
        parsed = None if version is None else parse_version(version, "datagouv-client version")
        specs: list[ClientSpec] = []
        for target, entries in self._client_entries.items():
            for spec, action, call in entries:
                if parsed is None or spec.contains(parsed, prereleases=True):
                    specs.append(ClientSpec(target, call.kind, tuple(call.args), action))
        return tuple(specs)


# ---------------------------------------------------------------------------------------------
# Values.


def blank_to_none(value: Any) -> Any:
    """Strip a string argument value; an empty string and ``None`` become ``None``."""
    if value is None:
        return None
    if isinstance(value, str):
        stripped = value.strip()
        return stripped or None
    return value


def _maybe_int(value: Any) -> Any:
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return value


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, str) and value.strip() == "")


_NUMBERS = (int, float)  # a tuple: ``int | float`` would build a union object at each call


def _as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, _NUMBERS):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def _condition_holds(
    at_most: _Limits,
    if_present_at_most: _Limits,
    absent: tuple[str, ...],
    arguments: Mapping[str, Any],
) -> bool:
    """:meth:`ToolCondition.holds` on the condition's fields as tuples (a hot path)."""
    get = arguments.get
    for name, limit in at_most:
        number = _as_number(get(name))
        if number is None or number > limit:
            return False
    for name, limit in if_present_at_most:
        value = get(name)
        if _is_missing(value):
            continue
        number = _as_number(value)
        if number is None or number > limit:
            return False
    for name in absent:  # noqa: SIM110 - a loop: all() over a generator is slower here
        if not _is_missing(get(name)):
            return False
    return True


def _fmt(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else str(number)


# ---------------------------------------------------------------------------------------------
# Loading.


def _format_validation(source: str, error: ValidationError) -> str:
    lines = [f"{source}: invalid action registry"]
    for item in error.errors():
        loc = ".".join(str(part) for part in item["loc"]) or "<root>"
        lines.append(f"  {loc}: {item['msg']}")
    return "\n".join(lines)


def _read(path: Path | None) -> tuple[str, str]:
    if path is None:
        ref = resources.files("datagouv_eval_pipeline.core.semantic").joinpath(_DEFAULT_PATH)
        return ref.read_text(
            encoding="utf-8"
        ), f"datagouv_eval_pipeline/core/semantic/{_DEFAULT_PATH}"
    return Path(path).read_text(encoding="utf-8"), str(path)


def _build(text: str, source: str) -> ActionRegistry:
    try:
        raw = safe_load(text)
    except yaml.YAMLError as error:
        raise RegistryError(f"{source}: not valid YAML: {error}") from error
    if not isinstance(raw, dict):
        raise RegistryError(f"{source}: expected a mapping at the top level")
    try:
        data = RegistryFile.model_validate(raw)
    except ValidationError as error:
        raise RegistryError(_format_validation(source, error)) from error
    return ActionRegistry(data, source)


@lru_cache(maxsize=1)
def _default_registry() -> ActionRegistry:
    text, source = _read(None)
    return _build(text, source)


def load_registry(path: Path | str | None = None) -> ActionRegistry:
    """Load and compile the action registry.

    Args:
        path: A registry YAML file; ``None`` loads the packaged ``actions.yml`` (cached).

    Raises:
        RegistryError: Naming the file, the field path and what was expected.
    """
    if path is None:
        return _default_registry()
    text, source = _read(Path(path))
    return _build(text, source)


@lru_cache(maxsize=1)
def default_action_names() -> frozenset[str]:
    """The semantic action names of the packaged registry (cached)."""
    return _default_registry().action_names
