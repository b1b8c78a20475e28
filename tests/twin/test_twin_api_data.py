"""Tabular, Metrics and crawler APIs through the ASGI app."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from starlette.testclient import TestClient

from datagouv_eval_pipeline.world.api.app import TwinConfig, create_app
from datagouv_eval_pipeline.world.catalogue.catalog import CatalogStore

TAB = "/tabular/api/resources"
TABULAR_BASE = "http://testserver/tabular/api/resources"
CATALOGUE_CSV = "f868cca6-8da1-4369-a78d-47463f19a9a3"
SPORTS = "ea4f5879-af40-4e3e-949d-812d6eeb5e02"
ELUS = "3b6b2281-b9d9-4959-ae9d-c2c166dff118"
PALISSY = "3e8ed2dd-4052-4f93-ad19-ef71016ab7b4"
SPORTS_DATASET = "53699ebba3a729239d205f4f"


def get(client: TestClient, path: str, status: int = 200) -> Any:
    response = client.get(path)
    assert response.status_code == status, response.text
    return response.json()


def test_resource_meta_links(client: TestClient) -> None:
    body = get(client, f"{TAB}/{SPORTS}/")
    assert [link["rel"] for link in body["links"]] == ["profile", "data", "swagger"]
    assert body["links"][1]["href"] == f"{TABULAR_BASE}/{SPORTS}/data/"
    assert body["url"].startswith("http://testserver/_ext/")


def test_profile_matches_the_data_keys(client: TestClient) -> None:
    body = get(client, f"{TAB}/{ELUS}/profile/")
    assert list(body) == ["profile", "deleted_at", "dataset_id", "indexes"]
    assert body["dataset_id"] == "5c34c4d1634f4173183a64f1"
    header = body["profile"]["header"]
    assert isinstance(body["profile"]["columns"], dict)
    row = get(client, f"{TAB}/{ELUS}/data/?page_size=1")["data"][0]
    assert list(row) == ["__id", *header]


def test_data_envelope_meta_and_links(client: TestClient) -> None:
    body = get(client, f"{TAB}/{ELUS}/data/?page=2&page_size=5")
    assert list(body) == ["data", "links", "meta"]
    assert body["meta"]["page"] == 2 and body["meta"]["page_size"] == 5
    assert body["meta"]["total"] == 769
    assert [row["__id"] for row in body["data"]] == [6, 7, 8, 9, 10]
    links = body["links"]
    assert links["profile"] == f"{TABULAR_BASE}/{ELUS}/profile/"
    assert links["swagger"] == f"{TABULAR_BASE}/{ELUS}/swagger/"
    assert links["next"] == f"{TABULAR_BASE}/{ELUS}/data/?page_size=5&page=3"
    assert links["prev"] == f"{TABULAR_BASE}/{ELUS}/data/?page_size=5&page=1"
    last = get(client, f"{TAB}/{ELUS}/data/?page=154&page_size=5")
    assert len(last["data"]) == 4 and last["links"]["next"] is None


def test_pages_under_one_and_page_size_zero_as_api_tabular(client: TestClient) -> None:
    # api-tabular's build_offset: a page under 2 reads from row 1 and is echoed as given;
    # page_size=0 sends no limit to PostgREST, so every row comes back.
    for page in (0, -1):
        body = get(client, f"{TAB}/{ELUS}/data/?page={page}&page_size=5")
        assert body["meta"] == {"page": page, "page_size": 5, "total": 769}
        assert [row["__id"] for row in body["data"]] == [1, 2, 3, 4, 5]
        assert body["links"]["prev"] is None
        assert body["links"]["next"] == f"{TABULAR_BASE}/{ELUS}/data/?page_size=5&page={page + 1}"
    everything = get(client, f"{TAB}/{ELUS}/data/?page_size=0")
    assert everything["meta"] == {"page": 1, "page_size": 0, "total": 769}
    assert len(everything["data"]) == 769
    assert everything["links"]["next"] == f"{TABULAR_BASE}/{ELUS}/data/?page_size=0&page=2"


def test_default_page_size_is_20(client: TestClient) -> None:
    body = get(client, f"{TAB}/{SPORTS}/data/")
    assert body["meta"]["page_size"] == 20 and len(body["data"]) == 20


def test_filter_and_sort_over_http(client: TestClient) -> None:
    body = get(
        client, f"{TAB}/{SPORTS}/data/?dep_code__exact=32&equip_long__sort=desc&page_size=50"
    )
    assert body["meta"]["total"] == 1023
    assert {row["dep_code"] for row in body["data"]} == {"32"}
    lengths = [row["equip_long"] for row in body["data"]]
    assert lengths == sorted(lengths, reverse=True)
    asc = get(client, f"{TAB}/{SPORTS}/data/?dep_code__exact=32&equip_long__sort=asc&page_size=3")
    assert [r["equip_long"] for r in asc["data"]] == sorted(r["equip_long"] for r in asc["data"])
    contains = get(client, f"{TAB}/{SPORTS}/data/?new_name__contains=auch&page_size=50")
    assert contains["meta"]["total"] > 0
    assert all("auch" in row["new_name"].lower() for row in contains["data"])
    column = quote("Libellé de la commune")
    toulouse = get(client, f"{TAB}/{ELUS}/data/?{column}__exact=Toulouse&page_size=1")
    assert toulouse["meta"]["total"] == 69


def test_the_two_task_facts_over_http(client: TestClient) -> None:
    before = get(
        client, f"{TAB}/{CATALOGUE_CSV}/data/?created_at__strictly_less=2012-06-28&page_size=1"
    )
    # 2064 datasets of the real export and the twin's two hand-made ones of 2011 and 2012.
    assert before["meta"]["total"] == 2066
    # Five real datasets carry 2012-06-27T00:00:00: ``less`` (inclusive) on the 27th keeps
    # them, ``strictly_less`` drops them.
    inclusive = get(client, f"{TAB}/{CATALOGUE_CSV}/data/?created_at__less=2012-06-27&page_size=1")
    assert inclusive["meta"]["total"] == 2066
    off_by_one = get(
        client, f"{TAB}/{CATALOGUE_CSV}/data/?created_at__strictly_less=2012-06-27&page_size=1"
    )
    assert off_by_one["meta"]["total"] == 2061
    gers = get(client, f"{TAB}/{SPORTS}/data/?dep_code__exact=32&page_size=1")
    assert gers["meta"]["total"] == 1023


def test_page_size_limit_error_and_configurable_maximum(
    client: TestClient, store: CatalogStore
) -> None:
    assert get(client, f"{TAB}/{SPORTS}/data/?page_size=51", 400) == {
        "errors": [
            {
                "code": None,
                "title": "Invalid query string",
                "detail": "Page size exceeds allowed maximum: 50",
            }
        ]
    }
    with TestClient(create_app(store, TwinConfig(tabular_page_size_max=200))) as wide:
        assert len(get(wide, f"{TAB}/{SPORTS}/data/?page_size=200")["data"]) == 200
        assert get(wide, f"{TAB}/{SPORTS}/data/?page_size=201", 400)["errors"][0]["detail"] == (
            "Page size exceeds allowed maximum: 200"
        )


def test_unknown_column_and_bad_value(client: TestClient) -> None:
    body = get(client, f"{TAB}/{SPORTS}/data/?departement__exact=32", 400)
    detail = body["errors"][0]["detail"]
    assert body["errors"][0]["title"] == "Database error"
    assert detail["code"] == "42703" and detail["message"].endswith(".departement does not exist")
    bad = get(client, f"{TAB}/{SPORTS}/data/?equip_long__greater=long", 400)
    assert bad["errors"][0]["detail"]["code"] == "22P02"


def test_resource_not_in_tabular_is_a_plain_404(client: TestClient) -> None:
    for path in (f"{TAB}/{PALISSY}/", f"{TAB}/{PALISSY}/profile/", f"{TAB}/{PALISSY}/data/"):
        response = client.get(path)
        assert response.status_code == 404
        assert response.headers["content-type"].startswith("text/plain")
        assert response.text == "404: Not Found"


def test_csv_export(client: TestClient) -> None:
    response = client.get(
        f"{TAB}/{SPORTS}/data/csv/?dep_code__exact=32&columns=equip_numero,dep_code"
    )
    assert response.status_code == 200
    lines = response.text.splitlines()
    assert lines[0] == "equip_numero,dep_code"  # columns= selects exactly these
    assert len(lines) == 1 + 1023
    assert all(line.endswith(",32") for line in lines[1:])


def test_swagger_lists_column_filters(client: TestClient) -> None:
    body = get(client, f"{TAB}/{SPORTS}/swagger/")
    parameters = body["paths"][f"/resources/{SPORTS}/data/"]["get"]["parameters"]
    names = {p["name"] for p in parameters}
    assert {"dep_code__exact", "dep_code__sort", "page_size"} <= names


def test_metrics_sorted_by_month(client: TestClient) -> None:
    base = f"/metrics/api/datasets/data/?dataset_id__exact={SPORTS_DATASET}"
    desc = get(client, f"{base}&metric_month__sort=desc&page_size=12")
    months = [row["metric_month"] for row in desc["data"]]
    assert months[0] == "2026-05" and months == sorted(months, reverse=True)
    assert desc["data"][0]["monthly_visit"] == 3418
    assert desc["data"][0]["monthly_download_resource"] == 1276
    assert set(desc["data"][0]) == {
        "__id",
        "dataset_id",
        "organization_id",
        "metric_month",
        "monthly_visit",
        "monthly_download_resource",
    }
    assert list(desc["links"]) == ["next", "prev"]
    asc = get(client, f"{base}&metric_month__sort=asc&page_size=3")
    assert [r["metric_month"] for r in asc["data"]] == ["2023-06", "2023-07", "2023-08"]
    assert get(client, f"{base}&page_size=51", 400)["errors"][0]["detail"] == (
        "Page size exceeds allowed maximum: 50"
    )


def test_resource_metrics_add_up_to_the_dataset_downloads(client: TestClient) -> None:
    rows = get(
        client,
        f"/metrics/api/resources/data/?dataset_id__exact={SPORTS_DATASET}&metric_month__exact=2026-05",
    )["data"]
    assert {"resource_id", "dataset_id", "metric_month", "monthly_download_resource"} <= set(
        rows[0]
    )
    assert sum(row["monthly_download_resource"] for row in rows) == 1276


def test_metrics_has_some_null_downloads_and_unknown_models_404(client: TestClient) -> None:
    nulls = get(
        client, "/metrics/api/datasets/data/?monthly_download_resource__isnull=&page_size=1"
    )
    assert nulls["meta"]["total"] > 0
    assert client.get("/metrics/api/reuses/data/").status_code == 404


def test_crawler_exceptions(client: TestClient) -> None:
    body = get(client, "/crawler/api/resources-exceptions")
    assert isinstance(body, list) and body
    assert {"id", "resource_id", "table_indexes", "comment"} <= set(body[0])
    ids = {entry["resource_id"] for entry in body}
    assert SPORTS in ids and PALISSY not in ids


def test_tabular_or_filter_and_aggregation_403_over_http(client: TestClient) -> None:
    everything = get(client, f"{TAB}/{SPORTS}/data/?page_size=1")["meta"]["total"]
    rows = get(client, f"{TAB}/{SPORTS}/data/?page_size=50")["data"]
    column = "dep_code"
    first, second = sorted({r[column] for r in rows if r[column]})[:2]

    def total(query: str) -> int:
        return int(get(client, f"{TAB}/{SPORTS}/data/?{query}&page_size=1")["meta"]["total"])

    one, two = total(f"{column}__exact={first}"), total(f"{column}__exact={second}")
    either = total(f"or=({column}__exact.{first},{column}__exact.{second})")
    # the OR is applied (it used to be ignored: every row), as the union of the two
    assert either == one + two < everything
    response = client.get(f"{TAB}/{SPORTS}/data/?{column}__groupby")
    assert response.status_code == 403
    assert response.json()["errors"][0]["title"] == "Unauthorized parameters"
