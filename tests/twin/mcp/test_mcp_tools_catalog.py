"""Catalog tools through a real MCP client: layouts, field order and error texts per release.

Expected texts are written from the reference layouts (datagouv-toolsets.md §1.4) and the
twin's snapshot facts, not produced by the code under test.
"""

from __future__ import annotations

from typing import Any

import pytest
from mcp_types import CallToolResult

from datagouv_eval_pipeline.world.catalogue.urls import TwinUrls
from datagouv_eval_pipeline.world.mcp.client import call_tools_sync, result_text
from datagouv_eval_pipeline.world.mcp.server import mcp_url

# Tool outputs carry production links: the twin answers for them behind the front.
LIVE = TwinUrls.live()
TRANSPORTS = "55e4129788ee386899a46ec1"
TRANSPORTS_CSV = "d8581b5b-3372-4e73-9323-036e543e2bef"
DATA_ES = "ea4f5879-af40-4e3e-949d-812d6eeb5e02"
BAN = "672cf67802ef6b1be63b8975"
OLD_BAN = "5eafe7a07ef451701f28bab5"
BUDGET_2012 = "4f0abaa0af59e248c4509e33"  # has a null monthly metric in 2025-09
NO_DATASET = "000000000000000000000000"
NO_RESOURCE = "00000000-0000-0000-0000-000000000000"
MDN_404 = "For more information check: https://developer.mozilla.org/en-US/docs/Web/HTTP/Status/404"


def call_many(
    urls: TwinUrls, version: str, calls: list[tuple[str, dict[str, Any]]]
) -> list[CallToolResult]:
    return call_tools_sync(mcp_url(urls.site, version), calls)


def text_of(result: CallToolResult) -> str:
    assert len(result.content) == 1
    return result_text(result)


def call_text(urls: TwinUrls, version: str, name: str, args: dict[str, Any]) -> str:
    """Call one tool; it must not be an ``isError`` result."""
    (result,) = call_tools_sync(mcp_url(urls.site, version), [(name, args)])
    text = result_text(result)
    assert not result.is_error, text
    assert result.structured_content == {"result": text}
    return text


@pytest.mark.parametrize("version", ["0.2.5", "0.2.19", "0.2.26"])
def test_get_dataset_info_layout(live_twin: TwinUrls, version: str) -> None:
    text = call_text(live_twin, version, "get_dataset_info", {"dataset_id": TRANSPORTS})
    short = (
        "Ce jeu de données provient de la Banque de Données Macro-économiques (BDM) de l'Insee. "
        "Il rassemble des séries mensuelles sur les transports : immatriculations de voitures "
        "particulières neuves,"
    )
    full = (
        short + " consommation de carburants et trafic. Chaque série est identifiée par son idBank."
    )
    title = "Dataset Information: Transports"
    sections = [
        [
            f"ID: {TRANSPORTS}",
            "Slug: transports",
            f"URL: {LIVE.site}datasets/transports/",
        ],
        [f"Description: {short}"],
        [f"Full description: {full}..."],
        [
            "Organization: Institut national de la statistique et des études économiques (Insee)",
            "  Organization ID: 534fff81a3a7292c64a77e5c",
        ],
        ["Tags: automobiles, carburant, immatriculations, transports, voitures"],
        ["Resources: 2 file(s)"],
        ["Created: 2015-08-31T10:39:19+00:00", "Last updated: 2026-05-29T12:00:00+00:00"],
        ["License: fr-lo", "Update frequency: monthly"],
    ]
    # The releases' code (checked against it by tests/mcp_builds/test_conformance.py): a blank
    # line between sections, in every release.
    assert text.split("\n\n") == [title, *("\n".join(section) for section in sections)]


def test_search_datasets_layout_and_fallback(live_twin: TwinUrls) -> None:
    text = call_text(
        live_twin, "0.2.26", "search_datasets", {"query": "transports données", "page_size": 1}
    )
    lines = text.split("\n")
    assert lines[0].startswith("Found ") and lines[0].endswith(
        " dataset(s) for query: 'transports données'"
    )
    assert lines[1:4] == ["Page 1 of results:", "", "1. Transports"]
    assert lines[4] == f"   ID: {TRANSPORTS}"
    assert lines[5].startswith("   Description: Ce jeu de données provient") and lines[5].endswith(
        "..."
    )
    assert lines[6:] == [
        "   Organization: Institut national de la statistique et des études économiques (Insee)",
        "   Tags: automobiles, carburant, immatriculations, transports, voitures",
        "   Resources: 2",
        f"   URL: {LIVE.site}datasets/transports",
        "",
    ]
    assert call_text(live_twin, "0.2.26", "search_datasets", {"query": "zzqxw"}) == (
        "No datasets found for query: 'zzqxw'"
    )


def test_search_datasets_upstream_error_escapes_as_is_error(live_twin: TwinUrls) -> None:
    (result,) = call_many(live_twin, "0.2.26", [("search_datasets", {"query": "x", "page": 0})])
    assert result.is_error
    assert text_of(result).startswith(
        "Error executing tool search_datasets: Client error '400 Bad Request' for url "
        f"'{LIVE.datagouv_api}2/datasets/search/?q=x&page=0&page_size=20'"
    )
    (v1,) = call_many(live_twin, "0.2.19", [("search_datasets", {"query": "x", "page": 0})])
    assert f"for url '{LIVE.datagouv_api}1/datasets/?q=x&page=0&page_size=20'" in text_of(v1)


def test_search_organizations_layout(live_twin: TwinUrls) -> None:
    text = call_text(live_twin, "0.2.26", "search_organizations", {"query": "insee"})
    slug = "institut-national-de-la-statistique-et-des-etudes-economiques-insee"
    assert text.split("\n") == [
        "Found 1 organization(s) (query 'insee')",
        "Page 1 of results:",
        "",
        "1. Institut national de la statistique et des études économiques (Insee) (Insee)",
        "   ID: 534fff81a3a7292c64a77e5c",
        f"   Slug: {slug}",
        "   Badges: public-service, certified",
        "   Metrics: datasets=150, reuses=63, followers=400, views=572514",
        f"   URL: {LIVE.site}organizations/{slug}",
        f"   Profile: {LIVE.site}organizations/{slug}/",
        "",
    ]
    browse = call_text(live_twin, "0.2.26", "search_organizations", {"badge": "certified"})
    assert browse.split("\n")[0].endswith(" organization(s) (badge=certified)")
    assert call_text(live_twin, "0.2.26", "search_organizations", {"query": "zzqxw"}) == (
        "No organizations found for query 'zzqxw'"
    )


def test_dataservice_wording_per_release(live_twin: TwinUrls) -> None:
    new = call_text(
        live_twin, "0.2.26", "search_dataservices", {"query": "adresse", "page_size": 1}
    )
    old = call_text(
        live_twin, "0.2.19", "search_dataservices", {"query": "adresse", "page_size": 1}
    )
    # 0.2.26 searches v2 (title, description, organization: four APIs mention "adresse"),
    # 0.2.19 searches v1 (titles only: one).
    assert new.split("\n")[0] == "Found 4 third-party API(s) for query: 'adresse'"
    assert old.split("\n")[0] == "Found 1 dataservice(s) for query: 'adresse'"
    block = new.split("\n")[3:]
    assert block[0] == "1. API Adresse (Base Adresse Nationale - BAN)"
    assert [line.split(":")[0] for line in block[1:8]] == [
        "   ID",
        "   Description",
        "   Organization",
        "   Base API URL",
        "   Tags",
        "   URL",
        "",
    ]
    assert block[6] == f"   URL: {LIVE.site}dataservices/{BAN}"
    missing = {"dataservice_id": NO_DATASET}
    assert call_text(live_twin, "0.2.26", "get_dataservice_info", missing) == (
        f"Error: Third-party API not found (dataservice_id='{NO_DATASET}')."
    )
    assert call_text(live_twin, "0.2.19", "get_dataservice_info", missing) == (
        f"Error: Dataservice with ID '{NO_DATASET}' not found."
    )
    assert call_text(live_twin, "0.2.26", "search_dataservices", {"query": "zzqxw"}) == (
        "No third-party APIs found for query: 'zzqxw'"
    )


def test_get_dataservice_info_layout(live_twin: TwinUrls) -> None:
    lines = call_text(live_twin, "0.2.26", "get_dataservice_info", {"dataservice_id": BAN}).split(
        "\n"
    )
    assert lines[:4] == [
        "Third-party API information: API Adresse (Base Adresse Nationale - BAN)",
        "",
        f"ID: {BAN}",
        f"URL: {LIVE.site}dataservices/{BAN}/",
    ]
    assert lines[4] == ""
    assert lines[5].startswith("Description: L'API Adresse") and lines[5].endswith("...")
    assert len(lines[5]) == len("Description: ") + 500 + 3
    assert lines[6:] == [
        "",
        "Base API URL: https://data.geopf.fr/geocodage/",
        "OpenAPI/Swagger spec: https://data.geopf.fr/geocodage/openapi.yaml",
        "",
        "Organization: Institut national de l'information géographique et forestière",
        "  Organization ID: 534fff80a3a7292c64a77e41",
        "",
        "Tags: adresse, geocodage, ban, geographie",
        "",
        "Created: 2024-11-07T16:21:44+00:00",
        "Last updated: 2026-03-18T10:00:00+00:00",
        "",
        "License: lov2",
        "",
        "Related datasets: 1",
    ]


def test_get_dataservice_openapi_spec(live_twin: TwinUrls) -> None:
    text = call_text(live_twin, "0.2.26", "get_dataservice_openapi_spec", {"dataservice_id": BAN})
    lines = text.split("\n")
    assert lines[:6] == [
        "OpenAPI spec for: API Adresse (Base Adresse Nationale - BAN)",
        "Source: https://data.geopf.fr/geocodage/openapi.yaml",
        "Base API URL: https://data.geopf.fr/geocodage/",
        "",
        "API: Service de géocodage de la Géoplateforme",
        "Version: 1.3.0",
    ]
    assert "Servers:\n  - https://data.geopf.fr/geocodage\n" in text
    assert "Endpoints (5 paths):\n  GET /search\n    Géocodage direct d'une adresse" in text
    assert "      - q [query, string] (required)\n      - index [query, string]\n" in text
    assert "  POST /search/csv\n" in text
    no_doc = call_text(
        live_twin, "0.2.26", "get_dataservice_openapi_spec", {"dataservice_id": OLD_BAN}
    )
    assert no_doc == (
        "Third-party API 'API Adresse (ancienne version api-adresse.data.gouv.fr)' has no "
        "machine_documentation_url (dataservice catalog entry). "
        "Base API URL is: https://api-adresse.data.gouv.fr"
    )


def test_list_dataset_resources_layout_and_unhandled_404(live_twin: TwinUrls) -> None:
    text = call_text(live_twin, "0.2.26", "list_dataset_resources", {"dataset_id": TRANSPORTS})
    ext = "https://"
    assert text.split("\n") == [
        "Resources in dataset: Transports",
        f"Dataset ID: {TRANSPORTS}",
        "Total resources: 2",
        "",
        "1. Séries mensuelles transports (BDM).csv",
        f"   Resource ID: {TRANSPORTS_CSV}",
        "   Format: csv",
        "   Size: 16.0 KB",
        "   MIME type: text/csv",
        "   Type: main",
        f"   URL: {ext}static.data.gouv.fr/resources/transports/20260529-120000/"
        "series-mensuelles-transports-bdm-csv.csv",
        "",
        "2. Immatriculations de voitures particulières neuves - série 010767832",
        "   Resource ID: 37a95b64-7121-4039-af91-625a0a199a7c",
        "   Format: html",
        "   MIME type: text/html",
        "   Type: main",
        f"   URL: {ext}www.insee.fr/fr/statistiques/serie/010767832",
        "",
    ]
    missing = call_text(live_twin, "0.2.26", "list_dataset_resources", {"dataset_id": NO_DATASET})
    assert missing == (
        f"Error: Client error '404 Not Found' for url "
        f"'{LIVE.datagouv_api}1/datasets/{NO_DATASET}/'\n{MDN_404}"
    )
    assert call_text(live_twin, "0.2.5", "get_dataset_info", {"dataset_id": NO_DATASET}) == (
        f"Error: Dataset with ID '{NO_DATASET}' not found."
    )


def test_get_resource_info_layout(live_twin: TwinUrls) -> None:
    text = call_text(live_twin, "0.2.26", "get_resource_info", {"resource_id": DATA_ES})
    lines = text.split("\n")
    assert lines[:8] == [
        "Resource Information: Equipements sportifs (data-es.csv)",
        "",
        f"Resource ID: {DATA_ES}",
        "Format: csv",
        "Size: 304.0 MB",
        "MIME type: text/csv",
        "Type: main",
        "",
    ]
    assert lines[8].startswith("URL: https://equipements.sports.gouv.fr/")
    assert lines[9] == "" and lines[10].startswith("Description: Export quotidien")
    assert lines[11:] == [
        "",
        "Dataset ID: 53699ebba3a729239d205f4f",
        "Dataset: Recensement des équipements sportifs, espaces et sites de pratiques",
        "",
        "Tabular API availability:",
        "✅ Available via Tabular API (large file exception)",
    ]
    plain = call_text(live_twin, "0.2.19", "get_resource_info", {"resource_id": TRANSPORTS_CSV})
    assert plain.endswith(
        "Tabular API availability:\n✅ Available via Tabular API (can be queried)"
    )
    html = call_text(
        live_twin,
        "0.2.5",
        "get_resource_info",
        {"resource_id": "37a95b64-7121-4039-af91-625a0a199a7c"},
    )
    assert html.endswith("⚠️  Not available via Tabular API (may not be tabular data)")
    missing = call_text(live_twin, "0.2.26", "get_resource_info", {"resource_id": NO_RESOURCE})
    assert missing == (
        f"Error: HTTP 404 - Client error '404 Not Found' for url "
        f"'{LIVE.datagouv_api}2/datasets/resources/{NO_RESOURCE}/'\n{MDN_404}"
    )


def test_get_metrics_tables(live_twin: TwinUrls) -> None:
    text = call_text(
        live_twin,
        "0.2.26",
        "get_metrics",
        {"dataset_id": TRANSPORTS, "resource_id": TRANSPORTS_CSV, "limit": 2},
    )
    rule60, rule40 = "-" * 60, "-" * 40
    assert text.split("\n") == [
        "Dataset Metrics: Transports",
        f"Dataset ID: {TRANSPORTS}",
        "",
        "Monthly Statistics:",
        rule60,
        "Month        Visits          Downloads      ",
        rule60,
        "2026-05      349             232            ",
        "2026-04      301             370            ",
        rule60,
        "Total        650             602            ",
        "",
        "",
        "Resource Metrics: Séries mensuelles transports (BDM).csv",
        f"Resource ID: {TRANSPORTS_CSV}",
        "",
        "Monthly Statistics:",
        rule40,
        "Month        Downloads      ",
        rule40,
        "2026-05      120            ",
        "2026-04      192            ",
        rule40,
        "Total        312            ",
    ]


def test_get_metrics_checks_clamps_and_nulls_per_release(live_twin: TwinUrls) -> None:
    assert call_text(live_twin, "0.2.26", "get_metrics", {}) == (
        "Error: At least one of dataset_id or resource_id must be provided."
    )
    assert call_text(live_twin, "0.2.26", "get_metrics", {"dataset_id": "  "}) == (
        "Error: dataset_id cannot be empty."
    )
    # 0.2.26 clamps limit to 50 (the Metrics API maximum); 0.2.19 still sends 100 and fails,
    # a line under the section's header.
    clamped = call_text(
        live_twin, "0.2.26", "get_metrics", {"dataset_id": TRANSPORTS, "limit": 100}
    )
    assert clamped.count("\n2026-") + clamped.count("\n2025-") + clamped.count("\n2024-") > 24
    too_many = call_text(
        live_twin, "0.2.19", "get_metrics", {"dataset_id": TRANSPORTS, "limit": 100}
    )
    assert too_many.split("\n")[3].startswith(
        "Error fetching dataset metrics: Client error '400 Bad Request' for url "
        f"'{LIVE.metrics_api}datasets/data/?dataset_id__exact={TRANSPORTS}"
        "&metric_month__sort=desc&page_size=100'"
    )
    # A null monthly value: counted as 0 from 0.2.22, a formatting crash before.
    safe = call_text(live_twin, "0.2.26", "get_metrics", {"dataset_id": BUDGET_2012})
    assert "\n2025-09      " in safe
    # Before, the months above the null one are shown, then the sum fails on it.
    crashed = call_text(live_twin, "0.2.5", "get_metrics", {"dataset_id": BUDGET_2012})
    lines = crashed.split("\n")
    assert lines[:4] == [
        "Dataset Metrics: Budget de l'État - loi de finances initiale 2012",
        f"Dataset ID: {BUDGET_2012}",
        "",
        "Monthly Statistics:",
    ]
    assert [line[:7] for line in lines[7:-1]] == [
        "2026-05",
        "2026-04",
        "2026-03",
        "2026-02",
        "2026-01",
        "2025-12",
        "2025-11",
        "2025-10",
    ]
    assert lines[-1] == (
        "Error fetching dataset metrics: unsupported operand type(s) for +=: 'int' and 'NoneType'"
    )
