"""Tool descriptions written for the twin (the real docstrings are not reproduced).

They say what each tool does in the emulated release, so an agent reading ``tools/list`` learns
the same capabilities and limits as from the real server; wording follows the release
(``dataservice`` before v0.2.25, ``third-party API`` after).
"""

from __future__ import annotations

from datagouv_eval_pipeline.world.mcp.versions import ToolSignature, VersionSpec


def describe(signature: ToolSignature, spec: VersionSpec) -> str:
    """Return the description of one tool in one release."""
    b = spec.behaviour
    names = set(signature.param_names())
    api = b.wording
    apis = f"{api}s"
    match signature.name:
        case "search_datasets":
            text = (
                "Search the data.gouv.fr catalog for datasets matching keywords. Returns one page "
                "of results with each dataset's id, title, short description, organization, "
                "tags, number of resources and URL."
            )
            if b.query_cleaning:
                text += (
                    " Generic words (données, fichier, tableau, csv, excel, json, xml…) are "
                    "dropped from the query; use short, specific keywords."
                )
            text += " page_size is capped at 100."
            if "sort" in names:
                text += (
                    " sort: created, last_update, reuses, followers or views, prefixed with '-' "
                    "for descending. last_update_range: last_30_days, last_12_months or "
                    "last_3_years."
                )
            return text
        case "search_organizations":
            return (
                "Search organizations (producers) on data.gouv.fr by keywords, or browse them "
                "with an empty query. Optional filters: badge (public-service, certified, "
                "association, company, local-authority), exact name, business_number_id (SIREN) "
                "and sort (name, datasets, reuses, followers, views, created, last_modified; "
                "'-' for descending). Returns ids, slugs, badges, metrics and URLs."
            )
        case "search_dataservices":
            return (
                f"Search {apis} (APIs registered in the data.gouv.fr catalog) by keywords. "
                "Returns each one's id, title, description, organization, base API URL, tags "
                "and URL."
            )
        case "get_dataservice_info":
            return (
                f"Get the catalog record of one {api} by id: description, base API URL, "
                "OpenAPI/Swagger documentation URL, organization, tags, dates, license and the "
                "number of related datasets."
            )
        case "get_dataservice_openapi_spec":
            return (
                f"Fetch and summarise the OpenAPI/Swagger specification of one {api}: API "
                "title and version, servers, and every endpoint with its parameters. Use it to "
                "learn how to call the API."
            )
        case "query_dataset_data":
            return (
                "Answer a question from a dataset's data: find the dataset (by dataset_id, or by "
                "searching with dataset_query), then fetch up to limit_per_resource rows of each "
                "of its resources through the Tabular API. Resources that are not tabular are "
                "listed without rows."
            )
        case "query_resource_data":
            text = (
                "Read rows of one tabular resource (CSV/XLSX file) through the Tabular API, one "
                "page at a time (page_size up to "
                f"{b.query_page_size_max}). Optional filter: filter_column, filter_value and "
                "filter_operator (exact, contains, less, greater, strictly_less, "
                "strictly_greater); optional sort: sort_column and sort_direction (asc or "
                "desc). The output gives the total row count and the number of pages."
            )
            if "question" in names:
                text += " question: the question you want to answer with these rows."
            return text
        case "get_dataset_info":
            return (
                "Get the metadata of one dataset by id or slug: title, descriptions, "
                "organization, tags, number of resources, dates, license and update frequency."
            )
        case "list_dataset_resources":
            return (
                "List the resources (files) of one dataset with their ids, formats, sizes, MIME "
                "types, types and URLs. Use a resource id with the resource and data tools."
            )
        case "get_resource_info":
            return (
                "Get the metadata of one resource (file) by id: title, format, size, type, URL, "
                "description, parent dataset, and whether the Tabular API can query it."
            )
        case "download_and_parse_resource":
            text = (
                "Download a resource file and parse it (CSV, CSV.GZ, JSON, JSON Lines), then "
                "show its columns, its row count and the first max_rows rows."
            )
            if b.download_caps is not None:
                text += (
                    f" Files above {b.download_caps[0]} MB are refused and at most "
                    f"{b.download_caps[1]} rows are shown."
                )
            else:
                text += " Files larger than max_size_mb are refused."
            return text
        case "get_metrics":
            return (
                "Get monthly usage statistics of a dataset (visits and downloads) and/or a "
                "resource (downloads), most recent month first, with totals. Give dataset_id, "
                f"resource_id or both; limit is the number of months (1 to {b.metrics_limit_max})."
            )
    raise KeyError(f"no description for tool {signature.name!r}")
