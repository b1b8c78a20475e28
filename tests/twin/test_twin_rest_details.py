"""Issue 12 item 4: REST and Tabular details of production, over the twin's real HTTP server.

Every expected value below is worked out by hand from the snapshot's source files (the
19-row variable dictionary of the building-permits dataset, ``;``-separated) or from the
production sources cited in ``docs/twin.md``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from datagouv_eval_pipeline.world.api.app import TwinConfig
from datagouv_eval_pipeline.world.api.server import TwinServer
from datagouv_eval_pipeline.world.catalogue.catalog import CatalogStore
from datagouv_eval_pipeline.world.catalogue.urls import TwinUrls

# "Dictionnaire des variables" of the building permits: variable;libelle;type;modalites
DICTIONARY = "c863c9e3-070c-49e2-91de-92c8d58cc807"
DICTIONARY_TABLE = "58c2660afce130d8981c309e7a83b2b1"  # its analysis:parsing:parsing_table


@pytest.fixture(scope="module")
def http(live_twin: TwinUrls) -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30) as client:
        yield client


@pytest.fixture(scope="module")
def small_exports(store: CatalogStore) -> Iterator[TwinUrls]:
    """A twin whose exports stop at 5 rows, to see api-tabular's 403 on a small table."""
    with TwinServer(store, config=TwinConfig(csv_export_max_rows=5)) as urls:
        yield urls


def _get(client: httpx.Client, url: str, status: int = 200, **kwargs: Any) -> httpx.Response:
    response = client.get(url, **kwargs)
    assert response.status_code == status, (url, response.text[:300])
    return response


# ---------------------------------------------------------------------- Tabular API


def test_json_export_streams_the_rows_as_postgrest_lays_them_out(
    live_twin: TwinUrls, http: httpx.Client
) -> None:
    url = f"{live_twin.tabular_api}resources/{DICTIONARY}/data/json/?type__exact=date"
    response = _get(http, url)
    assert response.headers["content-type"] == "application/json"
    assert response.headers["content-disposition"] == f'attachment; filename="{DICTIONARY}.json"'
    # Rows 7 and 8 of the file are the two dates; json_agg separates rows with ", \n ".
    assert response.text == (
        '[{"__id":7,"variable":"DATE_REELLE_AUTORISATION",'
        '"libelle":"Date réelle d\'autorisation","type":"date","modalites":"AAAA-MM-JJ"}, \n '
        '{"__id":8,"variable":"DATE_REELLE_DOC",'
        '"libelle":"Date réelle d\'ouverture de chantier","type":"date",'
        '"modalites":"AAAA-MM-JJ"}]\n'
    )
    # Unfiltered, the whole file in __id order.
    everything = json.loads(_get(http, url.split("?")[0]).text)
    assert [row["__id"] for row in everything] == list(range(1, 20))
    assert everything[18] == {
        "__id": 19,
        "variable": "SURF_LOC_DEMOLIE",
        "libelle": "Surface de plancher de locaux démolie (m²)",
        "type": "entier",
        "modalites": None,
    }


def test_columns_selects_exactly_the_named_columns(live_twin: TwinUrls, http: httpx.Client) -> None:
    base = f"{live_twin.tabular_api}resources/{DICTIONARY}/data/"
    page = _get(http, f"{base}?type__exact=entier&columns=type,variable").json()
    # Rows 15, 18 and 19 are the integers; no __id, columns in the order asked.
    assert page["data"] == [
        {"type": "entier", "variable": "SUPERFICIE_TERRAIN"},
        {"type": "entier", "variable": "SURF_LOC_CREEE"},
        {"type": "entier", "variable": "SURF_LOC_DEMOLIE"},
    ]
    assert page["meta"] == {"page": 1, "page_size": 20, "total": 3}
    with_id = _get(http, f"{base}?type__exact=entier&columns=__id,variable").json()
    assert [list(row.values()) for row in with_id["data"]] == [
        [15, "SUPERFICIE_TERRAIN"],
        [18, "SURF_LOC_CREEE"],
        [19, "SURF_LOC_DEMOLIE"],
    ]
    csv_text = _get(http, f"{base}csv/?type__exact=entier&columns=variable").text
    assert csv_text == "variable\nSUPERFICIE_TERRAIN\nSURF_LOC_CREEE\nSURF_LOC_DEMOLIE\n"
    streamed = json.loads(_get(http, f"{base}json/?type__exact=entier&columns=variable").text)
    assert streamed == [
        {"variable": "SUPERFICIE_TERRAIN"},
        {"variable": "SURF_LOC_CREEE"},
        {"variable": "SURF_LOC_DEMOLIE"},
    ]
    unknown = _get(http, f"{base}?columns=variable,unit", 400).json()
    assert unknown == {
        "errors": [
            {
                "code": None,
                "title": "Database error",
                "detail": {
                    "code": "42703",
                    "details": None,
                    "hint": None,
                    "message": f"column {DICTIONARY_TABLE}.unit does not exist",
                },
            }
        ]
    }
    quoted = _get(http, f'{base}?columns="variable"', 400).json()
    assert quoted == {
        "errors": [
            {
                "code": None,
                "title": "Invalid query string",
                "detail": 'Malformed query: Forbidden character `"` in a column name',
            }
        ]
    }


def test_aggregation_exceptions_and_the_403_bodies(
    live_twin: TwinUrls, small_exports: TwinUrls, http: httpx.Client
) -> None:
    assert _get(http, f"{live_twin.tabular_api}aggregation-exceptions/").json() == {
        "allowed": False,
        "exceptions": [],
    }
    refused = _get(
        http, f"{live_twin.tabular_api}resources/{DICTIONARY}/data/?type__groupby", 403
    ).json()
    assert refused == {
        "errors": [
            {
                "code": None,
                "title": "Unauthorized parameters",
                "detail": "Aggregation parameters `groupby` are not allowed for resource "
                f"'{DICTIONARY}'",
            }
        ]
    }
    too_long = {
        "errors": [
            {
                "code": None,
                "title": "Output is too long",
                "detail": "The output has more than 5 rows, please consider downloading the "
                "source file directly",
            }
        ]
    }
    base = f"{small_exports.tabular_api}resources/{DICTIONARY}/data/"
    for export in ("csv/", "json/"):
        response = _get(http, base + export, 403)
        assert response.headers["content-type"] == "application/json"
        assert response.json() == too_long
        # Three rows fit under the limit.
        _get(http, f"{base}{export}?type__exact=entier")


# ---------------------------------------------------------------------- search facets

DINUM = "5ddbec709a16693d488dfe98|Direction interministérielle du numérique (DINUM)"


def test_v2_dataservice_search_has_udata_search_services_facets(
    live_twin: TwinUrls, http: httpx.Client
) -> None:
    page = _get(http, f"{live_twin.datagouv_api}2/dataservices/search/").json()
    assert list(page) == [
        "data",
        "page",
        "page_size",
        "total",
        "next_page",
        "previous_page",
        "facets",
    ]
    # 15 dataservices in dataservices.yaml, one archived (the old api-adresse).
    assert page["total"] == 14
    facets = page["facets"]
    assert list(facets) == [
        "access_type",
        "producer_type",
        "organization_id_with_name",
        "tag",
        "badge",
        "last_update",
    ]
    everything = {"name": "all", "count": 14}
    assert facets["access_type"] == [
        everything,
        {"name": "open", "count": 8},
        {"name": "open_with_account", "count": 5},
        {"name": "restricted", "count": 1},
    ]
    # Every producer is a public service but the Carif-Oref network, an association.
    assert facets["producer_type"] == [
        everything,
        {"name": "public-service", "count": 13},
        {"name": "association", "count": 1},
    ]
    orgs = facets["organization_id_with_name"]
    assert orgs[:2] == [everything, {"name": DINUM, "count": 3}]
    assert [b["count"] for b in orgs[2:]] == [2, 2] + [1] * 7
    assert facets["tag"][:9] == [
        everything,
        {"name": "entreprises", "count": 3},
        {"name": "communes", "count": 2},
        {"name": "education", "count": 2},
        {"name": "geographie", "count": 2},
        {"name": "recherche", "count": 2},
        {"name": "siren", "count": 2},
        {"name": "sirene", "count": 2},
        {"name": "siret", "count": 2},
    ]
    # The search index's dataservice documents have no badges.
    assert facets["badge"] == [everything]
    # Snapshot "now" is 2026-06-12; the newest metadata_modified_at is 2026-04-02, and four
    # are older than 2025-06-12 (2025-06-10, 2025-05-14, 2025-03-03, 2024-07-12).
    assert facets["last_update"] == [
        everything,
        {"name": "last_30_days", "count": 0},
        {"name": "last_12_months", "count": 10},
        {"name": "last_3_years", "count": 14},
    ]
    assert "facets" not in _get(http, f"{live_twin.datagouv_api}1/dataservices/").json()


def _facet(page: dict[str, Any], name: str) -> list[tuple[str, int]]:
    return [(b["name"], b["count"]) for b in page["facets"][name]]


def test_v2_dataservice_facets_leave_their_own_filter_out_as_udata_search_service_does(
    live_twin: TwinUrls, http: httpx.Client
) -> None:
    # udata_search_service query_dataservices: each facet is a filter aggregation of the query
    # and every filter but its own (get_filters_except); the hits alone are post-filtered.
    def search(args: str) -> dict[str, Any]:
        url = f"{live_twin.datagouv_api}2/dataservices/search/?page_size=1&{args}"
        return dict(_get(http, url).json())

    plain = search("")
    by_access = search("access_type=open")
    assert by_access["total"] == 8
    # The access_type facet still counts every access type; the others count the 8 open ones.
    assert _facet(by_access, "access_type") == _facet(plain, "access_type")
    assert _facet(by_access, "access_type")[:2] == [("all", 14), ("open", 8)]
    assert _facet(by_access, "producer_type") == [("all", 8), ("public-service", 8)]
    assert _facet(by_access, "last_update") == [
        ("all", 8),
        ("last_30_days", 0),
        ("last_12_months", 5),
        ("last_3_years", 8),
    ]
    # Two facet filters: each facet drops its own and keeps the other. No open dataservice
    # is an association's; the one association's (Carif-Oref) is open_with_account.
    both = search("access_type=open&producer_type=association")
    assert both["total"] == 0
    assert _facet(both, "access_type") == [("all", 1), ("open_with_account", 1)]
    assert _facet(both, "producer_type") == [("all", 8), ("public-service", 8)]
    assert _facet(both, "tag") == [("all", 0)]
    # organization and last_update_range likewise.
    dinum = search("organization=5ddbec709a16693d488dfe98")
    assert dinum["total"] == 3
    assert _facet(dinum, "organization_id_with_name") == _facet(plain, "organization_id_with_name")
    assert _facet(dinum, "access_type") == [("all", 3), ("open", 2), ("restricted", 1)]
    recent = search("last_update_range=last_12_months")
    assert recent["total"] == 10
    assert _facet(recent, "last_update") == _facet(plain, "last_update")
    assert _facet(recent, "access_type")[0] == ("all", 10)
    # udata's tag is a list filter (action=append), renamed tags; query_dataservices files a
    # list of tags under the filters every facet counts, the tag facet included.
    siren = search("tag=siren")
    assert siren["total"] == 2
    assert _facet(siren, "tag")[0] == ("all", 2)
    assert ("siren", 2) in _facet(siren, "tag")
    # is_restricted is such an "other" filter too: it narrows the access_type facet, which
    # access_type=restricted leaves whole. The index's is_restricted is access_type ==
    # restricted (DataserviceSearch.serialize): API Entreprise.
    restricted = search("is_restricted=true")
    assert restricted["total"] == 1
    assert _facet(restricted, "access_type") == [("all", 1), ("restricted", 1)]
    by_type = search("access_type=restricted")
    assert by_type["total"] == 1
    assert _facet(by_type, "access_type") == _facet(plain, "access_type")


def test_v2_organization_search_facets_ignore_the_filters(
    live_twin: TwinUrls, http: httpx.Client, store: CatalogStore
) -> None:
    filtered = _get(
        http, f"{live_twin.datagouv_api}2/organizations/search/?badge=public-service"
    ).json()
    assert list(filtered)[-1] == "facets"
    assert list(filtered["facets"]) == ["producer_type"]
    # 29 organizations carry the public-service badge; the facet counts every organization
    # (Elasticsearch's post_filter does not narrow aggregations), and "certified" is not a
    # producer type.
    assert filtered["total"] == 29
    assert filtered["facets"]["producer_type"] == [
        {"name": "all", "count": len(store.organizations)},
        {"name": "public-service", "count": 29},
        {"name": "local-authority", "count": 2},
        {"name": "association", "count": 1},
        {"name": "company", "count": 1},
    ]
    # producer_type is post-filtered too: the one association, the facet unchanged.
    association = _get(
        http, f"{live_twin.datagouv_api}2/organizations/search/?producer_type=association"
    ).json()
    assert association["total"] == 1
    assert association["facets"] == filtered["facets"]
    assert "facets" not in _get(http, f"{live_twin.datagouv_api}1/organizations/").json()


# ---------------------------------------------------------------------- X-Fields masks

TRANSPORTS = "55e4129788ee386899a46ec1"  # "Transports", by Insee: a CSV and an HTML page
CATALOGUE = "5d13a8b6634f41070a43dff3"  # data.gouv.fr's catalogue, 8 resources
API_GEO = "672ce8b0a154951aac73f508"
INSEE = "Institut national de la statistique et des études économiques (Insee)"


def _masked(client: httpx.Client, url: str, mask: str, status: int = 200) -> Any:
    return _get(client, url, status, headers={"X-Fields": mask}).json()


def test_x_fields_masks_udata_endpoints(live_twin: TwinUrls, http: httpx.Client) -> None:
    api = live_twin.datagouv_api
    dataset = f"{api}1/datasets/{TRANSPORTS}/"
    expected = {"id": TRANSPORTS, "title": "Transports", "organization": {"name": INSEE}}
    assert _masked(http, dataset, "id,title,organization{name}") == expected
    # Outer braces are optional and characters outside the syntax are dropped.
    assert _masked(http, dataset, "{id, title, organization{ name }}") == expected
    # "*" keeps the rest; a name the model lacks is skipped.
    starred = _masked(http, dataset, "*,organization{acronym},no_such_field")
    assert starred["organization"] == {"acronym": "Insee"}
    assert starred["title"] == "Transports" and "no_such_field" not in starred
    assert _masked(http, dataset, "no_such_field") == {}
    # A list endpoint masks its envelope: the items are reached through data{…}.
    page = _masked(http, f"{api}1/datasets/?q=transports&page_size=2", "data{id},total")
    assert page == {
        "data": [{"id": "65c2cb9b63ecd614c2e5f9fe"}, {"id": "67377996ccdbbd2d61c40a95"}],
        "total": 265,
    }
    assert _masked(http, f"{api}1/datasets/?q=transports", "id,title") == {}
    # v2: nested masks reach the link objects (Raw fields holding objects).
    v2 = _masked(http, f"{api}2/datasets/{CATALOGUE}/", "id,resources{total}")
    assert v2 == {"id": CATALOGUE, "resources": {"total": 8}}
    search = _masked(http, f"{api}2/datasets/search/?q=transports&page_size=1", "page_size")
    assert search == {"page_size": 1}
    service = _masked(http, f"{api}1/dataservices/{API_GEO}/", "title,organization{acronym}")
    assert service == {"title": "API Géo", "organization": {"acronym": "DINUM"}}
    orgs = _masked(
        http, f"{api}2/organizations/search/?badge=association", "data{name},facets{zzz}"
    )
    # The one association; facets is an object whose keys the nested mask does not name.
    assert orgs == {"data": [{"name": "Réseau des Carif-Oref"}], "facets": {}}
    resources = _masked(http, f"{api}2/datasets/{TRANSPORTS}/resources/", "data{format}")
    assert resources == {"data": [{"format": "csv"}, {"format": "html"}]}


def test_v1_resource_list_is_not_readable(live_twin: TwinUrls, http: httpx.Client) -> None:
    # udata serves POST and PUT there (create, reorder), not GET: werkzeug's 405, even for a
    # dataset that does not exist (the method is refused before the lookup).
    for dataset in (TRANSPORTS, "000000000000000000000000"):
        response = http.get(f"{live_twin.datagouv_api}1/datasets/{dataset}/resources/")
        assert response.status_code == 405
        assert response.json() == {"message": "The method is not allowed for the requested URL."}
        assert response.headers["allow"] == "OPTIONS, POST, PUT"


def test_x_fields_errors_are_udatas(live_twin: TwinUrls, http: httpx.Client) -> None:
    dataset = f"{live_twin.datagouv_api}1/datasets/{TRANSPORTS}/"
    for mask, reason in (
        ("id,,title", "Unexpected comma"),
        (",id", "Unexpected comma"),
        ("{id,title", "Missing closing bracket"),
        ("id{title", "Missing closing bracket"),
        ("id}", "Unexpected closing bracket"),
        ("id,{title}", "Unexpected opening bracket"),
    ):
        assert _masked(http, dataset, mask, 400) == {"message": f"Mask parse error: {reason}"}
    assert _masked(http, dataset, "title{x}", 400) == {
        "message": "Mask error: Mask is inconsistent with model"
    }
    # Errors come before marshalling: an unknown dataset is still a 404.
    missing = f"{live_twin.datagouv_api}1/datasets/000000000000000000000000/"
    assert _masked(http, missing, "id,,title", 404)["message"].startswith("The requested URL")


def test_default_masks_and_the_header_replacing_them(
    live_twin: TwinUrls, http: httpx.Client
) -> None:
    api = live_twin.datagouv_api
    v1 = _get(http, f"{api}1/datasets/{TRANSPORTS}/").json()
    # udata's v1 DEFAULT_MASK leaves community_resources out and keeps the dataset schema.
    assert "community_resources" not in v1 and v1["schema"] is None
    listed = _get(http, f"{api}1/datasets/?q=transports&page_size=1").json()["data"][0]
    assert "community_resources" not in listed
    # A header replaces the default mask: the v1 model has community_resources.
    assert _masked(http, f"{api}1/datasets/{TRANSPORTS}/", "community_resources") == {
        "community_resources": []
    }
    assert set(_masked(http, f"{api}1/datasets/{TRANSPORTS}/", "*")) == set(v1) | {
        "community_resources"
    }
    # The v2 model (and so its DEFAULT_MASK_APIV2) has no dataset-level schema.
    v2 = _get(http, f"{api}2/datasets/{TRANSPORTS}/").json()
    assert "schema" not in v2
    assert v2["community_resources"]["total"] == 0
    assert set(_masked(http, f"{api}2/datasets/{TRANSPORTS}/", "*")) == set(v2)


# ---------------------------------------------------------------------- file sizes

SPORTS = "ea4f5879-af40-4e3e-949d-812d6eeb5e02"  # equipements sportifs: 304 MiB in production
RNCP_ZIP = "42824627-145d-4f68-bd56-0b0aa04df392"  # 46 MiB zip, not in the snapshot


def test_served_files_smaller_than_their_metadata_say_so(
    live_twin: TwinUrls, http: httpx.Client
) -> None:
    api = live_twin.datagouv_api
    resource = _get(http, f"{api}2/datasets/resources/{SPORTS}/").json()["resource"]
    # The metadata keeps the real size: 304 × 2^20 bytes.
    assert resource["filesize"] == 304 * 1024 * 1024 == 318767104
    served = _get(http, f"{live_twin.site}datasets/r/{SPORTS}", follow_redirects=True)
    # The snapshot keeps 1,723 rows of it (the Tabular API's), about half a megabyte.
    assert served.content.count(b"\n") == 1723 + 1
    assert int(served.headers["content-length"]) == len(served.content) < 600_000
    assert served.headers["x-twin-placeholder"] == "sample"
    assert served.headers["x-twin-filesize"] == "318767104"
    # A stand-in for a file the snapshot lacks says the same, with "true".
    zipped = _get(http, f"{live_twin.site}datasets/r/{RNCP_ZIP}", follow_redirects=True)
    assert zipped.headers["x-twin-placeholder"] == "true"
    assert zipped.headers["x-twin-filesize"] == "48234496"  # 46 MiB
    # HEAD, which clients use to size a download before fetching it, carries them too.
    head = http.head(f"{live_twin.site}datasets/r/{SPORTS}", follow_redirects=True)
    assert head.status_code == 200 and head.headers["x-twin-filesize"] == "318767104"


# ---------------------------------------------------------------------- Metrics API site


def test_metrics_site_model_is_the_sum_of_the_organizations(
    live_twin: TwinUrls, http: httpx.Client
) -> None:
    metrics = live_twin.metrics_api
    # udata's own call (core/metrics/helpers.py): newest month first.
    page = _get(http, f"{metrics}site/data/?metric_month__sort=desc&page_size=50").json()
    # One row a month, 2023-06 to 2026-05 as the other models: 36 months.
    assert page["meta"] == {"page": 1, "page_size": 50, "total": 36}
    assert page["links"] == {"next": None, "prev": None}
    newest = page["data"][0]
    assert list(newest) == [
        "__id",
        "metric_month",
        "monthly_visit_dataset",
        "monthly_download_resource",
    ]
    assert newest["__id"] == 36 and newest["metric_month"] == "2026-05"
    assert page["data"][-1]["metric_month"] == "2023-06"
    # The same month summed over the organizations model, fetched on its own.
    orgs = _get(
        http, f"{metrics}organizations/data/?metric_month__exact=2026-05&page_size=50"
    ).json()
    assert orgs["meta"]["total"] == len(orgs["data"]) == 31
    for column in ("monthly_visit_dataset", "monthly_download_resource"):
        assert newest[column] == sum(row[column] or 0 for row in orgs["data"])
    exported = _get(http, f"{metrics}site/data/csv/?metric_month__exact=2026-05")
    assert exported.headers["content-disposition"] == 'attachment; filename="site.csv"'
    assert exported.text == (
        "__id,metric_month,monthly_visit_dataset,monthly_download_resource\n"
        f"36,2026-05,{newest['monthly_visit_dataset']},{newest['monthly_download_resource']}\n"
    )
