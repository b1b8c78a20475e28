"""The v2 dataset facets against a count of every matching dataset, value by value.

The store counts facets from per-row codes and lists only the buckets that can rank in the
first 50, with every facet's own filter dropped from one text match. This test counts the
datasets of each facet's own search (the query and every filter but the facet's own and the
badge, as udata_search_service's ``get_filters_except`` does) one by one from their records and
export rows, sorts every value, and compares the buckets.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from datagouv_eval_pipeline.world.catalogue.catalog import CatalogStore, DatasetFilters

INSEE = "534fff81a3a7292c64a77e5c"

# (query, search_datasets keywords) — plain queries, then one to three filters.
CASES: list[tuple[str, dict[str, Any]]] = [
    ("transport", {}),
    ("carburant", {}),
    ("adresse communes", {}),
    ("transport", {"filters": DatasetFilters(license="odc-odbl")}),
    ("population", {"tag": "transport", "filters": DatasetFilters(license="lov2")}),
    ("transport", {"organization": INSEE, "format": "csv"}),
    ("population", {"badge": "spd", "filters": DatasetFilters(producer_type="public-service")}),
    (
        "eau",
        {
            "last_update_range": "last_12_months",
            "format": "csv",
            "filters": DatasetFilters(license="odc-odbl"),
        },
    ),
    (
        "budget",
        {
            "last_update_range": "last_3_years",
            "filters": DatasetFilters(license="lov2", granularity=("fr:commune",)),
        },
    ),
]

# Facet -> the search_datasets keyword or DatasetFilters field that is its own filter.
OWN = {
    "license": "license",
    "granularity": "granularity",
    "format": "format",
    "organization_id_with_name": "organization",
    "last_update": "last_update_range",
}
COUNTED = ("license", "granularity", "tag", "format", "organization_id_with_name")


def _without(kwargs: dict[str, Any], facet: str) -> dict[str, Any]:
    """The facet's own search: no badge, and no filter of its own."""
    out = {k: v for k, v in kwargs.items() if k != "badge"}
    own = OWN.get(facet)
    if own:
        out.pop(own, None)
    filters = out.get("filters")
    if own and isinstance(filters, DatasetFilters) and getattr(filters, own, None):
        empty: Any = () if isinstance(getattr(filters, own), tuple) else None
        out["filters"] = DatasetFilters(**{**filters.__dict__, own: empty})
    return out


def _values(store: CatalogStore, dataset_id: str, facet: str) -> list[str]:
    """A dataset's values for a facet, read from its curated record or its export row."""
    record = store.datasets.get(dataset_id)
    if record is not None:
        org = record.get("organization")
        return {
            "license": [record.get("license") or "notspecified"],
            "granularity": [g] if (g := (record.get("spatial") or {}).get("granularity")) else [],
            "tag": list(record.get("tags", [])),
            "format": sorted(
                {str(r["format"]).lower() for r in record["resources"] if r.get("format")}
            ),
            "organization_id_with_name": [f"{org['id']}|{org['name']}"] if org else [],
        }[facet]
    catalogue = store.catalogue
    assert catalogue is not None
    row = catalogue.row(dataset_id)
    assert row is not None, dataset_id
    column = {
        "license": "license",
        "granularity": "granularity",
        "tag": "tags",
        "format": "formats",
        "organization_id_with_name": "organization_id",
    }[facet]
    cell = catalogue.columns[column][row]
    if facet in ("tag", "format"):
        return list(dict.fromkeys(i for i in cell.split(",") if i))
    if not cell:
        return []
    if facet == "organization_id_with_name":
        org = store.organizations.get(cell)
        return [f"{cell}|{org['name']}"] if org else []
    return [cell]


@pytest.mark.parametrize(("query", "kwargs"), CASES)
def test_facets_equal_a_count_of_every_matching_dataset(
    store: CatalogStore, query: str, kwargs: dict[str, Any]
) -> None:
    page = store.search_datasets(query, page_size=1, facets=True, **kwargs)
    assert page.facets is not None
    for facet in (*COUNTED, "last_update"):
        own_search = store.search_datasets(query, page_size=10**6, **_without(kwargs, facet))
        assert len(own_search.ids) == own_search.total
        assert page.facets[facet][0] == {"name": "all", "count": own_search.total}, facet
        if facet == "last_update":
            continue
        counts: Counter[str] = Counter()
        for dataset_id in own_search.ids:
            counts.update(_values(store, dataset_id, facet))
        expected = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:50]
        got = [(b["name"], b["count"]) for b in page.facets[facet][1:]]
        assert got == expected, (query, kwargs, facet)
