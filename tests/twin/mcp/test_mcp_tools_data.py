"""Data tools through a real MCP client: Tabular queries, their errors, and the old tools."""

from __future__ import annotations

from typing import Any

from mcp_types import CallToolResult

from datagouv_eval_pipeline.world.catalogue.urls import TwinUrls
from datagouv_eval_pipeline.world.mcp.client import call_tools_sync, result_text
from datagouv_eval_pipeline.world.mcp.server import mcp_url

DATA_ES = "ea4f5879-af40-4e3e-949d-812d6eeb5e02"
DATA_ES_HEADER = [
    f"Resource ID: {DATA_ES}",
    "Dataset: Recensement des équipements sportifs, espaces et sites de pratiques "
    "(ID: 53699ebba3a729239d205f4f)",
    "",
]
DICTIONARY = "b7ebaa95-a2ff-4412-8911-a655dd146d44"  # 21 rows
NOT_TABULAR = "37a95b64-7121-4039-af91-625a0a199a7c"  # an HTML page of the Transports dataset
# Tool outputs carry production links: the twin answers for them behind the front.
LIVE = TwinUrls.live()
TRANSPORTS = "55e4129788ee386899a46ec1"
TRANSPORTS_CSV = "d8581b5b-3372-4e73-9323-036e543e2bef"  # 144 rows


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


def test_query_resource_data_filter_sort_layout(live_twin: TwinUrls) -> None:
    args = {
        "resource_id": DATA_ES,
        "page_size": 1,
        "filter_column": "dep_code",
        "filter_value": "32",
        "filter_operator": "EXACT",
        "sort_column": "new_name",
        "sort_direction": "DESC",
    }
    lines = call_text(live_twin, "0.2.26", "query_resource_data", args).split("\n")
    assert lines[:13] == [
        "Querying resource: Equipements sportifs (data-es.csv)",
        *DATA_ES_HEADER,
        "Filter: dep_code exact 32",
        "Sort: new_name (desc)",
        "",
        "Total rows (Tabular API): 1023",  # the pinned Data ES fact for the Gers
        "Total pages: 1023 (page size: 1)",
        "Retrieved: 1 row(s) from page 1",
        lines[10],
        "",
        "Data (1 row):",
    ]
    assert lines[10].startswith("Columns: __id, equip_numero, equip_nom, ")
    assert lines[13] == "  Row 1:" and lines[14].startswith("    __id: ")
    assert "    dep_code: 32" in lines
    assert lines[-2:] == [
        "",
        "⚠️ Large dataset (1023 rows). To get all data, paginate using page=2 or use "
        "get_resource_info to retrieve the raw file URL and fetch it directly.",
    ]


def test_query_resource_data_small_pages_and_empty_result(live_twin: TwinUrls) -> None:
    text = call_text(
        live_twin, "0.2.26", "query_resource_data", {"resource_id": DICTIONARY, "page": 2}
    )
    assert "Total rows (Tabular API): 21\nTotal pages: 2 (page size: 20)\n" in text
    assert (
        "Retrieved: 1 row(s) from page 2\nColumns: __id, variable, libelle, type, modalites\n"
        in (text)
    )
    assert "\n  Row 1:\n    __id: 21\n" in text and "More data available" not in text
    first = call_text(live_twin, "0.2.26", "query_resource_data", {"resource_id": DICTIONARY})
    assert first.endswith("\n\n📄 More data available. Use page=2 to see the next page.")
    empty = call_text(
        live_twin,
        "0.2.26",
        "query_resource_data",
        {"resource_id": DICTIONARY, "filter_column": "variable", "filter_value": "NOPE"},
    )
    # No totals on an empty page.
    assert empty.endswith(
        "Filter: variable exact NOPE\n\n⚠️  No rows available (resource may be empty or filtered)."
    )


def test_query_resource_data_validation_texts(live_twin: TwinUrls) -> None:
    bad_operator = {
        "resource_id": DATA_ES,
        "filter_column": "dep_code",
        "filter_value": "32",
        "filter_operator": "differs",
    }
    assert call_text(live_twin, "0.2.26", "query_resource_data", bad_operator) == (
        "Error: invalid filter_operator. Supported values: contains, exact, greater, less, "
        "strictly_greater, strictly_less."
    )
    bad_direction = {"resource_id": DATA_ES, "sort_column": "dep_code", "sort_direction": "up"}
    assert call_text(live_twin, "0.2.26", "query_resource_data", bad_direction) == (
        "Error: invalid sort_direction. Supported values: asc, desc."
    )
    # 0.2.19 validates the same way but still requires its `question` argument.
    (missing_question,) = call_many(
        live_twin, "0.2.19", [("query_resource_data", {"resource_id": DATA_ES})]
    )
    assert missing_question.is_error
    assert text_of(missing_question).startswith(
        "Error executing tool query_resource_data: 1 validation error for "
        "query_resource_dataArguments\nquestion\n  Field required"
    )
    old = {"question": "?", **bad_direction}
    assert call_text(live_twin, "0.2.19", "query_resource_data", old) == (
        "Error: invalid sort_direction. Supported values: asc, desc."
    )


def test_query_resource_data_tabular_errors_per_release(live_twin: TwinUrls) -> None:
    header = [
        "Querying resource: Immatriculations de voitures particulières neuves - série 010767832",
        f"Resource ID: {NOT_TABULAR}",
        f"Dataset: Transports (ID: {TRANSPORTS})",
        "",
    ]
    new = call_text(live_twin, "0.2.26", "query_resource_data", {"resource_id": NOT_TABULAR})
    assert new.split("\n") == [
        *header,
        "⚠️  This resource ID was not found in the Tabular API. Use search_datasets to find a "
        "dataset, then list_dataset_resources to obtain the correct resource ID.",
    ]
    old = call_text(
        live_twin, "0.2.19", "query_resource_data", {"question": "?", "resource_id": NOT_TABULAR}
    )
    assert old.split("\n") == [
        *header[:-1],
        "Question: ?",
        "",
        f"⚠️  Resource {NOT_TABULAR} not available via Tabular API",
    ]
    unknown_column = call_text(
        live_twin,
        "0.2.26",
        "query_resource_data",
        {"resource_id": DATA_ES, "page_size": 1, "sort_column": "nope"},
    )
    assert unknown_column.endswith(
        "Sort: nope (asc)\n\n"
        "⚠️  The Tabular API rejected the request (invalid filter, sort column, or parameter). "
        "Call again without sort or filter to preview rows and confirm column names, or align "
        "filter_column and sort_column with the resource schema. A column or parameter in the "
        "request does not exist in this resource; remove sort/filter or use exact names from a "
        "preview. - Original error message: column ebccc4cc23b63675d502033e77f64ea0.nope does "
        "not exist"
    )
    # Above the Tabular API's maximum page size (50 on the twin) the real parser trips over the
    # string `detail` of api-tabular's own error (reference §1.4, latent bug).
    too_big = call_text(
        live_twin, "0.2.26", "query_resource_data", {"resource_id": DATA_ES, "page_size": 100}
    )
    assert too_big.endswith(
        "\n\n❌ Error querying resource: string indices must be integers, not 'str'"
    )


def test_query_dataset_data_0_2_5(live_twin: TwinUrls) -> None:
    by_id = call_text(
        live_twin,
        "0.2.5",
        "query_dataset_data",
        {"question": "Combien ?", "dataset_id": TRANSPORTS, "limit_per_resource": 4},
    )
    sample_row = [
        "      idBank: 010767832",
        "      Libellé: Immatriculations de voitures particulières neuves - France",
    ]
    assert by_id.split("\n")[:13] == [
        "Exploring dataset: Transports",
        f"Dataset ID: {TRANSPORTS}",
        "Question: Combien ?",
        "Found 2 resource(s) to explore",
        "",
        f"--- Resource: Séries mensuelles transports (BDM).csv (ID: {TRANSPORTS_CSV}) ---",
        "  Total rows (Tabular API): 144",
        "  Retrieved: 4 row(s)",
        "  Page info: page 1 (page size 4)",
        "  Columns: __id, idBank, Libellé, Période, Valeur, Unité",
        "",
        "  Sample data (first 3 rows):",
        "    Row 1:",
    ]
    # Three of the four rows retrieved are shown, then the resource that is not tabular.
    assert "\n      __id: 1\n" + "\n".join(sample_row) in by_id
    assert by_id.count("    Row ") == 3
    assert by_id.endswith(
        "    ... (1 more row(s) available)\n"
        "  More data available via Tabular API (next page link provided).\n\n"
        "--- Resource: Immatriculations de voitures particulières neuves - série 010767832 "
        f"(ID: {NOT_TABULAR}) ---\n"
        f"  ⚠️  Resource {NOT_TABULAR} not available via Tabular API\n"
    )
    # 0.2.5 takes the first hit of the v1 search: titles holding "transports", by MongoDB's
    # text score, where a real catalogue dataset ties with "Transports" and comes first.
    by_query = call_text(
        live_twin,
        "0.2.5",
        "query_dataset_data",
        {"question": "Combien ?", "dataset_query": "transports", "limit_per_resource": 1},
    )
    # Its two resources are generated from its export row (a JSON and a CSV file); only
    # hand-written resources have Tabular tables.
    slug = "lignes-de-transport-du-reseau-transports-du-pays-voironnais-1"
    lines = ["Exploring dataset: Lignes de transport du réseau Transports du Pays Voironnais"]
    lines += ["Dataset ID: 65c2cb9b63ecd614c2e5f9fe", "Question: Combien ?"]
    lines += ["Found 2 resource(s) to explore", ""]
    for position, ext in enumerate(("json", "csv")):
        rid = f"65c2cb9b-63ec-d614-c2e5-f9fe0000000{position}"
        lines += [f"--- Resource: {slug}-{position + 1}.{ext} (ID: {rid}) ---"]
        lines += [f"  ⚠️  Resource {rid} not available via Tabular API", ""]
    lines += ["⚠️  No data tables were found or accessible for the resources in this dataset."]
    assert by_query == "\n".join(lines)
    # The default 100 rows per resource is one page, over the twin's Tabular maximum of 50.
    default = call_text(
        live_twin, "0.2.5", "query_dataset_data", {"question": "?", "dataset_id": TRANSPORTS}
    )
    assert "  ❌ Tabular API error (HTTP 400: Client error '400 Bad Request' for url " in default
    assert default.endswith(
        "\n⚠️  No data tables were found or accessible for the resources in this dataset."
    )
    assert call_text(live_twin, "0.2.5", "query_dataset_data", {"question": "?"}) == (
        "Error: Either 'dataset_id' or 'dataset_query' must be provided.\n"
        "Use dataset_id if you know the exact dataset ID, or dataset_query to search for a "
        "dataset."
    )


def test_download_and_parse_resource_per_release(live_twin: TwinUrls) -> None:
    text = call_text(
        live_twin,
        "0.2.5",
        "download_and_parse_resource",
        {"resource_id": TRANSPORTS_CSV, "max_rows": 4},
    )
    lines = text.split("\n")
    assert lines[:13] == [
        "Downloading and parsing resource: Séries mensuelles transports (BDM).csv",
        f"Resource ID: {TRANSPORTS_CSV}",
        lines[2],
        "",
        "Downloaded: 0.01 MB",
        "Format: CSV",
        "",
        "Total rows in file: 144",
        "Returning: 4 row(s)",
        "Columns: idBank, Libellé, Période, Valeur, Unité",
        "",
        "Sample data (first 3 rows):",
        "  Row 1:",
    ]
    assert lines[2].startswith("URL: https://static.data.gouv.fr/resources/transports/")
    # 0.2.5 shows 3 of the rows it returns as a sample.
    assert text.count("  Row ") == 3
    assert lines[-3:] == [
        "  ... (1 more row(s) available)",
        "",
        "⚠️  Note: File contains 144 rows, only showing first 4. Increase max_rows parameter "
        "to see more.",
    ]
    # 0.2.19: hard caps of 500 rows and 50 MB whatever the caller asks; it parses up to the
    # row cap and shows every row it parsed.
    capped = call_text(
        live_twin,
        "0.2.19",
        "download_and_parse_resource",
        {"resource_id": DATA_ES, "max_rows": 10_000},
    )
    assert "\nTotal rows parsed (up to limit): 500\nReturning: 500 row(s)\n" in capped
    assert capped.endswith("\n\n⚠️  Row limit reached (500). The file may contain more rows.")
    many = call_text(
        live_twin,
        "0.2.19",
        "download_and_parse_resource",
        {"resource_id": DICTIONARY, "max_rows": 900},
    )
    assert "Total rows parsed (up to limit): 21\n" in many and "\nData (21 rows):\n" in many
    assert "Row limit reached" not in many
    allowed = call_text(
        live_twin,
        "0.2.5",
        "download_and_parse_resource",
        {"resource_id": DATA_ES, "max_rows": 1, "max_size_mb": 400},
    )
    assert "\nTotal rows in file: 1723\nReturning: 1 row(s)\n" in allowed
    # The format comes from the file name, then the Content-Type: a page is not parsed.
    assert call_text(
        live_twin, "0.2.5", "download_and_parse_resource", {"resource_id": NOT_TABULAR}
    ).endswith(
        "\n\n⚠️  Unknown file format. Filename: 010767832, Content-Type: text/plain\n"
        "Supported formats: CSV, CSV.GZ, JSON, JSONL, XLSX"
    )
