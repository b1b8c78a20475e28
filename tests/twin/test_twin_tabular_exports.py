"""Tabular exports as PostgREST writes them, `page_size` on exports, 410 for deleted resources.

Against the twin served over real sockets (api-tabular's behaviour: `core/data.py`,
`tabular/utils.py`, `core/query.py`).
"""

from __future__ import annotations

import json

import httpx

from datagouv_eval_pipeline.world.api.server import TwinServer
from datagouv_eval_pipeline.world.catalogue.catalog import CatalogStore
from datagouv_eval_pipeline.world.catalogue.overlay import DriftOverlay
from datagouv_eval_pipeline.world.catalogue.urls import TwinUrls

EXPORT = "f868cca6-8da1-4369-a78d-47463f19a9a3"  # ;-separated on disk
SPORTS = "ea4f5879-af40-4e3e-949d-812d6eeb5e02"
CATALOGUE = "5d13a8b6634f41070a43dff3"


def test_csv_export_is_comma_separated_postgresql_text(live_twin: TwinUrls) -> None:
    url = f"{live_twin.tabular_api}resources/{EXPORT}/data/csv/"
    params = {
        "id__exact": "4edc96203489e39d3bb8b49b",
        "columns": "id,title,featured,created_at,archived,resources_count,acronym",
    }
    response = httpx.get(url, params=params, timeout=60)
    assert response.status_code == 200
    # The file's `;` is gone; the row is PostgreSQL's text form of the record: a title with
    # blanks and parentheses quoted, a boolean as f, a timestamp with a space, NULL as nothing.
    assert response.text == (
        "id,title,featured,created_at,archived,resources_count,acronym\n"
        "4edc96203489e39d3bb8b49b,"
        '"Liste des établissements publics de l\'État (jeu de données 2011)",'
        'f,"2011-12-05 10:00:00",False,1,\n'
    )


def test_exports_ignore_page_and_page_size(live_twin: TwinUrls) -> None:
    base = f"{live_twin.tabular_api}resources/{SPORTS}/data/"
    query = "dep_code__exact=32&columns=dep_code"
    for extra in ("page_size=500", "page_size=abc", "page=7&page_size=2"):
        csv_export = httpx.get(f"{base}csv/?{query}&{extra}", timeout=30)
        assert csv_export.status_code == 200, extra
        assert len(csv_export.text.splitlines()) == 1 + 1023
        json_export = httpx.get(f"{base}json/?{query}&{extra}", timeout=30)
        assert json_export.status_code == 200, extra
        assert len(json.loads(json_export.text)) == 1023
    # The paginated route still checks it.
    assert httpx.get(f"{base}?{query}&page_size=500", timeout=30).status_code == 400


def test_deleted_resource_is_410_on_every_tabular_route(store: CatalogStore) -> None:
    overlay = DriftOverlay.from_data(
        {"name": "gone", "changes": [{"op": "remove_resource", "resource_id": SPORTS}]}
    )
    drifted = overlay.apply(store)
    message = (
        f"Resource {SPORTS} has been permanently deleted on 2026-06-12T06:00:00+00:00 by its "
        "producer. You can find more information about this resource at "
        "https://www.data.gouv.fr/datasets/53699ebba3a729239d205f4f"
    )
    with TwinServer(drifted) as urls, httpx.Client(timeout=30) as http:
        base = f"{urls.tabular_api}resources/{SPORTS}/"
        for path in ("", "profile/", "swagger/", "data/", "data/csv/", "data/json/"):
            response = http.get(base + path)
            assert response.status_code == 410, path
            assert response.headers["content-type"].startswith("text/plain")
            assert response.text == message
        # An unknown resource is still a 404, and the untouched store still serves it.
        assert http.get(f"{urls.tabular_api}resources/nope/data/").status_code == 404
    assert store.tabular_gone(SPORTS) is None
