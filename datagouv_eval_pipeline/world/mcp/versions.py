"""The version table: which tools each pinned ``datagouv-mcp`` release exposes, and how.

Every served version is one :class:`VersionSpec` row: its tool list in registration order, each
tool's exact signature (argument names, JSON types, defaults, required), titles and annotations
when the release had them, the serverInfo version it reported, its Host allow-list and /health
shape, and a few behaviour flags (:class:`Behaviour`) for the differences the reference's
version history records (search endpoint, stop-word cleaning, the ``Resources:`` count, wording
of the dataservice tools, clamps, error hints). Tool implementations branch on those flags, never
on version strings, so adding a release (0.2.13, 0.2.24, …) is a new row in :data:`VERSIONS`.

Facts come from reference ``datagouv-toolsets.md`` §1.4–1.5 and the real ``tools/list`` dumps;
the schemas generated from these rows are checked against the dumps by the tests.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

SERVER_NAME: Final = "data.gouv.fr MCP server"


class _Required:
    """Marker default of a required argument."""

    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Final = _Required()

ArgType = Literal["string", "integer"]


@dataclass(frozen=True)
class Param:
    """One tool argument as the real server declares it.

    Attributes:
        name: Argument name.
        type: JSON type of a value (``string`` or ``integer``).
        default: Default value, or :data:`REQUIRED`.
        nullable: ``str | None`` in the real signature (``anyOf`` string/null in the schema).
    """

    name: str
    type: ArgType
    default: object = REQUIRED
    nullable: bool = False

    @property
    def required(self) -> bool:
        """Return whether the argument has no default."""
        return self.default is REQUIRED


def _req(name: str) -> Param:
    return Param(name, "string")


def _int(name: str, default: int) -> Param:
    return Param(name, "integer", default)


def _str(name: str, default: str) -> Param:
    return Param(name, "string", default)


def _opt(name: str) -> Param:
    return Param(name, "string", None, nullable=True)


@dataclass(frozen=True)
class ToolSignature:
    """A tool name with the arguments of one variant of it."""

    name: str
    params: tuple[Param, ...]

    def param_names(self) -> tuple[str, ...]:
        """Return the argument names in declaration order."""
        return tuple(p.name for p in self.params)


def _sig(name: str, *params: Param) -> ToolSignature:
    return ToolSignature(name, params)


# Signature variants, named after the release that introduced them (reference §1.5).
SEARCH_DATASETS_0_2_0 = _sig(
    "search_datasets", _req("query"), _int("page", 1), _int("page_size", 20)
)
SEARCH_DATASETS_0_2_26 = _sig(
    "search_datasets",
    _req("query"),
    _int("page", 1),
    _int("page_size", 20),
    _opt("sort"),
    _opt("last_update_range"),
)
SEARCH_ORGANIZATIONS_0_2_25 = _sig(
    "search_organizations",
    _str("query", ""),
    _int("page", 1),
    _int("page_size", 20),
    _opt("sort"),
    _opt("badge"),
    _opt("name"),
    _opt("business_number_id"),
)
SEARCH_DATASERVICES_0_2_15 = _sig(
    "search_dataservices", _req("query"), _int("page", 1), _int("page_size", 20)
)
GET_DATASERVICE_INFO_0_2_15 = _sig("get_dataservice_info", _req("dataservice_id"))
GET_DATASERVICE_OPENAPI_SPEC_0_2_15 = _sig("get_dataservice_openapi_spec", _req("dataservice_id"))
QUERY_DATASET_DATA_0_2_0 = _sig(
    "query_dataset_data",
    _req("question"),
    _opt("dataset_id"),
    _opt("dataset_query"),
    _int("limit_per_resource", 100),
)
_FILTER_PARAMS = (
    _int("page", 1),
    _int("page_size", 20),
    _opt("filter_column"),
    _opt("filter_value"),
    _str("filter_operator", "exact"),
    _opt("sort_column"),
    _str("sort_direction", "asc"),
)
QUERY_RESOURCE_DATA_0_2_13 = _sig(
    "query_resource_data", _req("question"), _req("resource_id"), *_FILTER_PARAMS
)
QUERY_RESOURCE_DATA_0_2_24 = _sig("query_resource_data", _req("resource_id"), *_FILTER_PARAMS)
GET_DATASET_INFO_0_2_0 = _sig("get_dataset_info", _req("dataset_id"))
LIST_DATASET_RESOURCES_0_2_0 = _sig("list_dataset_resources", _req("dataset_id"))
GET_RESOURCE_INFO_0_2_0 = _sig("get_resource_info", _req("resource_id"))
DOWNLOAD_AND_PARSE_RESOURCE_0_2_0 = _sig(
    "download_and_parse_resource",
    _req("resource_id"),
    _int("max_rows", 1000),
    _int("max_size_mb", 500),
)
DOWNLOAD_AND_PARSE_RESOURCE_0_2_14 = _sig(
    "download_and_parse_resource",
    _req("resource_id"),
    _int("max_rows", 20),
    _int("max_size_mb", 500),
)
DOWNLOAD_AND_PARSE_RESOURCE_0_2_19 = _sig(
    "download_and_parse_resource", _req("resource_id"), _int("max_rows", 20)
)
GET_METRICS_0_2_2 = _sig("get_metrics", _opt("dataset_id"), _opt("resource_id"), _int("limit", 12))

# Titles from v0.2.25 on (v0.2.24 had "dataservice" wording in the three dataservice titles).
TITLES_0_2_25: Final[Mapping[str, str]] = {
    "search_datasets": "Search datasets",
    "search_organizations": "Search organizations",
    "search_dataservices": "Search third-party APIs",
    "get_dataservice_info": "Get third-party API info",
    "get_dataservice_openapi_spec": "Get third-party API OpenAPI spec",
    "query_resource_data": "Query resource data",
    "get_dataset_info": "Get dataset info",
    "list_dataset_resources": "List dataset resources",
    "get_resource_info": "Get resource info",
    "get_metrics": "Get usage metrics",
}

# Reference §1.1 (v0.2.19 on): the public hosts plus loopback with any port.
ALLOWED_HOSTS_0_2_19: Final = (
    "mcp.data.gouv.fr",
    "mcp.preprod.data.gouv.fr",
    "localhost:*",
    "127.0.0.1:*",
)


# The handshake protocol versions an mcp 1.x server negotiates, oldest first: mcp 1.22 knew up
# to 2025-06-18, mcp 1.23 on also 2025-11-25.
PROTOCOL_VERSIONS_MCP_1_22: Final = ("2024-11-05", "2025-03-26", "2025-06-18")
PROTOCOL_VERSIONS_MCP_1_23: Final = (*PROTOCOL_VERSIONS_MCP_1_22, "2025-11-25")


@dataclass(frozen=True)
class Behaviour:
    """Behaviour differences between releases, as flags the tool implementations read.

    Attributes:
        search_api: ``v1`` (``1/datasets/``, ``1/dataservices/``; up to v0.2.20) or ``v2``
            (``2/…/search/``; v0.2.21 on).
        query_cleaning: Stop-word cleaning with fallback in the search tools (v0.2.7 on).
        resources_count: ``len`` (``len(resources)``: right on v1 lists, 4 on v2 link objects —
            the v0.2.21–v0.2.25 bug) or ``total`` (``resources.total``, v0.2.26).
        wording: ``dataservice`` (up to v0.2.24) or ``third-party API`` (v0.2.25 on) in the
            dataservice tools' texts.
        metrics_limit_max: Upper clamp of ``get_metrics``' ``limit`` (100, then 50 from v0.2.22).
        metrics_none_safe: Null metric values count as 0 (v0.2.22 on); before, formatting a
            null raised and the section became ``Error fetching … metrics: …``.
        tabular_error_hints: Tabular 4xx/5xx hint messages in ``query_resource_data``
            (v0.2.24 on); before, any HTTP error fell to the generic ``❌ Error querying…``.
        download_caps: ``(max MB, max rows)`` hard caps of ``download_and_parse_resource``
            (v0.2.19), or None when the caller's ``max_size_mb`` applies.
        user_agent: Send ``User-Agent: datagouv-mcp/<version>`` upstream (v0.2.19 on).
        query_page_size_max: Upper clamp of ``query_resource_data``'s ``page_size``.
        query_validation: ``query_resource_data`` lower-cases the operator and direction and
            refuses unknown ones with a text (v0.2.19 on); before, an unknown operator was
            sent as ``exact`` and the caller's spelling echoed.
        resource_list: ``list_dataset_resources`` reads each resource's v2 record
            (``v2_each``, up to v0.2.14) or shows the v1 dataset's own resource list (``v1``).
        large_file_exceptions: ``get_resource_info`` reads the crawler's list of large-file
            exceptions and heads its last line ``Tabular API availability:`` (v0.2.14 on);
            before, it only probed the Tabular profile.
        download_sample: ``download_and_parse_resource`` shows the first 3 of the rows it
            returns as a sample (v0.2.5); from v0.2.14 on, every returned row.
    """

    search_api: Literal["v1", "v2"]
    query_cleaning: bool
    resources_count: Literal["len", "total"]
    wording: Literal["dataservice", "third-party API"]
    metrics_limit_max: int
    metrics_none_safe: bool
    tabular_error_hints: bool
    download_caps: tuple[int, int] | None
    user_agent: bool
    query_page_size_max: int = 200
    query_validation: bool = False
    resource_list: Literal["v2_each", "v1"] = "v1"
    large_file_exceptions: bool = True
    download_sample: bool = False


HealthShape = Literal["timestamp", "timestamp_version", "uptime_deep"]


@dataclass(frozen=True)
class VersionSpec:
    """One pinned release of the data.gouv.fr MCP server.

    Attributes:
        version: The release (``0.2.26``); served at ``/mcp/v{version}/mcp``.
        sdk_version: ``serverInfo.version`` it reported (the mcp SDK version of its lock file).
        tools: Tool signatures in registration order (the ``tools/list`` order).
        behaviour: Behaviour flags.
        titles: Tool titles, or None when the release set none (before v0.2.24).
        annotations: Whether tools carry the read-only annotations (v0.2.24 on).
        allowed_hosts: Host allow-list (421 otherwise), or None when the release had no
            DNS-rebinding protection.
        health: Shape of ``GET /health``: ``timestamp`` (v0.2.5), ``timestamp_version``
            (v0.2.8 on) or ``uptime_deep`` (v0.2.20 fields plus the v0.2.24 deep probe).
        stateless: Stateless streamable HTTP (v0.2.18 on); before, the real server's SDK
            kept a session per client: ``initialize`` opens one (``mcp-session-id``) and a
            request without it is refused (400 ``Bad Request: Missing session ID``).
        protocol_versions: The handshake protocol versions its mcp SDK negotiated, oldest
            first (a client asking for another gets the last one).
        pydantic_docs: The pydantic version (major.minor) whose docs its argument-validation
            errors link: the pydantic of the release's ``uv.lock``.
    """

    version: str
    sdk_version: str
    tools: tuple[ToolSignature, ...]
    behaviour: Behaviour
    protocol_versions: tuple[str, ...]
    pydantic_docs: str
    titles: Mapping[str, str] | None = None
    annotations: bool = False
    allowed_hosts: tuple[str, ...] | None = None
    health: HealthShape = "uptime_deep"
    stateless: bool = True

    def tool(self, name: str) -> ToolSignature | None:
        """Return the signature of ``name`` in this release, or None if it does not exist."""
        for signature in self.tools:
            if signature.name == name:
                return signature
        return None

    def tool_names(self) -> tuple[str, ...]:
        """Return the tool names in registration order."""
        return tuple(t.name for t in self.tools)


VERSIONS: Final[Mapping[str, VersionSpec]] = {
    spec.version: spec
    for spec in (
        VersionSpec(
            version="0.2.5",
            sdk_version="1.22.0",
            protocol_versions=PROTOCOL_VERSIONS_MCP_1_22,
            pydantic_docs="2.12",
            tools=(
                SEARCH_DATASETS_0_2_0,
                QUERY_DATASET_DATA_0_2_0,
                GET_DATASET_INFO_0_2_0,
                LIST_DATASET_RESOURCES_0_2_0,
                GET_RESOURCE_INFO_0_2_0,
                DOWNLOAD_AND_PARSE_RESOURCE_0_2_0,
                GET_METRICS_0_2_2,
            ),
            behaviour=Behaviour(
                search_api="v1",
                query_cleaning=False,
                resources_count="len",
                wording="dataservice",
                metrics_limit_max=100,
                metrics_none_safe=False,
                tabular_error_hints=False,
                download_caps=None,
                user_agent=False,
                resource_list="v2_each",
                large_file_exceptions=False,
                download_sample=True,
            ),
            allowed_hosts=None,
            health="timestamp",
            stateless=False,
        ),
        VersionSpec(
            version="0.2.14",
            # The mcp version of the release's uv.lock.
            sdk_version="1.26.0",
            protocol_versions=PROTOCOL_VERSIONS_MCP_1_23,
            # The lock pins pydantic 2.12.5, but the one real build of 0.2.14 (the PyPI
            # repackaging, the conformance test's reference) installs the newest mcp<2 and
            # pydantic, 2.14 today: the emulation links the docs that build links.
            pydantic_docs="2.14",
            tools=(
                SEARCH_DATASETS_0_2_0,
                QUERY_RESOURCE_DATA_0_2_13,
                GET_DATASET_INFO_0_2_0,
                LIST_DATASET_RESOURCES_0_2_0,
                GET_RESOURCE_INFO_0_2_0,
                DOWNLOAD_AND_PARSE_RESOURCE_0_2_14,
                GET_METRICS_0_2_2,
            ),
            behaviour=Behaviour(
                search_api="v1",
                query_cleaning=True,
                resources_count="len",
                wording="dataservice",
                metrics_limit_max=100,
                metrics_none_safe=False,
                tabular_error_hints=False,
                download_caps=None,
                user_agent=False,
                resource_list="v2_each",
            ),
            # The release listed "localhost" and "127.0.0.1" without a port, so it refused any
            # local Host header carrying one (421); the twin, served on a loopback port, takes
            # the 0.2.19 list, which allows them with any port.
            allowed_hosts=ALLOWED_HOSTS_0_2_19,
            health="timestamp_version",
            stateless=False,
        ),
        VersionSpec(
            version="0.2.19",
            sdk_version="1.26.0",
            protocol_versions=PROTOCOL_VERSIONS_MCP_1_23,
            pydantic_docs="2.12",
            tools=(
                SEARCH_DATASETS_0_2_0,
                SEARCH_DATASERVICES_0_2_15,
                GET_DATASERVICE_INFO_0_2_15,
                GET_DATASERVICE_OPENAPI_SPEC_0_2_15,
                QUERY_RESOURCE_DATA_0_2_13,
                GET_DATASET_INFO_0_2_0,
                LIST_DATASET_RESOURCES_0_2_0,
                GET_RESOURCE_INFO_0_2_0,
                DOWNLOAD_AND_PARSE_RESOURCE_0_2_19,
                GET_METRICS_0_2_2,
            ),
            behaviour=Behaviour(
                search_api="v1",
                query_cleaning=True,
                resources_count="len",
                wording="dataservice",
                metrics_limit_max=100,
                metrics_none_safe=False,
                tabular_error_hints=False,
                download_caps=(50, 500),
                user_agent=True,
                query_validation=True,
            ),
            allowed_hosts=ALLOWED_HOSTS_0_2_19,
            health="timestamp_version",
        ),
        VersionSpec(
            version="0.2.26",
            sdk_version="1.27.1",
            protocol_versions=PROTOCOL_VERSIONS_MCP_1_23,
            pydantic_docs="2.13",
            tools=(
                SEARCH_DATASETS_0_2_26,
                SEARCH_ORGANIZATIONS_0_2_25,
                SEARCH_DATASERVICES_0_2_15,
                GET_DATASERVICE_INFO_0_2_15,
                GET_DATASERVICE_OPENAPI_SPEC_0_2_15,
                QUERY_RESOURCE_DATA_0_2_24,
                GET_DATASET_INFO_0_2_0,
                LIST_DATASET_RESOURCES_0_2_0,
                GET_RESOURCE_INFO_0_2_0,
                GET_METRICS_0_2_2,
            ),
            behaviour=Behaviour(
                search_api="v2",
                query_cleaning=True,
                resources_count="total",
                wording="third-party API",
                metrics_limit_max=50,
                metrics_none_safe=True,
                tabular_error_hints=True,
                download_caps=None,
                user_agent=True,
                query_validation=True,
            ),
            titles=TITLES_0_2_25,
            annotations=True,
            allowed_hosts=ALLOWED_HOSTS_0_2_19,
            health="uptime_deep",
        ),
    )
}

DEFAULT_VERSIONS: Final = tuple(VERSIONS)


def get_version(version: str) -> VersionSpec:
    """Return the spec of a served version.

    Raises:
        KeyError: the version is not in the table; the message lists the served ones.
    """
    try:
        return VERSIONS[version.removeprefix("v")]
    except KeyError:
        raise KeyError(
            f"MCP version {version!r} is not emulated by the twin; served: {sorted(VERSIONS)}"
        ) from None
