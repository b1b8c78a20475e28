"""The semantic vocabulary the task specs and the action registry share.

Task specs name semantic actions (``get.dataset.info``) and their arguments (``dataset_id``);
the registry (``semantic/actions.yml``) says which literal calls perform them. Both layers
validate names against these sets, defined once here at the bottom layer so that the task layer
never has to import the registry (a test holds ``actions.yml`` to this list).
"""

from __future__ import annotations

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
