"""REST details of production the twin reproduces: the v2 search's facets, v1 vs v2 search."""

from __future__ import annotations

from typing import Any

from starlette.testclient import TestClient


def get(client: TestClient, path: str, status: int = 200) -> Any:
    response = client.get(path)
    assert response.status_code == status, (path, response.text[:300])
    return response.json()


def test_v2_search_has_udatas_facets_envelope(client: TestClient) -> None:
    page = get(client, "/api/2/datasets/search/?q=transports&page_size=5")
    assert list(page) == [
        "data",
        "page",
        "page_size",
        "total",
        "next_page",
        "previous_page",
        "facets",
    ]
    facets = page["facets"]
    assert list(facets) == [
        "format_family",
        "access_type",
        "producer_type",
        "organization_id_with_name",
        "last_update",
        "tag",
        "license",
        "format",
        "schema",
        "geozone",
        "granularity",
        "badge",
        "topics",
    ]
    for buckets in facets.values():
        assert buckets[0] == {"name": "all", "count": page["total"]}
        assert len(buckets) <= 51
        counts = [b["count"] for b in buckets[1:]]
        if buckets is not facets["last_update"]:
            assert counts == sorted(counts, reverse=True)
    licenses = {b["name"]: b["count"] for b in facets["license"][1:]}
    assert sum(licenses.values()) == page["total"]  # one licence per dataset
    top = facets["organization_id_with_name"][1]
    org_id, _, org_name = top["name"].partition("|")
    assert get(client, f"/api/1/organizations/{org_id}/")["name"] == org_name
    by_org = get(client, f"/api/2/datasets/search/?q=transports&organization={org_id}")
    assert by_org["total"] == top["count"]
    ranges = [b["name"] for b in facets["last_update"][1:]]
    assert ranges == ["last_30_days", "last_12_months", "last_3_years"]
    recent = {b["name"]: b["count"] for b in facets["last_update"][1:]}
    assert recent["last_30_days"] <= recent["last_12_months"] <= recent["last_3_years"]
    # A tag bucket counts what the tag filter finds.
    tag, count = facets["tag"][1]["name"], facets["tag"][1]["count"]
    assert get(client, f"/api/2/datasets/search/?q=transports&tag={tag}")["total"] == count


def _buckets(page: dict[str, Any], facet: str) -> dict[str, int]:
    return {b["name"]: b["count"] for b in page["facets"][facet]}


def test_v2_facets_leave_their_own_filter_out_as_udata_search_service_does(
    client: TestClient,
) -> None:
    # udata_search_service query_datasets: each facet is a filter aggregation of the query and
    # every filter but its own (get_filters_except); the hits alone are post-filtered.
    plain = get(client, "/api/2/datasets/search/?q=transport&page_size=1")
    top = plain["facets"]["license"][1]["name"]
    by_licence = get(client, f"/api/2/datasets/search/?q=transport&license={top}&page_size=1")
    assert by_licence["total"] == _buckets(plain, "license")[top] < plain["total"]
    # The licence facet still counts every licence (all = the unfiltered total) ...
    assert _buckets(by_licence, "license") == _buckets(plain, "license")
    # ... while the other facets count only the licence's datasets.
    assert _buckets(by_licence, "tag")["all"] == by_licence["total"]
    assert sum(_buckets(by_licence, "license").values()) > 2 * by_licence["total"]
    tag = by_licence["facets"]["tag"][1]["name"]
    both = get(client, f"/api/2/datasets/search/?q=transport&license={top}&tag={tag}")
    assert both["total"] == _buckets(by_licence, "tag")[tag]
    # The licence facet drops its own filter and keeps the tag; a tag reaches the service as
    # ``tags`` (DatasetService.filter_renames), a filter every facet counts, its own included.
    by_tag = get(client, f"/api/2/datasets/search/?q=transport&tag={tag}&page_size=1")
    assert _buckets(both, "license") == _buckets(by_tag, "license")
    assert _buckets(both, "tag")["all"] == _buckets(both, "format")["all"] == both["total"]
    assert _buckets(both, "tag")[tag] == both["total"]
    # The badge filter is in no facet's filters (get_filters_except leaves it out).
    badge = get(client, "/api/2/datasets/search/?q=transport&badge=spd&page_size=1")
    assert badge["total"] < plain["total"]
    assert _buckets(badge, "license") == _buckets(plain, "license")


def test_v1_list_has_no_facets_and_searches_titles(client: TestClient) -> None:
    v1 = get(client, "/api/1/datasets/?q=transports&page_size=20")
    assert "facets" not in v1
    assert all("transports" in d["title"].lower() for d in v1["data"])
    v2 = get(client, "/api/2/datasets/search/?q=transports&page_size=20")
    assert v2["total"] > v1["total"]
    assert [d["id"] for d in v1["data"]] != [d["id"] for d in v2["data"]]


ACCESS_DEFAULTS: dict[str, Any] = {
    "access_type": "open",
    "access_audiences": [],
    "access_type_reason_category": None,
    "access_type_reason": None,
    "authorization_request_url": None,
    "permissions": {"delete": False, "edit": False, "edit_resources": False},
}


def test_datasets_carry_udatas_access_fields_and_permissions(client: TestClient) -> None:
    for dataset_id in (
        "55e4129788ee386899a46ec1",
        "6969c228770f993ed4817ef7",
    ):  # curated, catalogue
        v1 = get(client, f"/api/1/datasets/{dataset_id}/")
        assert {k: v1[k] for k in ACCESS_DEFAULTS} == ACCESS_DEFAULTS
        assert "schema" in v1 and v1["schema"] is None
        v2 = get(client, f"/api/2/datasets/{dataset_id}/")
        assert v2["access_type"] == "open" and v2["permissions"] == ACCESS_DEFAULTS["permissions"]


def test_dataservices_carry_featured_permissions_and_urls(client: TestClient) -> None:
    page = get(client, "/api/1/dataservices/?page_size=50")
    assert page["data"]
    for service in page["data"]:
        assert isinstance(service["featured"], bool)
        assert service["permissions"] == {"delete": False, "edit": False}
        assert "availability_url" in service and "rate_limiting_url" in service
