"""Production's search clause by clause: declared filters, choices, synonyms and id clauses.

Each rule comes from udata 17.6.0 and udata-search-service (see docs/twin.md, "Search").
"""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from datagouv_eval_pipeline.world.catalogue.catalog import CatalogStore

V2 = "/api/2/datasets/search/"
V1 = "/api/1/datasets/"
INVALID = "Input payload validation failed"
SORT_HELP = "The field (and direction) on which sorting apply"


def get(client: TestClient, path: str, **params: Any) -> tuple[int, Any]:
    response = client.get(path, params=params)
    return response.status_code, response.json()


@pytest.mark.parametrize("path", [V1, V2])
def test_a_license_filter_keeps_only_that_license(client: TestClient, path: str) -> None:
    _, everything = get(client, path, q="transport")
    status, odbl = get(client, path, q="transport", license="odc-odbl", page_size=100)
    assert status == 200
    assert 0 < odbl["total"] < everything["total"]
    assert {d["license"] for d in odbl["data"]} == {"odc-odbl"}


@pytest.mark.parametrize(
    ("params", "check"),
    [
        ({"featured": "true"}, lambda d: d["featured"] is True),
        ({"featured": "false"}, lambda d: d["featured"] is False),
        ({"granularity": "fr:commune"}, lambda d: d["spatial"]["granularity"] == "fr:commune"),
    ],
)
@pytest.mark.parametrize("path", [V1, V2])
def test_boolean_and_granularity_filters_apply(
    client: TestClient, path: str, params: dict[str, str], check: Any
) -> None:
    _, everything = get(client, path, q="transport")
    status, page = get(client, path, q="transport", page_size=100, **params)
    assert status == 200 and 0 < page["total"] < everything["total"]
    assert all(check(d) for d in page["data"])


def test_v2_filters_on_the_publisher_and_the_formats(
    client: TestClient, store: CatalogStore
) -> None:
    _, everything = get(client, V2, q="transport")
    _, local = get(client, V2, q="transport", producer_type="local-authority", page_size=100)
    assert 0 < local["total"] < everything["total"]
    for dataset in local["data"]:
        org = store.organizations[dataset["organization"]["id"]]
        assert "local-authority" in {b["kind"] for b in org["badges"]}
    _, badge = get(client, V2, q="transport", organization_badge="public-service")
    assert 0 < badge["total"] < everything["total"]
    _, geo = get(client, V2, q="transport", format_family="geographical")
    assert 0 < geo["total"] < everything["total"]
    # The export's datasets are all open: no restricted transport dataset.
    assert get(client, V2, q="transport", access_type="restricted")[1]["total"] == 0
    # A zone the catalogue export does not carry narrows to the curated records that have it.
    assert get(client, V2, q="transport", geozone="country:fr")[1]["total"] < 10


@pytest.mark.parametrize(
    ("path", "params", "name", "message"),
    [
        (V2, {"sort": "bogus"}, "sort", f"{SORT_HELP} The value 'bogus' is not a valid choice"),
        (V1, {"sort": "bogus"}, "sort", f"{SORT_HELP} The value 'bogus' is not a valid choice"),
        (
            V2,
            {"last_update_range": "yesterday"},
            "last_update_range",
            "The value 'yesterday' is not a valid choice for 'last_update_range'.",
        ),
        (V2, {"format_family": "video"}, "format_family", "The value 'video' is not a valid"),
        (V2, {"featured": "maybe"}, "featured", "Invalid literal for boolean(): maybe"),
        (V1, {"access_type": "secret"}, "access_type", "The value 'secret' is not a valid"),
        (V2, {"temporal_coverage": "2020"}, "temporal_coverage", "A date range expressed"),
        (
            "/api/2/organizations/search/",
            {"producer_type": "user"},
            "producer_type",
            "The value 'user' is not a valid",
        ),
        ("/api/1/organizations/", {"sort": "title"}, "sort", SORT_HELP),
        ("/api/2/dataservices/search/", {"sort": "title"}, "sort", SORT_HELP),
        ("/api/1/dataservices/", {"sort": "bogus"}, "sort", SORT_HELP),
    ],
)
def test_an_unknown_choice_is_udatas_400(
    client: TestClient, path: str, params: dict[str, str], name: str, message: str
) -> None:
    status, body = get(client, path, q="transport", **params)
    assert status == 400
    assert set(body) == {"errors", "message"} and body["message"] == INVALID
    assert list(body["errors"]) == [name]
    assert body["errors"][name].startswith(message)


def test_v1_checks_identifiers_before_searching(client: TestClient) -> None:
    status, body = get(client, V1, organization="not-an-id")
    assert (status, body) == (400, {"message": "Organization arg must be an identifier"})


def test_a_dataset_or_resource_id_finds_its_dataset_on_v2_only(
    client: TestClient, store: CatalogStore
) -> None:
    curated = "55e4129788ee386899a46ec1"
    catalogue = store.search_datasets("contour communes").ids[0]
    for dataset_id in (curated, catalogue):
        assert [d["id"] for d in get(client, V2, q=dataset_id)[1]["data"]] == [dataset_id]
        assert get(client, V1, q=dataset_id)[1]["total"] == 0  # v1 searches titles only
    resource = store.datasets[curated]["resources"][0]["id"]
    assert [d["id"] for d in get(client, V2, q=resource)[1]["data"]] == [curated]


@pytest.mark.parametrize(
    ("query", "wanted"),
    [
        ("AMD", "60a518cbcb47626d4cc74bf9"),  # administrateurs ministériels des données
        ("ovq", "5ff5e6e99724cb8fff59a5be"),  # Baromètre des résultats de l'action publique
        ("lolf 2016", "5625fba688ee3820e912613c"),  # Projet de loi de finances pour 2016
        ("waldec", "58e53811c751df03df38f42d"),  # Répertoire National des Associations
        ("rp 2020", "655ecfa75ba65b16eca6435b"),  # Recensement population 2020
    ],
)
def test_production_synonyms_expand_v2_queries(
    store: CatalogStore, query: str, wanted: str
) -> None:
    assert wanted in store.search_datasets(query, page_size=3).ids
    assert wanted not in store.search_datasets(query, page_size=20, api=1).ids


def test_synonyms_match_words_before_stemming(store: CatalogStore) -> None:
    # "contour" is a synonym of "découpage"; "contours" is not (the filter runs before the
    # stemmer), so only the first query finds the "Découpage administratif" dataset.
    decoupage = "683424208089f77caf78f448"
    assert decoupage in store.search_datasets("contour communes", page_size=20).ids
    assert decoupage not in store.search_datasets("contours communes", page_size=20).ids


def test_v1_sorts_by_title_when_asked(client: TestClient) -> None:
    _, page = get(client, V1, q="transport", sort="title", page_size=20)
    titles = [d["title"] for d in page["data"]]
    assert titles == sorted(titles)
