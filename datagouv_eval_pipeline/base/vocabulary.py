"""The semantic vocabulary the task specs, the action registry and the twin share.

Task specs name semantic actions (``get.dataset.info``) and their arguments (``dataset_id``);
the registry (``semantic/actions.yml``) says which literal calls perform them. Both layers
validate names against these sets, defined once here at the bottom layer so that the task layer
never has to import the registry (a test holds ``actions.yml`` to this list).

The Tabular API's row-filter operators (``<column>__<operator>=<value>``) are named here too:
the twin serves them, the MCP emulation exposes some, the semantic layer reads them from calls,
and task specs filter rows with them.
"""

from __future__ import annotations

from typing import Literal, get_args

ACTION_NAMES: frozenset[str] = frozenset(
    {
        "search.datasets",
        "search.dataservices",
        "search.organizations",
        "get.dataset.info",
        "get.dataset.resources",
        "get.resource.info",
        "get.resource.profile",
        "get.data",
        "get.dataservice.info",
        "get.dataservice.openapi_spec",
        "get.metrics",
    }
)
"""Every semantic action name (the registry defines exactly these)."""

ARGUMENT_NAMES: tuple[str, ...] = (
    "query",
    "dataset_id",
    "resource_id",
    "dataservice_id",
    "organization_id",
    "filters",
    "page_size",
)
"""Every semantic argument name, in the registry's documented order."""

ValueOperator = Literal[
    "exact", "differs", "contains", "less", "greater", "strictly_less", "strictly_greater"
]
"""A Tabular API operator comparing a column with one value (``column__less=5``)."""

VALUE_OPERATORS: tuple[ValueOperator, ...] = get_args(ValueOperator)
"""The :data:`ValueOperator` names, in api-tabular's documented order."""

TABULAR_OPERATORS: tuple[str, ...] = (
    "exact",
    "contains",
    "less",
    "greater",
    "strictly_less",
    "strictly_greater",
    "differs",
    "notcontains",
    "in",
    "notin",
    "isnull",
    "isnotnull",
)
"""Every row-filter operator api-tabular understands (sorting, ``__sort``, is not a filter)."""

MCP_FILTER_OPERATORS: tuple[str, ...] = TABULAR_OPERATORS[:6]
"""The operators the MCP server's ``query_resource_data`` accepts as ``filter_operator``."""

TWIN_MCP_RELEASES: tuple[str, ...] = ("0.2.5", "0.2.14", "0.2.19", "0.2.26")
"""The datagouv-mcp releases the embedded twin emulates (``world/mcp/versions.py`` serves each).

Named here so that the benchmark configuration can refuse a release the twin cannot serve
without importing the simulated world (a test holds this list to the world's ``VERSIONS``).
"""
