"""The real ``datagouv-client`` library (import ``datagouv``, 0.5.x) reads the twin over HTTP.

What the library needs (read from its source, see docs/twin.md "The datagouv-client library"):

* ``Client(environment)`` only accepts ``www``/``prod``/``demo``/``dev``; the main-API root is the
  plain attribute ``Client.base_url`` (``https://www.data.gouv.fr``), read at every call. Setting
  it to the twin's site root (without the trailing slash) moves every main-API call.
* The Tabular URL is hard-coded: ``Resource.__init__`` sets ``tabular_api_url`` to
  ``https://tabular-api.data.gouv.fr/api/resources/{id}/`` when the resource has a
  ``preview_url``. Overriding that attribute moves ``profile``, ``columns`` and ``rows()``.
* The Metrics URL is hard-coded too, in the attribute ``_base_metrics_url``.
"""

from __future__ import annotations

import pytest
from datagouv import Client, Resource  # type: ignore[import-untyped]

from datagouv_eval_pipeline.world.catalogue.catalog import CatalogStore
from datagouv_eval_pipeline.world.catalogue.urls import TwinUrls

SPORTS = "53699ebba3a729239d205f4f"
SPORTS_TABLE = "ea4f5879-af40-4e3e-949d-812d6eeb5e02"
PRODUCTION_METRICS = "https://metric-api.data.gouv.fr/api/"


def twin_client(urls: TwinUrls) -> Client:
    """A production client whose main-API root is the twin (the library's own attribute)."""
    client = Client(environment="www")
    client.base_url = urls.site.rstrip("/")
    return client


def on_twin(resource: Resource, urls: TwinUrls) -> Resource:
    """Point a resource's hard-coded Tabular URL at the twin."""
    resource.tabular_api_url = f"{urls.tabular_api}resources/{resource.id}/"
    return resource


def test_the_environment_argument_takes_no_custom_url() -> None:
    with pytest.raises(ValueError, match="environment"):
        Client(environment="http://127.0.0.1:8765")


def test_reads_a_dataset(live_twin: TwinUrls, store: CatalogStore) -> None:
    record = store.dataset(SPORTS)
    assert record is not None
    dataset = twin_client(live_twin).dataset(SPORTS)
    assert dataset.uri == f"{live_twin.datagouv_api}1/datasets/{SPORTS}/"
    assert dataset.title == record["title"]
    assert dataset.frequency == record["frequency"]
    assert dataset.organization.name == record["organization"]["name"]
    assert [r.id for r in dataset.resources] == [r["id"] for r in record["resources"]]
    assert all(r.dataset_id == SPORTS for r in dataset.resources)


def test_reads_a_resource_through_the_v2_lookup(live_twin: TwinUrls, store: CatalogStore) -> None:
    found = store.resource(SPORTS_TABLE)
    assert found is not None
    resource = twin_client(live_twin).resource(SPORTS_TABLE)
    # No dataset id given: the library found it with GET /api/2/datasets/resources/{rid}/.
    assert resource.dataset_id == SPORTS
    assert resource.uri == f"{live_twin.datagouv_api}1/datasets/{SPORTS}/resources/{SPORTS_TABLE}/"
    assert (resource.title, resource.format) == (found[1]["title"], found[1]["format"])
    assert resource.filesize == found[1]["filesize"]
    # Until overridden, the Tabular URL is production's: the reason for on_twin().
    assert resource.tabular_api_url.startswith("https://tabular-api.data.gouv.fr/api/")


def test_reads_the_profile_and_filtered_rows(live_twin: TwinUrls, store: CatalogStore) -> None:
    table = store.table(SPORTS_TABLE)
    assert table is not None
    resource = on_twin(twin_client(live_twin).resource(SPORTS_TABLE), live_twin)
    assert resource.columns == table.header
    # rows() follows links.next through every page (20 rows each by default).
    rows = list(resource.rows([("dep_code", "==", "32")]))
    assert len(rows) == 1023
    assert all(row["dep_code"] == "32" for row in rows)
    assert [row["__id"] for row in rows] == sorted({row["__id"] for row in rows})
    assert list(rows[0]) == ["__id", *table.header]


def test_downloads_the_file_of_a_tabular_resource(live_twin: TwinUrls, store: CatalogStore) -> None:
    table = store.table(SPORTS_TABLE)
    assert table is not None
    resource = twin_client(live_twin).resource(SPORTS_TABLE)
    assert resource.url.startswith(live_twin.site)  # the twin serves the file itself
    assert resource.download_buffer().read().decode("utf-8") == table.source_text


def test_reads_monthly_metrics(live_twin: TwinUrls) -> None:
    dataset = twin_client(live_twin).dataset(SPORTS, fetch=False)
    assert dataset._base_metrics_url.startswith(PRODUCTION_METRICS)
    dataset._base_metrics_url = dataset._base_metrics_url.replace(
        PRODUCTION_METRICS, live_twin.metrics_api
    )
    months = list(dataset.get_monthly_traffic_metrics(start_month="2026-05", end_month="2026-05"))
    assert [
        (m["metric_month"], m["monthly_visit"], m["monthly_download_resource"]) for m in months
    ] == [("2026-05", 3418, 1276)]
