"""Main API (udata v1 and v2) shapes, pagination and errors, through the ASGI app."""

from __future__ import annotations

from typing import Any

import yaml
from starlette.testclient import TestClient

SITE = "http://testserver/"
API = "http://testserver/api/"
TRANSPORTS = "55e4129788ee386899a46ec1"
CATALOGUE = "5d13a8b6634f41070a43dff3"
ELUS_RESOURCE = "3b6b2281-b9d9-4959-ae9d-c2c166dff118"
RNE = "5c34c4d1634f4173183a64f1"
BAN = "672cf67802ef6b1be63b8975"
NOT_FOUND = {
    "message": "The requested URL was not found on the server. If you entered the URL manually "
    "please check your spelling and try again."
}
DATASET_KEYS = {
    # udata's access fields, dataset-level schema and anonymous permissions (issue 12)
    "access_type",
    "access_audiences",
    "access_type_reason_category",
    "access_type_reason",
    "authorization_request_url",
    "schema",
    "permissions",
    "id",
    "title",
    "acronym",
    "slug",
    "description",
    "description_short",
    "created_at",
    "last_modified",
    "last_update",
    "deleted",
    "archived",
    "featured",
    "private",
    "tags",
    "badges",
    "resources",
    "community_resources",
    "frequency",
    "frequency_date",
    "extras",
    "metrics",
    "organization",
    "owner",
    "temporal_coverage",
    "spatial",
    "license",
    "uri",
    "page",
    "quality",
    "internal",
    "harvest",
    "contact_points",
}
RESOURCE_KEYS = {
    "id",
    "title",
    "description",
    "filetype",
    "type",
    "format",
    "url",
    "latest",
    "checksum",
    "filesize",
    "mime",
    "created_at",
    "last_modified",
    "metrics",
    "extras",
    "preview_url",
    "schema",
    "internal",
    "harvest",
}
ENVELOPE_KEYS = ["data", "page", "page_size", "total", "next_page", "previous_page"]


def get(client: TestClient, path: str, status: int = 200) -> Any:
    response = client.get(path)
    assert response.status_code == status, response.text
    return response.json()


def test_v1_dataset_shape(client: TestClient) -> None:
    body = get(client, f"/api/1/datasets/{TRANSPORTS}/")
    # udata's v1 default mask (DEFAULT_MASK) leaves community_resources out
    assert set(body) == DATASET_KEYS - {"community_resources"}
    assert body["title"] == "Transports"
    assert (
        body["organization"]["name"]
        == "Institut national de la statistique et des études économiques (Insee)"
    )
    assert {"id", "name", "slug"} <= set(body["organization"])
    assert body["tags"] == [
        "automobiles",
        "carburant",
        "immatriculations",
        "transports",
        "voitures",
    ]
    assert body["license"] == "fr-lo"
    assert isinstance(body["resources"], list) and body["resources"]
    for resource in body["resources"]:
        assert set(resource) == RESOURCE_KEYS
        assert resource["latest"] == f"{API}1/datasets/r/{resource['id']}"
        assert resource["url"].startswith(f"{SITE}_ext/")
    assert body["uri"] == f"{API}1/datasets/{TRANSPORTS}/"
    assert body["page"] == f"{SITE}datasets/transports/"
    assert "_twin" not in str(body)


def test_v1_dataset_by_slug_and_errors(client: TestClient, store: Any) -> None:
    assert get(client, "/api/1/datasets/transports/")["id"] == TRANSPORTS
    assert get(client, "/api/1/datasets/000000000000000000000000/", 404) == NOT_FOUND
    deleted = next(d for d in store.datasets.values() if d["deleted"])
    assert get(client, f"/api/1/datasets/{deleted['id']}/", 410) == {
        "message": "Dataset has been deleted"
    }


def test_v1_dataset_resources(client: TestClient) -> None:
    one = get(client, f"/api/1/datasets/{RNE}/resources/{ELUS_RESOURCE}/")
    assert one["id"] == ELUS_RESOURCE and one["format"] == "csv"
    missing = f"/api/1/datasets/{RNE}/resources/00000000-0000-0000-0000-000000000000/"
    assert get(client, missing, 404) == {"message": "Resource does not exist"}


def test_v1_list_envelope_and_pagination_links(client: TestClient) -> None:
    first = get(client, "/api/1/datasets/?q=transports&page_size=2")
    assert list(first) == ENVELOPE_KEYS
    assert first["page"] == 1 and first["page_size"] == 2 and first["total"] > 2
    assert first["previous_page"] is None
    assert first["next_page"] == f"{API}1/datasets/?q=transports&page_size=2&page=2"
    assert isinstance(first["data"][0]["resources"], list)
    last_page = -(-first["total"] // 2)
    last = get(client, f"/api/1/datasets/?q=transports&page_size=2&page={last_page}")
    assert last["next_page"] is None and last["previous_page"] is not None
    assert get(client, "/api/1/datasets/?page_size=abc", 400)["errors"] == {
        "page_size": "invalid literal for int() with base 10: 'abc'"
    }


def test_v2_dataset_has_resource_link_objects(client: TestClient) -> None:
    body = get(client, f"/api/2/datasets/{CATALOGUE}/")
    # the v2 model (DEFAULT_MASK_APIV2) has community_resources and no dataset-level schema
    assert set(body) == DATASET_KEYS - {"schema"}
    assert body["resources"] == {
        "rel": "subsection",
        "href": f"{API}2/datasets/{CATALOGUE}/resources/?page=1&page_size=50",
        "type": "GET",
        "total": 8,
    }
    assert body["community_resources"]["total"] == 0
    page = get(client, f"/api/2/datasets/{CATALOGUE}/resources/?page=2&page_size=5")
    assert page["total"] == 8 and len(page["data"]) == 3


def test_v2_dataset_search(client: TestClient) -> None:
    body = get(client, "/api/2/datasets/search/?q=catalogue%20data.gouv.fr&page_size=5")
    assert list(body) == [*ENVELOPE_KEYS, "facets"]  # the v2 search pager (udata search_pager)
    top = body["data"][0]
    assert top["id"] == CATALOGUE
    assert top["resources"]["total"] == 8
    assert top["organization"]["name"] == "data.gouv.fr"
    assert top["description_short"]
    empty = get(client, "/api/2/datasets/search/?q=neurologie")
    assert empty["total"] == 0 and empty["data"] == []


def test_v2_resource_wraps_the_dataset_id(client: TestClient) -> None:
    body = get(client, f"/api/2/datasets/resources/{ELUS_RESOURCE}/")
    assert list(body) == ["resource", "dataset_id"]
    assert body["dataset_id"] == RNE
    assert set(body["resource"]) == RESOURCE_KEYS
    assert isinstance(body["resource"]["filesize"], int)
    missing = "/api/2/datasets/resources/00000000-0000-0000-0000-000000000000/"
    assert get(client, missing, 404) == {"message": "Resource does not exist"}


def test_dataservice_and_its_yaml_spec_on_the_twin_host(client: TestClient) -> None:
    body = get(client, f"/api/1/dataservices/{BAN}/")
    assert body["machine_documentation_url"] == f"{SITE}_ext/data.geopf.fr/geocodage/openapi.yaml"
    assert body["base_api_url"] == "https://data.geopf.fr/geocodage/"
    assert body["datasets"]["total"] == 1 and body["datasets"]["rel"] == "subsection"
    assert body["organization"]["name"].startswith("Institut national de l'information")
    spec = client.get(body["machine_documentation_url"])
    assert spec.status_code == 200
    assert spec.headers["content-type"].startswith("application/yaml")
    parsed = yaml.safe_load(spec.text)
    assert {"/search", "/reverse", "/search/csv", "/reverse/csv"} <= set(parsed["paths"])
    assert get(client, "/api/1/dataservices/000000000000000000000000/", 404) == NOT_FOUND


def test_every_spec_parses_and_json_urls_serve_json(client: TestClient, store: Any) -> None:
    with_spec = [s for s in store.dataservices.values() if s["id"] in store.specs]
    assert len(with_spec) >= 12
    for record in with_spec:
        body = get(client, f"/api/1/dataservices/{record['id']}/")
        response = client.get(body["machine_documentation_url"])
        assert response.status_code == 200, record["title"]
        if response.headers["content-type"].startswith("application/json"):
            spec = response.json()
        else:
            spec = yaml.safe_load(response.text)
        assert spec["info"]["title"] and spec["paths"], record["title"]


def test_dataservice_without_spec_keeps_null_doc_url(client: TestClient, store: Any) -> None:
    without = [s for s in store.dataservices.values() if s["id"] not in store.specs]
    assert without
    assert (
        get(client, f"/api/1/dataservices/{without[0]['id']}/")["machine_documentation_url"] is None
    )


def test_v2_dataservice_and_organization_search(client: TestClient) -> None:
    services = get(client, "/api/2/dataservices/search/?q=g%C3%A9ocodage%20adresse")
    assert services["data"][0]["id"] == BAN
    assert {"base_api_url", "machine_documentation_url", "tags", "organization"} <= set(
        services["data"][0]
    )
    orgs = get(client, "/api/2/organizations/search/?q=insee")
    assert orgs["total"] == 1
    org = orgs["data"][0]
    assert org["acronym"] == "Insee"
    assert org["badges"] == [{"kind": "public-service"}, {"kind": "certified"}]
    assert {"datasets", "reuses", "followers", "views"} <= set(org["metrics"])
    assert org["page"].startswith(SITE)


def test_organization_and_its_datasets(client: TestClient) -> None:
    org = get(client, "/api/1/organizations/etalab/")
    assert org["id"] == "534fff75a3a7292c64a77de4"
    page = get(client, f"/api/1/organizations/{org['id']}/datasets/?page_size=1")
    assert list(page) == ENVELOPE_KEYS
    assert page["total"] == org["metrics"]["datasets"] > 1
    assert page["next_page"] is not None
    assert get(client, "/api/1/organizations/nope/", 404) == NOT_FOUND


def test_unknown_api_route_is_a_udata_404(client: TestClient) -> None:
    assert get(client, "/api/1/reuses/nothing/", 404) == NOT_FOUND
