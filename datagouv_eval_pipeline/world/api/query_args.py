"""The query arguments udata declares on its list and search endpoints, parsed as udata does.

udata builds a flask-restx ``RequestParser`` per endpoint (udata 17.6.0):

* v1 datasets: ``core/dataset/api.py`` ``DatasetApiParser`` (on ``api/parsers.py``
  ``ModelApiParser``: ``q``, ``sort``, pagination, then the filters);
* v2 datasets, dataservices and organizations: ``core/*/search.py`` ``filters`` and ``sorts``,
  turned into a parser by ``search/adapter.py`` ``as_request_parser`` (``q``, the filters,
  ``sort``, pagination);
* v1 organizations: ``core/organization/api.py`` ``OrgApiParser``; v1 dataservices: the
  ``generate_fields`` parser of ``core/dataservices/models.py`` (``api_fields.py``).

Arguments are parsed in their declaration order and the first bad one answers 400 with
flask-restx's body ``{"errors": {name: message}, "message": "Input payload validation
failed"}``, the message being the argument's ``help`` (when it has one) followed by the
error, e.g. ``The value 'bogus' is not a valid choice for 'sort'.``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

Kind = Literal["str", "bool", "list", "temporal"]

SORT_HELP = "The field (and direction) on which sorting apply"
TEMPORAL_HELP = (
    "A date range expressed as start-end where both dates are in iso format "
    "(ie. YYYY-MM-DD-YYYY-MM-DD)"
)
# udata core/dataset/models.py BADGES, core/organization/models.py BADGES.
DATASET_BADGES = ("pivotal-data", "spd", "inspire", "hvd", "sl", "sr")
ORGANIZATION_BADGES = ("public-service", "certified", "association", "company", "local-authority")
# core/access_type/constants.py AccessType; core/dataset/constants.py FormatFamily;
# core/organization/constants.py PRODUCER_TYPES.
ACCESS_TYPES = ("open", "open_with_account", "restricted")
FORMAT_FAMILIES = ("tabular", "machine_readable", "geographical", "documents", "other")
PRODUCER_TYPES = (
    "public-service",
    "association",
    "company",
    "local-authority",
    "user",
    "not-specified",
)
LAST_UPDATE_RANGE_CHOICES = ("last_30_days", "last_12_months", "last_3_years")


class QueryParams(Protocol):
    """A request's query string (Starlette's ``QueryParams``)."""

    def getlist(self, key: Any) -> list[str]:
        """Every value of ``key``, in order."""
        ...


@dataclass(frozen=True)
class Arg:
    """One declared argument.

    Attributes:
        name: The query parameter.
        kind: ``str`` (last value), ``bool`` (flask-restx ``inputs.boolean``), ``list`` (every
            value, ``action="append"``) or ``temporal`` (``YYYY-MM-DD-YYYY-MM-DD``).
        choices: The accepted values, if restricted.
        help: The argument's help, which prefixes its error messages.
    """

    name: str
    kind: Kind = "str"
    choices: tuple[str, ...] | None = None
    help: str | None = None


class ArgError(Exception):
    """A query argument udata's parser refuses (answered 400 ``Input payload validation failed``).

    Attributes:
        name: The argument.
        detail: flask-restx's message for it.
    """

    def __init__(self, name: str, detail: str) -> None:
        super().__init__(detail)
        self.name = name
        self.detail = detail


def _sort(*keys: str) -> Arg:
    return Arg("sort", choices=(*keys, *(f"-{k}" for k in keys)), help=SORT_HELP)


_TEMPORAL = Arg("temporal_coverage", "temporal", help=TEMPORAL_HELP)

# core/dataset/api.py DatasetApiParser (pagination is checked before, as the twin always did).
DATASET_V1: tuple[Arg, ...] = (
    Arg("q"),
    _sort("title", "created", "last_update", "reuses", "followers", "views"),
    Arg("tag", "list"),
    Arg("license"),
    Arg("featured", "bool"),
    Arg("geozone"),
    Arg("granularity"),
    Arg("temporal_coverage"),
    Arg("access_type", choices=ACCESS_TYPES),
    Arg("organization"),
    Arg("badge", choices=DATASET_BADGES),
    Arg("organization_badge", choices=ORGANIZATION_BADGES),
    Arg("owner"),
    Arg("followed_by", help="(beta, subject to change/be removed)"),
    Arg("format"),
    Arg("schema"),
    Arg("schema_version"),
    Arg("topic"),
    Arg("credit"),
    Arg("dataservice"),
    Arg("reuse"),
)
# core/dataset/search.py DatasetSearch.filters and sorts.
DATASET_V2: tuple[Arg, ...] = (
    Arg("q"),
    Arg("tag", "list"),
    Arg("badge", choices=DATASET_BADGES),
    Arg("organization"),
    Arg("organization_badge", choices=ORGANIZATION_BADGES),
    Arg("organization_name"),
    Arg("owner"),
    Arg("license"),
    Arg("geozone"),
    Arg("granularity", "list"),
    Arg("format", "list"),
    Arg("schema", "list"),
    _TEMPORAL,
    Arg("featured", "bool"),
    Arg("topic"),
    Arg("access_type"),
    Arg("format_family", choices=FORMAT_FAMILIES),
    Arg("producer_type", choices=PRODUCER_TYPES),
    Arg("last_update_range", choices=LAST_UPDATE_RANGE_CHOICES),
    _sort("created", "last_update", "reuses", "followers", "views"),
)
# core/dataservices/models.py generate_fields (sortables, searchable, filterables).
DATASERVICE_V1: tuple[Arg, ...] = (
    _sort("title", "base_api_url", "created", "last_modified", "followers", "views"),
    Arg("q"),
    Arg("tag", "list"),
    Arg("featured", "bool"),
    Arg("organization"),
    Arg("organization_badge", choices=ORGANIZATION_BADGES),
    Arg("topic"),
    Arg("reuse"),
)
# core/dataservices/search.py DataserviceSearch.filters and sorts.
DATASERVICE_V2: tuple[Arg, ...] = (
    Arg("q"),
    Arg("tag", "list"),
    Arg("topic"),
    Arg("organization"),
    Arg("archived", "bool"),
    Arg("featured", "bool"),
    Arg("access_type"),
    Arg("producer_type", choices=PRODUCER_TYPES),
    Arg("last_update_range", choices=LAST_UPDATE_RANGE_CHOICES),
    Arg("is_restricted", "bool"),
    _sort("created", "views", "followers"),
)
# core/organization/api.py OrgApiParser.
ORGANIZATION_V1: tuple[Arg, ...] = (
    Arg("q"),
    _sort("name", "reuses", "datasets", "followers", "views", "created", "last_modified"),
    Arg("badge", choices=ORGANIZATION_BADGES),
    Arg("name"),
    Arg("business_number_id"),
)
# core/organization/search.py OrganizationSearch.filters and sorts.
ORGANIZATION_V2: tuple[Arg, ...] = (
    Arg("q"),
    Arg("badge", choices=ORGANIZATION_BADGES),
    Arg("producer_type", choices=tuple(p for p in PRODUCER_TYPES if p != "user")),
    _sort("reuses", "datasets", "followers", "views", "created"),
)


def _boolean(value: str) -> bool:
    """flask-restx ``inputs.boolean``: an empty value is false."""
    if not value:
        return False
    folded = value.lower()
    if folded in ("true", "1", "on"):
        return True
    if folded in ("false", "0"):
        return False
    raise ValueError(f"Invalid literal for boolean(): {folded}")


def _temporal(value: str) -> str:
    """Check a coverage as udata's ``TemporalCoverageFilter.validate_parameter``."""
    import re

    if not re.match(r"\d{4}-\d{2}-\d{2}-\d{4}-\d{2}-\d{2}", value):
        raise ValueError(f'"{value}" does not match YYYY-MM-DD-YYYY-MM-DD')
    return value


def _refuse(arg: Arg, error: str) -> ArgError:
    return ArgError(arg.name, f"{arg.help} {error}" if arg.help else error)


def parse(declared: Sequence[Arg], params: QueryParams) -> dict[str, Any]:
    """Parse ``params`` as udata's parser of ``declared`` does; absent arguments are None.

    Raises:
        ArgError: The first argument (in declaration order) whose value is refused.
    """
    out: dict[str, Any] = {}
    for arg in declared:
        values = params.getlist(arg.name)
        parsed: list[Any] = []
        for raw in values:
            try:
                value: Any = (
                    _boolean(raw)
                    if arg.kind == "bool"
                    else _temporal(raw)
                    if arg.kind == "temporal"
                    else raw
                )
            except ValueError as error:
                raise _refuse(arg, str(error)) from None
            if arg.choices is not None and value not in arg.choices:
                raise _refuse(arg, f"The value '{value}' is not a valid choice for '{arg.name}'.")
            parsed.append(value)
        if not parsed:
            out[arg.name] = None
        elif arg.kind == "list":
            out[arg.name] = parsed
        else:
            # flask-restx's ``store`` action keeps the first value of a repeated argument.
            out[arg.name] = parsed[0]
    return out
