"""udata's X-Get-Datasets-Full-Objects header on the twin served over real sockets."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from datagouv_eval_pipeline.world.catalogue.urls import TwinUrls

CATALOGUE = "5d13a8b6634f41070a43dff3"  # daily, lov2, country coverage of France
HAMSTER = "6969c228770f993ed4817ef7"  # catalogue facts: no frequency, lov2, granularity other
FULL_KEY = "X-Get-Datasets-Full-Objects"
FULL = {FULL_KEY: "True"}
LOV2: dict[str, Any] = {
    "id": "lov2",
    "title": "Licence Ouverte / Open Licence version 2.0",
    "maintainer": None,
    "url": None,
    "flags": [],
    "alternate_urls": [],
    "alternate_titles": [],
}
FRANCE: dict[str, Any] = {
    "id": "country:fr",
    "name": "France",
    "slug": "france",
    "code": "fr",
    "level": "country",
    "uri": None,
}


@pytest.fixture(scope="module")
def http(live_twin: TwinUrls) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=live_twin.datagouv_api, timeout=30) as client:
        yield client


def _get(http: httpx.Client, path: str, headers: dict[str, str] | None = None) -> Any:
    response = http.get(path, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def test_v2_dataset_without_and_with_the_header(http: httpx.Client) -> None:
    plain = _get(http, f"2/datasets/{CATALOGUE}/")
    assert plain["frequency"] == "daily" and plain["license"] == "lov2"
    assert plain["spatial"] == {"granularity": "country", "zones": ["country:fr"], "geom": None}
    full = _get(http, f"2/datasets/{CATALOGUE}/", FULL)
    assert full["frequency"] == {"id": "daily", "label": "Quotidienne"}
    assert full["license"] == LOV2
    assert full["spatial"] == {
        "granularity": {"id": "country", "name": "Pays"},
        "zones": [FRANCE],
        "geom": None,
    }
    # Everything else is the same rendering.
    assert {k: v for k, v in full.items() if k not in ("frequency", "license", "spatial")} == {
        k: v for k, v in plain.items() if k not in ("frequency", "license", "spatial")
    }


def test_defaults_of_a_catalogue_record(http: httpx.Client) -> None:
    full = _get(http, f"2/datasets/{HAMSTER}/", FULL)
    # No frequency in the export: udata's UpdateFrequency.UNKNOWN; granularity "other".
    assert full["frequency"] == {"id": "unknown", "label": "Inconnu"}
    assert full["license"]["id"] == "lov2"
    assert full["spatial"]["granularity"] == {"id": "other", "name": "Autre"}
    assert full["spatial"]["zones"] == []


def test_v1_gets_full_spatial_only(http: httpx.Client) -> None:
    full = _get(http, f"1/datasets/{CATALOGUE}/", FULL)
    assert full["frequency"] == "daily" and full["license"] == "lov2"
    assert full["spatial"]["zones"] == [FRANCE]
    listed = _get(http, "1/datasets/", FULL)
    spatial = [d["spatial"] for d in listed["data"] if d["spatial"]]
    assert spatial and all(isinstance(s["granularity"], dict) for s in spatial)


def test_header_value_is_read_as_werkzeug_bool(http: httpx.Client) -> None:
    # Any non-empty value turns it on ("False" included); an empty one does not.
    assert _get(http, f"2/datasets/{CATALOGUE}/", {FULL_KEY: "False"})["frequency"] == {
        "id": "daily",
        "label": "Quotidienne",
    }
    assert _get(http, f"2/datasets/{CATALOGUE}/", {FULL_KEY: ""})["frequency"] == "daily"


def test_search_items_and_x_fields(http: httpx.Client) -> None:
    found = _get(http, "2/datasets/search/?q=catalogue data.gouv.fr&page_size=3", FULL)
    assert found["data"][0]["id"] == CATALOGUE
    assert all(isinstance(d["frequency"], dict) for d in found["data"])
    masked = _get(
        http, f"2/datasets/{CATALOGUE}/", {**FULL, "X-Fields": "id,frequency,license{title}"}
    )
    assert masked == {
        "id": CATALOGUE,
        "frequency": {"id": "daily", "label": "Quotidienne"},
        "license": {"title": LOV2["title"]},
    }
