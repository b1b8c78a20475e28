"""Every catalogue dataset is whole: generated resources and quality, marked as generated."""

from __future__ import annotations

from typing import Any

import httpx
from starlette.testclient import TestClient

from datagouv_eval_pipeline.world.catalogue import catalogue_export, generated
from datagouv_eval_pipeline.world.catalogue.catalog import CatalogStore
from datagouv_eval_pipeline.world.catalogue.urls import TwinUrls
from datagouv_eval_pipeline.world.mcp.client import call_tools_sync, result_text
from datagouv_eval_pipeline.world.mcp.server import mcp_url

# A dataset of the real catalogue, outside the hand-written records: its export row says
# 6 resources, 2 of them main, in the format "esri shapefile (shp)"; quality score 0.56.
DATASET = "6969c228770f993ed4817ef7"
QUALITY_KEYS = {
    "all_resources_available",
    "dataset_description_quality",
    "has_open_format",
    "has_resources",
    "license",
    "resources_documentation",
    "spatial",
    "temporal_coverage",
    "update_frequency",
    "update_fulfilled_in_time",
    "score",
}


def export_row(store: CatalogStore) -> dict[str, Any]:
    table = store.table(catalogue_export.RESOURCE_ID)
    assert table is not None
    names = [c.name for c in catalogue_export.COLUMNS]
    row = next(r for r in table.rows if r[0] == DATASET)
    return dict(zip(names, row, strict=True))


def test_v1_and_v2_list_as_many_resources_as_the_export_row(
    client: TestClient, store: CatalogStore
) -> None:
    assert DATASET not in store.datasets
    row = export_row(store)
    assert (row["resources_count"], row["main_resources_count"]) == (6, 2)
    v1 = client.get(f"/api/1/datasets/{DATASET}/").json()
    resources = v1["resources"]
    assert len(resources) == 6
    assert [r["type"] for r in resources] == ["main"] * 2 + ["documentation"] * 4
    assert {r["format"] for r in resources} == {"esri shapefile (shp)"}
    assert all(r["extras"] == {generated.GENERATED_KEY: True} for r in resources)
    assert all(r["last_modified"].startswith("2026-01-15") for r in resources)
    assert resources[0]["url"].startswith(
        "http://testserver/_ext/static.data.gouv.fr/resources/"
        "x-hamster-parcelles-prospectees-2025-r44/20260115-000000/"
    )
    assert v1["extras"] == {generated.GENERATED_KEY: ["resources", "quality"]}
    assert set(v1["quality"]) == QUALITY_KEYS and v1["quality"]["score"] == 0.56
    # The criteria met add up to the export's score: 5 of 9.
    assert sum(v is True for k, v in v1["quality"].items() if k != "has_resources") == 5
    v2 = client.get(f"/api/2/datasets/{DATASET}/").json()
    assert v2["resources"]["total"] == 6 and v2["quality"] == v1["quality"]
    listed = client.get(f"/api/2/datasets/{DATASET}/resources/").json()
    assert [r["id"] for r in listed["data"]] == [r["id"] for r in resources]
    one = client.get(f"/api/2/datasets/resources/{resources[3]['id']}/").json()
    assert one["dataset_id"] == DATASET and one["resource"] == resources[3]


def test_a_generated_download_is_a_marked_placeholder(client: TestClient) -> None:
    resources = client.get(f"/api/1/datasets/{DATASET}/").json()["resources"]
    response = client.get(resources[0]["url"])
    assert response.status_code == 200
    assert response.headers["X-Twin-Generated"] == "true"
    assert response.headers["X-Twin-Placeholder"] == "true"
    assert "generated from the catalogue export's facts" in response.text
    # CSV and JSON generated files are placeholders of their format.
    search = client.get("/api/2/datasets/search/", params={"q": "communes", "format": "csv"})
    first = search.json()["data"][0]["id"]
    v1 = client.get(f"/api/1/datasets/{first}/").json()
    csv = next(r for r in v1["resources"] if r["format"] == "csv")
    body = client.get(csv["url"])
    assert body.headers["content-type"].startswith("text/csv") and body.text.startswith("note\n")


def test_a_generated_resource_id_finds_its_dataset(client: TestClient) -> None:
    rid = generated.resource_id(DATASET, 4)
    found = client.get("/api/2/datasets/search/", params={"q": rid}).json()
    assert [d["id"] for d in found["data"]] == [DATASET]
    assert (
        client.get(f"/api/2/datasets/resources/{generated.resource_id(DATASET, 6)}/").status_code
        == 404
    )


def test_mcp_0_2_26_lists_the_generated_resources(live_twin: TwinUrls) -> None:
    (result,) = call_tools_sync(
        mcp_url(live_twin.site, "0.2.26"), [("list_dataset_resources", {"dataset_id": DATASET})]
    )
    text = result_text(result)
    assert "Total resources: 6" in text
    assert f"Resource ID: {generated.resource_id(DATASET, 5)}" in text
    assert "Format: esri shapefile (shp)" in text


def test_the_resources_download_over_http(live_twin: TwinUrls) -> None:
    with httpx.Client(timeout=30) as http:
        v1 = http.get(f"{live_twin.datagouv_api}1/datasets/{DATASET}/").json()
        response = http.get(v1["resources"][1]["url"])
    assert response.status_code == 200 and response.headers["X-Twin-Generated"] == "true"
