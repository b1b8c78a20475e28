"""/api/1/site/ and the organization objects carry udata's fields (udata 17.6.0)."""

from __future__ import annotations

from starlette.testclient import TestClient

from datagouv_eval_pipeline.world.catalogue.catalog import CatalogStore

INSEE = "534fff81a3a7292c64a77e5c"
PERMISSIONS = {"edit": False, "delete": False, "members": False, "harvest": False, "private": False}
# udata core/site/models.py Site.__metrics_keys__.
SITE_METRICS = [
    "max_dataset_followers",
    "max_dataset_reuses",
    "max_reuse_datasets",
    "max_reuse_followers",
    "max_org_followers",
    "max_org_reuses",
    "max_org_datasets",
    "datasets",
    "datasets_visits_by_months",
    "discussions",
    "followers",
    "organizations",
    "public-service",
    "resources",
    "resources_downloads_by_months",
    "reuses",
    "dataservices",
    "users",
    "harvesters",
    "users_by_months",
    "datasets_by_months",
    "harvesters_by_months",
    "reuses_by_months",
    "organizations_by_months",
    "discussions_by_months",
]


def test_site_reports_every_metric_udata_keeps(client: TestClient, store: CatalogStore) -> None:
    site = client.get("/api/1/site/").json()
    assert list(site) == ["id", "title", "keywords", "feed_size", "metrics", "version"]
    metrics = site["metrics"]
    assert list(metrics) == SITE_METRICS
    assert metrics["datasets"] == store.dataset_count()[1] == 70_490
    # The generated resources count: every live dataset's export row, plus the curated ones.
    assert store.catalogue is not None
    live = ~store.catalogue.archived()
    curated = sum(len(d["resources"]) for d in store.datasets.values() if store._visible_dataset(d))
    assert (
        metrics["resources"] == int(store.catalogue.ints("resources_count")[live].sum()) + curated
    )
    assert metrics["organizations"] == len(store.organizations)
    assert 0 < metrics["public-service"] < metrics["organizations"]
    assert metrics["max_dataset_followers"] >= max(
        d["metrics"].get("followers", 0) for d in store.datasets.values()
    )


def test_organizations_and_their_references_carry_udatas_fields(client: TestClient) -> None:
    org = client.get(f"/api/1/organizations/{INSEE}/").json()
    assert org["permissions"] == PERMISSIONS
    assert (org["image_url"], org["teams"], org["ext"], org["zone"]) == (None, [], {}, None)
    keys = list(org)
    assert keys.index("image_url") == keys.index("url") + 1
    assert keys[keys.index("members") + 1 : keys.index("members") + 4] == ["teams", "ext", "zone"]
    listed = client.get("/api/2/organizations/search/", params={"q": "insee"}).json()["data"]
    assert all(o["permissions"] == PERMISSIONS for o in listed)
    dataset = client.get("/api/1/datasets/55e4129788ee386899a46ec1/").json()
    assert dataset["organization"]["id"] == INSEE
    assert dataset["organization"]["permissions"] == PERMISSIONS
    v2 = client.get("/api/2/datasets/55e4129788ee386899a46ec1/").json()
    assert v2["organization"]["permissions"] == PERMISSIONS
