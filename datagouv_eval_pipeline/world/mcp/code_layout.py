"""Tool outputs of every release, as the release's own code lays them out.

The releases' code (v0.2.5, v0.2.14, v0.2.19, v0.2.26) is one family; the differences are read
from :class:`~datagouv_eval_pipeline.world.mcp.versions.Behaviour` flags, and a conformance test
compares each release call by call with a real build of its tag reading the same twin
(``tests/mcp_builds/test_conformance.py``). The v2 search tools of v0.2.26 are in ``tools.py``.

Byte-identical output means more than the happy path: the same upstream requests (so httpx's
error texts name the same URLs), the same fallbacks when a field is missing or null (``None``
printed where the release printed it), the same Python error messages where the release let
one through, and the same partial sections when a row fails half-way.

The code is the twin's own; only the output text, a data format, is the release's.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import json
from collections.abc import Mapping
from typing import Any, Final

import httpx
import yaml

from datagouv_eval_pipeline.base.yaml_loading import safe_load
from datagouv_eval_pipeline.world.mcp import tools
from datagouv_eval_pipeline.world.mcp.text import (
    FILTER_OPERATORS,
    SORT_DIRECTIONS,
    clean_query,
    human_size,
)
from datagouv_eval_pipeline.world.mcp.tools import (
    TIMEOUT_METRICS,
    TIMEOUT_PROBE,
    TIMEOUT_TABULAR,
    ToolEnv,
    ToolImpl,
)

SEARCH_PAGE_SIZE_MAX: Final = 100
QUERY_PAGE_SIZE_MAX: Final = 200
ORIGINAL_MESSAGE_MAX: Final = 2000
OPENAPI_TIMEOUT: Final = 15.0
DOWNLOAD_TIMEOUT: Final = 300.0
DOWNLOAD_CHUNK: Final = 8192
LARGE_TABLE_ROWS: Final = 1000
SAMPLE_ROWS: Final = 3
DATASET_QUERY_PAGE_SIZE_MAX: Final = 200
INVALID_OPERATOR: Final = (
    f"Error: invalid filter_operator. Supported values: {', '.join(FILTER_OPERATORS)}."
)
INVALID_DIRECTION: Final = (
    f"Error: invalid sort_direction. Supported values: {', '.join(SORT_DIRECTIONS)}."
)
# The Tabular hints of v0.2.24 on (``Behaviour.tabular_error_hints``).
TABULAR_404_HINT = (
    "⚠️  This resource ID was not found in the Tabular API. Use search_datasets to find a "
    "dataset, then list_dataset_resources to obtain the correct resource ID."
)
TABULAR_UNAVAILABLE_HINT = (
    "⚠️  The Tabular API is temporarily unavailable or returned a server error. "
    "Please try again in about one minute."
)
TABULAR_REJECTED_HINT = (
    "⚠️  The Tabular API rejected the request (invalid filter, sort column, or parameter). "
    "Call again without sort or filter to preview rows and confirm column names, or align "
    "filter_column and sort_column with the resource schema."
)
TABULAR_MISSING_COLUMN_HINT = (
    " A column or parameter in the request does not exist in this resource; remove "
    "sort/filter or use exact names from a preview."
)
SNIFF_DELIMITERS: Final = ",;\t|"


class _TooLarge(ValueError):
    """A download over the size limit (reported as ``Error: <message>``)."""


def _size_text(value: Any) -> str | None:
    """The release's human size of a truthy int ``filesize``; None when it shows no line."""
    if value and isinstance(value, int):
        return human_size(value)
    return None


def _title_or_name(record: Mapping[str, Any]) -> Any:
    """``title``, else ``name``: None when both are empty (the release prints ``None``)."""
    return record.get("title") or record.get("name")


# ---------------------------------------------------------------- upstream reads of the release


async def _dataset(env: ToolEnv, dataset_id: str) -> dict[str, Any]:
    """The v1 dataset record; HTTP errors propagate."""
    result: dict[str, Any] = await env.get_json(
        f"{env.upstream.urls.datagouv_api}1/datasets/{dataset_id}/"
    )
    return result


async def _resource(env: ToolEnv, resource_id: str) -> dict[str, Any]:
    """The v2 resource payload (``resource`` and ``dataset_id``); HTTP errors propagate."""
    result: dict[str, Any] = await env.get_json(
        f"{env.upstream.urls.datagouv_api}2/datasets/resources/{resource_id}/"
    )
    return result


async def _dataset_title(env: ToolEnv, dataset_id: str) -> Any:
    """The title the release's metadata helper gives (``title`` or ``name``, maybe None)."""
    return _title_or_name(await _dataset(env, dataset_id))


async def _resource_summary(env: ToolEnv, resource_id: str) -> tuple[Any, Any]:
    """(title, dataset id) of a resource, as the release's metadata helper reads them."""
    payload = await _resource(env, resource_id)
    resource: dict[str, Any] = payload.get("resource", {})
    return _title_or_name(resource), payload.get("dataset_id")


# ----------------------------------------------------------------------------- search_datasets


def _tag_names(record: Mapping[str, Any]) -> list[Any]:
    names: list[Any] = []
    for tag in record.get("tags", []):
        if isinstance(tag, str):
            names.append(tag)
        elif isinstance(tag, dict):
            names.append(tag.get("name", ""))
    return names


async def search_datasets(env: ToolEnv, args: Mapping[str, Any]) -> str:
    """``search_datasets``: v1 search with stop-word cleaning; upstream errors escape."""
    if env.behaviour.search_api == "v2":
        return await tools.search_datasets(env, args)
    query: str = args["query"]
    page: int = args["page"]
    urls = env.upstream.urls

    async def search(text: str) -> tuple[list[dict[str, Any]], Any]:
        params = {"q": text, "page": page, "page_size": min(args["page_size"], 100)}
        body = await env.get_json(f"{urls.datagouv_api}1/datasets/", params)
        found: list[dict[str, Any]] = body.get("data", [])
        return found, body.get("total", len(found))

    cleaned = clean_query(query) if env.behaviour.query_cleaning else query
    datasets, total = await search(cleaned)
    # The original query is retried whenever the cleaned one gives an empty page (also past
    # the last page), not only when it matches nothing.
    if not datasets and cleaned != query:
        datasets, total = await search(query)
    if not datasets:
        return f"No datasets found for query: '{query}'"
    lines = [f"Found {total} dataset(s) for query: '{query}'", f"Page {page} of results:", ""]
    for index, dataset in enumerate(datasets, 1):
        organization = dataset.get("organization")
        org = organization.get("name") if organization else None
        tags = _tag_names(dataset)
        short = dataset.get("description_short", "")
        lines.append(f"{index}. {dataset.get('title') or dataset.get('name', '')}")
        lines.append(f"   ID: {dataset.get('id')}")
        if short:
            lines.append(f"   Description: {short[:200]}...")
        if org:
            lines.append(f"   Organization: {org}")
        if tags:
            lines.append(f"   Tags: {', '.join(tags[:5])}")
        lines.append(f"   Resources: {len(dataset.get('resources', []))}")
        lines.append(f"   URL: {urls.site}datasets/{dataset.get('slug', dataset.get('id', ''))}")
        lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------------------- get_dataset_info


def _dataset_lines(env: ToolEnv, data: Mapping[str, Any]) -> list[str]:
    lines = [f"Dataset Information: {data.get('title', 'Unknown')}", ""]
    if data.get("id"):
        lines.append(f"ID: {data['id']}")
    if data.get("slug"):
        lines.append(f"Slug: {data['slug']}")
        lines.append(f"URL: {env.upstream.urls.site}datasets/{data['slug']}/")
    short = data.get("description_short")
    if short:
        lines += ["", f"Description: {short}"]
    description = data.get("description")
    if description and description != short:
        lines += ["", f"Full description: {description[:500]}..."]
    organization = data.get("organization")
    if organization and isinstance(organization, dict):
        lines += ["", f"Organization: {organization.get('name', 'Unknown')}"]
        if organization.get("id"):
            lines.append(f"  Organization ID: {organization['id']}")
    # Unlike the search, the dataset view drops tag objects without a name.
    tags = [
        tag if isinstance(tag, str) else tag.get("name", "")
        for tag in data.get("tags", [])
        if isinstance(tag, str) or (isinstance(tag, dict) and tag.get("name", ""))
    ]
    if tags:
        lines += ["", f"Tags: {', '.join(tags[:10])}"]
    lines += ["", f"Resources: {len(data.get('resources', []))} file(s)"]
    if data.get("created_at"):
        lines += ["", f"Created: {data['created_at']}"]
    if data.get("last_update"):
        lines.append(f"Last updated: {data['last_update']}")
    if data.get("license"):
        lines += ["", f"License: {data['license']}"]
    if data.get("frequency"):
        lines.append(f"Update frequency: {data['frequency']}")
    return lines


async def get_dataset_info(env: ToolEnv, args: Mapping[str, Any]) -> str:
    """``get_dataset_info``: every failure becomes text (404 has its own)."""
    dataset_id: str = args["dataset_id"]
    try:
        return "\n".join(_dataset_lines(env, await _dataset(env, dataset_id)))
    except httpx.HTTPStatusError as error:
        if error.response.status_code == 404:
            return f"Error: Dataset with ID '{dataset_id}' not found."
        return f"Error: HTTP {error.response.status_code} - {error}"
    except Exception as error:  # the release reports any other failure as text
        return f"Error: {error}"


# ---------------------------------------------------------------------- list_dataset_resources


def _detail_lines(resource: Mapping[str, Any], indent: str) -> list[str]:
    lines = []
    if resource.get("format"):
        lines.append(f"{indent}Format: {resource['format']}")
    size = _size_text(resource.get("filesize"))
    if size is not None:
        lines.append(f"{indent}Size: {size}")
    if resource.get("mime"):
        lines.append(f"{indent}MIME type: {resource['mime']}")
    if resource.get("type"):
        lines.append(f"{indent}Type: {resource['type']}")
    return lines


async def _v1_resource_list(env: ToolEnv, dataset_id: str) -> str:
    """The v0.2.19 on list: the v1 dataset's own resources; every failure is ``Error: …``."""
    try:
        data = await _dataset(env, dataset_id)
        resources = data.get("resources", [])
        if not data.get("id"):
            return f"Error: Dataset with ID '{dataset_id}' not found."
        lines = [
            f"Resources in dataset: {data.get('title', 'Unknown')}",
            f"Dataset ID: {dataset_id}",
            f"Total resources: {len(resources)}",
            "",
        ]
        if not resources:
            lines.append("This dataset has no resources.")
            return "\n".join(lines)
        # Numbered by position in the list: a resource without id leaves a gap.
        for index, resource in enumerate(resources, 1):
            if not resource.get("id"):
                continue
            lines.append(f"{index}. {_title_or_name(resource) or 'Untitled'}")
            lines.append(f"   Resource ID: {resource['id']}")
            lines += _detail_lines(resource, "   ")
            if resource.get("url"):
                lines.append(f"   URL: {resource['url']}")
            lines.append("")
        return "\n".join(lines)
    except Exception as error:  # the release reports every failure as text
        return f"Error: {error}"


async def list_dataset_resources(env: ToolEnv, args: Mapping[str, Any]) -> str:
    """``list_dataset_resources``: titles from v1, details from each resource's v2 record."""
    dataset_id: str = args["dataset_id"]
    if env.behaviour.resource_list == "v1":
        return await _v1_resource_list(env, dataset_id)
    try:
        # The release reads the dataset twice (its metadata, then its resources); both are the
        # same GET, so one read gives the same text and the same failures.
        data = await _dataset(env, dataset_id)
        if not data.get("id"):
            return f"Error: Dataset with ID '{dataset_id}' not found."
        listed = [
            (resource.get("id"), resource.get("title", "") or resource.get("name", ""))
            for resource in data.get("resources", [])
            if resource.get("id")
        ]
        lines = [
            f"Resources in dataset: {_title_or_name(data)}",
            f"Dataset ID: {dataset_id}",
            f"Total resources: {len(listed)}",
            "",
        ]
        if not listed:
            lines.append("This dataset has no resources.")
            return "\n".join(lines)
        for index, (resource_id, title) in enumerate(listed, 1):
            lines.append(f"{index}. {title or 'Untitled'}")
            lines.append(f"   Resource ID: {resource_id}")
            try:
                resource = (await _resource(env, resource_id)).get("resource", {})
                details = _detail_lines(resource, "   ")
                if resource.get("url"):
                    details.append(f"   URL: {resource['url']}")
                lines += details
            except Exception:  # the release only logs a resource it cannot read
                pass
            lines.append("")
        return "\n".join(lines)
    except httpx.HTTPStatusError as error:
        return f"Error: HTTP {error.response.status_code} - {error}"
    except Exception as error:  # the release reports any other failure as text
        return f"Error: {error}"


# --------------------------------------------------------------------------- get_resource_info


async def _availability(env: ToolEnv, resource_id: str) -> str:
    try:
        # The exceptions list is read first, then the profile, with a bare client.
        exception = env.behaviour.large_file_exceptions and (
            resource_id in await env.upstream.crawler_exception_ids()
        )
        response = await env.upstream.get(
            f"{env.upstream.urls.tabular_api}resources/{resource_id}/profile/",
            timeout=TIMEOUT_PROBE,
        )
    except Exception:  # unreachable API: the release says so instead of failing
        return "⚠️  Could not check Tabular API availability"
    if response.status_code != 200:
        return "⚠️  Not available via Tabular API (may not be tabular data)"
    if exception:
        return "✅ Available via Tabular API (large file exception)"
    return "✅ Available via Tabular API (can be queried)"


async def get_resource_info(env: ToolEnv, args: Mapping[str, Any]) -> str:
    """``get_resource_info``: v2 record, parent dataset title and Tabular availability."""
    resource_id: str = args["resource_id"]
    try:
        payload = await _resource(env, resource_id)
        resource: dict[str, Any] = payload.get("resource", {})
        if not resource.get("id"):
            return f"Error: Resource with ID '{resource_id}' not found."
        title = _title_or_name(resource) or "Unknown"
        lines = [f"Resource Information: {title}", "", f"Resource ID: {resource_id}"]
        lines += _detail_lines(resource, "")
        if resource.get("url"):
            lines += ["", f"URL: {resource['url']}"]
        if resource.get("description"):
            lines += ["", f"Description: {resource['description']}"]
        dataset_id = payload.get("dataset_id")
        if dataset_id:
            lines += ["", f"Dataset ID: {dataset_id}"]
            try:
                parent = await _dataset_title(env, str(dataset_id))
                if parent:
                    lines.append(f"Dataset: {parent}")
            except Exception:  # the parent's title is decoration
                pass
        lines.append("")
        if env.behaviour.large_file_exceptions:
            lines.append("Tabular API availability:")
        lines.append(await _availability(env, resource_id))
        return "\n".join(lines)
    except httpx.HTTPStatusError as error:
        return f"Error: HTTP {error.response.status_code} - {error}"
    except Exception as error:  # the release reports any other failure as text
        return f"Error: {error}"


# ------------------------------------------------------------------------- query_resource_data


def _cell(value: Any) -> str:
    text = str(value) if value is not None else ""
    return text[:100] + "..." if len(text) > 100 else text


def _columns(rows: list[Any]) -> str:
    """The column names: the keys of the first row (None shown empty)."""
    # .keys(), not iteration: a non-object first row must fail with the release's message.
    return ", ".join(str(key) if key is not None else "" for key in rows[0].keys())  # noqa: SIM118


def _row_block(rows: list[Any], indent: str, lines: list[str]) -> None:
    """Append each row, its cells one per line (a non-object row raises after those before)."""
    for index, row in enumerate(rows, 1):
        lines.append(f"{indent}Row {index}:")
        lines += [f"{indent}  {key}: {_cell(value)}" for key, value in row.items()]


def _rows_lines(rows: list[Any]) -> list[str]:
    """Columns, then each row."""
    lines = [f"Columns: {_columns(rows)}", ""]
    lines.append("Data (1 row):" if len(rows) == 1 else f"Data ({len(rows)} rows):")
    _row_block(rows, "  ", lines)
    return lines


def _rejected_text(response: httpx.Response) -> str:
    """The v0.2.24+ text of a Tabular error other than 404 (raises where the release does)."""
    status = response.status_code
    if status >= 500 or status in (408, 429):
        return TABULAR_UNAVAILABLE_HINT
    if status in (401, 403):
        return (
            f"⚠️  The Tabular API returned HTTP {status} (access or permission). "
            "If the problem persists, try again in about one minute."
        )
    try:
        payload: Any = json.loads(response.text)
    except json.JSONDecodeError:
        payload = None
    messages: list[str] = []
    hint = False
    if isinstance(payload, dict):
        # Every error is assumed to carry detail.message as a string: anything else raises
        # (KeyError, TypeError, AttributeError), and the caller shows that error instead.
        for error in payload["errors"]:
            message = error["detail"]["message"].strip()
            if message:
                messages.append(message)
        first = payload["errors"][0] if payload["errors"] else None
        detail = first.get("detail") if isinstance(first, dict) else None
        text = detail.get("message") if isinstance(detail, dict) else None
        hint = isinstance(text, str) and "does not exist" in text.lower()
    line = TABULAR_REJECTED_HINT + (TABULAR_MISSING_COLUMN_HINT if hint else "")
    if messages:
        joined = ", ".join(messages)
        if len(joined) > ORIGINAL_MESSAGE_MAX:
            joined = joined[: ORIGINAL_MESSAGE_MAX - 3] + "..."
        line += f" - Original error message: {joined}"
    return line


async def _table_page(
    env: ToolEnv, resource_id: str, params: dict[str, Any], lines: list[str], page: int
) -> None:
    """Append one page of Tabular rows (or the release's text for its failure) to ``lines``."""
    url = f"{env.upstream.urls.tabular_api}resources/{resource_id}/data/"
    try:
        response = await env.upstream.get(
            url, params=params, timeout=TIMEOUT_TABULAR, headers=env.headers
        )
        hints = env.behaviour.tabular_error_hints
        if response.status_code == 404:
            lines.append(
                TABULAR_404_HINT
                if hints
                else f"⚠️  Resource {resource_id} not available via Tabular API"
            )
            return
        if hints and response.status_code >= 400:
            lines.append(_rejected_text(response))
            return
        response.raise_for_status()
        body = response.json()
        rows = body.get("data", [])
        meta = body.get("meta", {})
        if not rows:
            lines.append("⚠️  No rows available (resource may be empty or filtered).")
            return
        total = meta.get("total")
        size = meta.get("page_size")
        if total is not None:
            lines.append(f"Total rows (Tabular API): {total}")
            if size and size > 0:
                lines.append(f"Total pages: {(total + size - 1) // size} (page size: {size})")
        lines.append(f"Retrieved: {len(rows)} row(s) from page {meta.get('page') or page}")
        lines += _rows_lines(rows)
        if body.get("links", {}).get("next"):
            lines.append("")
            if (
                total
                and total > LARGE_TABLE_ROWS
                and not env.spec.tool("download_and_parse_resource")
            ):
                lines.append(
                    f"⚠️ Large dataset ({total} rows). To get all data, paginate using "
                    f"page={page + 1} or use get_resource_info to retrieve the raw file URL "
                    "and fetch it directly."
                )
            elif total and total > LARGE_TABLE_ROWS:
                lines.append(
                    f"⚠️ Large dataset ({total} rows). For comprehensive analysis, consider "
                    "using download_and_parse_resource instead of paginating through many pages."
                )
                lines.append(
                    f"   If you only need specific data, you can continue with page={page + 1}."
                )
            else:
                lines.append(f"📄 More data available. Use page={page + 1} to see the next page.")
    except httpx.HTTPStatusError as error:
        lines.append(
            f"❌ Tabular API error (HTTP {error.response.status_code}: {error} - "
            f"URL: {error.request.url})"
        )
    except Exception as error:  # the release reports a failed read as a line
        lines.append(f"❌ Error querying resource: {error}")


async def query_resource_data(env: ToolEnv, args: Mapping[str, Any]) -> str:
    """``query_resource_data``: one page of rows, with the caller's filter and sort echoed."""
    resource_id: str = args["resource_id"]
    page: int = args["page"]
    column, value = args.get("filter_column"), args.get("filter_value")
    operator: str = args["filter_operator"]
    sort_column, direction = args.get("sort_column"), args["sort_direction"]
    filtering = bool(column) and value is not None
    if env.behaviour.query_validation:
        operator, direction = operator.lower(), direction.lower()
        if filtering and operator not in FILTER_OPERATORS:
            return (
                f"Error: invalid filter_operator. Supported values: {', '.join(FILTER_OPERATORS)}."
            )
        if sort_column and direction not in SORT_DIRECTIONS:
            return INVALID_DIRECTION
    try:
        try:
            title, dataset_id = await _resource_summary(env, resource_id)
        except Exception:  # metadata is decoration
            title, dataset_id = "Unknown", None
        parent: Any = "Unknown"
        if dataset_id:
            with contextlib.suppress(Exception):  # likewise
                parent = await _dataset_title(env, str(dataset_id))
        lines = [f"Querying resource: {title}", f"Resource ID: {resource_id}"]
        if dataset_id:
            lines.append(f"Dataset: {parent} (ID: {dataset_id})")
        if "question" in args:
            lines.append(f"Question: {args['question']}")
        lines.append("")
        if filtering:
            lines.append(f"Filter: {column} {operator} {value}")
        if sort_column:
            lines.append(f"Sort: {sort_column} ({direction})")
        if column or sort_column:
            lines.append("")
        params: dict[str, Any] = {
            "page": max(page, 1),
            "page_size": max(1, min(args["page_size"], QUERY_PAGE_SIZE_MAX)),
        }
        if filtering:
            # The release maps these operators one to one; any other goes upstream as "exact"
            # while the header above still shows what the caller wrote.
            params[f"{column}__{operator if operator in FILTER_OPERATORS else 'exact'}"] = value
        if sort_column:
            params[f"{sort_column}__sort"] = "desc" if direction.lower() == "desc" else "asc"
        await _table_page(env, resource_id, params, lines, page)
        return "\n".join(lines)
    except httpx.HTTPStatusError as error:
        return f"Error: HTTP {error.response.status_code} - {error}"
    except Exception as error:  # the release reports any other failure as text
        return f"Error: {error}"


# ----------------------------------------------------------- query_dataset_data (up to v0.2.5)


class _NotTabular(Exception):
    """A resource the Tabular API answers 404 for (its message is shown after ``⚠️``)."""


async def _dataset_and_resources(
    env: ToolEnv, dataset_id: str
) -> tuple[dict[str, Any], list[tuple[Any, Any]]]:
    """The release's dataset summary (id, title) and its (id, title) resource pairs.

    The release reads the v1 record twice, once for each; one read gives the same text and
    the same failures.
    """
    data = await _dataset(env, dataset_id)
    summary = {"id": data.get("id"), "title": _title_or_name(data)}
    resources = [
        (resource.get("id"), resource.get("title", "") or resource.get("name", ""))
        for resource in data.get("resources", [])
        if resource.get("id")
    ]
    return summary, resources


async def _first_hit(env: ToolEnv, query: str) -> list[Any]:
    """The id of the first v1 search hit for ``query`` in a list, empty when nothing matches."""
    body = await env.get_json(
        f"{env.upstream.urls.datagouv_api}1/datasets/", {"q": query, "page": 1, "page_size": 1}
    )
    hits: list[dict[str, Any]] = body.get("data", [])
    return [hit.get("id") for hit in hits[:1]]


async def _explore_table(env: ToolEnv, resource_id: Any, page_size: int, lines: list[str]) -> bool:
    """Append the first page of a resource's rows; return whether it had any.

    A failure leaves the lines appended before it and adds its own line.
    """
    had_rows = False
    try:
        response = await env.upstream.get(
            f"{env.upstream.urls.tabular_api}resources/{resource_id}/data/",
            params={"page": 1, "page_size": page_size},
            timeout=TIMEOUT_TABULAR,
            headers=env.headers,
        )
        if response.status_code == 404:
            raise _NotTabular(f"Resource {resource_id} not available via Tabular API")
        response.raise_for_status()
        body = response.json()
        rows = body.get("data", [])
        meta = body.get("meta", {})
        if not rows:
            lines.append("  ⚠️  No rows available (resource may be empty or filtered).")
            return False
        had_rows = True
        if meta.get("total") is not None:
            lines.append(f"  Total rows (Tabular API): {meta['total']}")
        lines.append(f"  Retrieved: {len(rows)} row(s)")
        if meta.get("page") is not None and meta.get("page_size") is not None:
            lines.append(f"  Page info: page {meta['page']} (page size {meta['page_size']})")
        lines.append(f"  Columns: {_columns(rows)}")
        lines.append("\n  Sample data (first 3 rows):")
        _row_block(rows[:SAMPLE_ROWS], "    ", lines)
        if len(rows) > SAMPLE_ROWS:
            lines.append(f"    ... ({len(rows) - SAMPLE_ROWS} more row(s) available)")
        if body.get("links", {}).get("next"):
            lines.append("  More data available via Tabular API (next page link provided).")
    except _NotTabular as error:
        lines.append(f"  ⚠️  {error}")
    except httpx.HTTPStatusError as error:
        lines.append(
            f"  ❌ Tabular API error (HTTP {error.response.status_code}: {error} - "
            f"URL: {error.request.url})"
        )
    except Exception as error:  # one failing resource must not hide the others
        lines.append(f"  ❌ Error exploring table: {error}")
    return had_rows


async def query_dataset_data(env: ToolEnv, args: Mapping[str, Any]) -> str:
    """``query_dataset_data``: the first rows of every resource of one dataset."""
    question: str = args["question"]
    dataset_id: Any = args.get("dataset_id")
    dataset_query: str | None = args.get("dataset_query")
    try:
        if dataset_id:
            dataset, resources = await _dataset_and_resources(env, dataset_id)
            if not dataset["id"]:
                return f"Error: Dataset with ID '{dataset_id}' not found."
        elif dataset_query:
            hit = await _first_hit(env, dataset_query)
            if not hit:
                return f"Error: No dataset found for query '{dataset_query}'."
            dataset_id = hit[0]
            dataset, resources = await _dataset_and_resources(env, dataset_id)
        else:
            return (
                "Error: Either 'dataset_id' or 'dataset_query' must be provided.\n"
                "Use dataset_id if you know the exact dataset ID, or dataset_query to search "
                "for a dataset."
            )
        title, dataset_id = dataset["title"], dataset["id"]
        if not resources:
            return (
                f"Dataset '{title}' (ID: {dataset_id}) has no resources.\n"
                "No data tables are available to explore."
            )
        lines = [
            f"Exploring dataset: {title}",
            f"Dataset ID: {dataset_id}",
            f"Question: {question}",
            f"Found {len(resources)} resource(s) to explore\n",
        ]
        page_size = max(1, min(args["limit_per_resource"], DATASET_QUERY_PAGE_SIZE_MAX))
        found = False
        for resource_id, resource_title in resources:
            lines.append(f"--- Resource: {resource_title or 'Untitled'} (ID: {resource_id}) ---")
            found = await _explore_table(env, resource_id, page_size, lines) or found
            lines.append("")
        if not found:
            lines.append(
                "⚠️  No data tables were found or accessible for the resources in this dataset."
            )
        return "\n".join(lines)
    except httpx.HTTPStatusError as error:
        return f"Error: HTTP {error.response.status_code} - {error}"
    except Exception as error:  # the release reports any other failure as text
        return f"Error: {error}"


# ----------------------------------------------------------------- download_and_parse_resource


async def _download(env: ToolEnv, url: str, limit: int) -> tuple[bytes, str, str]:
    """(content, file name, content type) of a download of at most ``limit`` bytes."""
    response = await env.upstream.get(url, timeout=DOWNLOAD_TIMEOUT)
    response.raise_for_status()
    declared = response.headers.get("Content-Length")
    mb = 1024 * 1024
    if declared and int(declared) > limit:
        raise _TooLarge(f"File too large: {int(declared) / mb:.1f} MB (max: {limit / mb:.1f} MB)")
    content = b""
    # Checked chunk by chunk, as the release streams it.
    for start in range(0, len(response.content), DOWNLOAD_CHUNK):
        content += response.content[start : start + DOWNLOAD_CHUNK]
        if len(content) > limit:
            raise _TooLarge(f"File too large: exceeds {limit / mb:.1f} MB limit")
    disposition = response.headers.get("Content-Disposition", "")
    if "filename=" in disposition:
        name = disposition.split("filename=")[1].strip("\"'")
    elif "/" in url:
        name = url.split("/")[-1].split("?")[0]
    else:
        name = "resource"
    return content, name, response.headers.get("Content-Type", "").split(";")[0]


def _file_format(name: str, content_type: str) -> str:
    lowered = name.lower()
    by_suffix = (
        ((".csv", ".csv.gz"), "csv"),
        ((".json", ".jsonl", ".ndjson"), "json"),
        ((".xml",), "xml"),
        ((".xlsx",), "xlsx"),
        ((".xls",), "xls"),
        ((".gz",), "gzip"),
        ((".zip",), "zip"),
    )
    for suffixes, kind in by_suffix:
        if lowered.endswith(suffixes):
            return kind
    by_type = (
        (("csv",), "csv"),
        (("json",), "json"),
        (("xml",), "xml"),
        (("excel", "spreadsheet"), "xlsx"),
        (("gzip",), "gzip"),
    )
    for words, kind in by_type:
        if any(word in content_type for word in words):
            return kind
    return "unknown"


def _csv_rows(content: bytes, gzipped: bool) -> list[Any]:
    text = (gzip.decompress(content) if gzipped else content).decode("utf-8-sig")
    sample = "\n".join(text.split("\n")[:5])
    delimiter = ","
    try:
        delimiter = csv.Sniffer().sniff(sample, delimiters=SNIFF_DELIMITERS).delimiter
    except (csv.Error, AttributeError):
        # The most frequent candidate, if it occurs at least twice (first one on ties).
        counts = [(candidate, sample.count(candidate)) for candidate in SNIFF_DELIMITERS]
        best, seen = max(counts, key=lambda item: item[1])
        if seen >= 2:
            delimiter = best
    return list(csv.DictReader(io.StringIO(text), delimiter=delimiter))


def _json_rows(content: bytes, gzipped: bool, line_cap: int | None = None) -> list[Any]:
    """Rows of a JSON array or object, else of JSON Lines (at most ``line_cap`` of them)."""
    text = (gzip.decompress(content) if gzipped else content).decode("utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = None
    else:
        if isinstance(data, list):
            return data
        if isinstance(data, dict):
            return [data]
    # Not one array or object: JSON Lines, skipping the lines that do not parse.
    rows: list[Any] = []
    for line in text.strip().split("\n"):
        if line_cap is not None and len(rows) >= line_cap:
            break
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return rows


# Formats the release names but does not parse: the lines it shows instead of rows.
_UNPARSED: Final[Mapping[str, tuple[str, str]]] = {
    "xlsx": (
        "Format: XLSX",
        "⚠️  XLSX parsing requires openpyxl library. "
        "Please install it or use Tabular API for smaller files.",
    ),
    "xls": (
        "Format: XLS",
        "⚠️  XLS format not supported. Please use Tabular API or convert to XLSX/CSV.",
    ),
    "xml": ("Format: XML", "⚠️  XML parsing not yet implemented."),
}


def _parsed_lines(rows: list[Any], max_rows: int) -> list[str]:
    total = len(rows)
    shown = rows[:max_rows]
    lines = ["", f"Total rows in file: {total}", f"Returning: {len(shown)} row(s)"]
    if shown:
        lines += _rows_lines(shown)
    else:
        lines += ["", "Data (0 rows):"]
    if total > max_rows:
        lines += [
            "",
            f"⚠️  Note: File contains {total} rows, only showing first {max_rows}. "
            "Increase max_rows parameter to see more.",
        ]
    return lines


def _sampled_lines(rows: list[Any], max_rows: int) -> list[str]:
    """The v0.2.5 layout: the returned rows counted, the first 3 of them shown."""
    total = len(rows)
    shown = rows[:max_rows]
    lines = ["", f"Total rows in file: {total}", f"Returning: {len(shown)} row(s)"]
    if shown:
        lines.append(f"Columns: {_columns(shown)}")
    lines += ["", "Sample data (first 3 rows):"]
    _row_block(shown[:SAMPLE_ROWS], "  ", lines)
    if len(shown) > SAMPLE_ROWS:
        lines.append(f"  ... ({len(shown) - SAMPLE_ROWS} more row(s) available)")
    if total > max_rows:
        lines += [
            "",
            f"⚠️  Note: File contains {total} rows, only showing first {max_rows}. "
            "Increase max_rows parameter to see more.",
        ]
    return lines


def _capped_lines(rows: list[Any], max_rows: int) -> list[str]:
    """The v0.2.19 layout: the file was parsed up to the row cap, every parsed row is shown."""
    lines = [
        "",
        f"Total rows parsed (up to limit): {len(rows)}",
        f"Returning: {len(rows)} row(s)",
        *_rows_lines(rows),
    ]
    if len(rows) == max_rows:
        lines += ["", f"⚠️  Row limit reached ({max_rows}). The file may contain more rows."]
    return lines


async def download_and_parse_resource(env: ToolEnv, args: Mapping[str, Any]) -> str:
    """``download_and_parse_resource``: download the file, parse CSV or JSON, show rows."""
    resource_id: str = args["resource_id"]
    max_rows: int = args["max_rows"]
    caps = env.behaviour.download_caps
    if caps is not None:
        max_rows = min(max(max_rows, 1), caps[1])
    max_size_mb: int = caps[0] if caps is not None else args["max_size_mb"]
    try:
        resource: dict[str, Any] = (await _resource(env, resource_id)).get("resource", {})
        if not resource.get("id"):
            return f"Error: Resource with ID '{resource_id}' not found."
        url = resource.get("url")
        if not url:
            return f"Error: Resource {resource_id} has no download URL."
        lines = [
            f"Downloading and parsing resource: {_title_or_name(resource) or 'Unknown'}",
            f"Resource ID: {resource_id}",
            f"URL: {url}",
            "",
        ]
        try:
            content, name, content_type = await _download(env, url, max_size_mb * 1024 * 1024)
        except ValueError as error:
            return f"Error: {error}"
        except Exception as error:  # a failed download is reported as text
            return f"Error downloading resource: {error}"
        lines.append(f"Downloaded: {len(content) / (1024 * 1024):.2f} MB")
        gzipped = name.lower().endswith(".gz") or "gzip" in content_type
        kind = _file_format(name, content_type)
        if kind == "unknown":
            lines += [
                "",
                f"⚠️  Unknown file format. Filename: {name}, Content-Type: {content_type}",
                "Supported formats: CSV, CSV.GZ, JSON, JSONL, XLSX",
            ]
            return "\n".join(lines)
        try:
            if kind == "csv" or (kind == "gzip" and "csv" in name.lower()):
                lines.append("Format: CSV")
                rows = _csv_rows(content, gzipped)
                if caps is not None:
                    rows = rows[:max_rows]
            elif kind == "json":
                lines.append("Format: JSON/JSONL")
                rows = _json_rows(content, gzipped, max_rows if caps is not None else None)
            else:
                lines += _UNPARSED.get(
                    kind, (f"Format: {kind}", "⚠️  Format not supported for parsing.")
                )
                return "\n".join(lines)
        except Exception as error:  # a file that does not parse is reported as text
            return f"Error parsing file: {error}"
        if not rows:
            lines += ["", "⚠️  No data rows found in file."]
            return "\n".join(lines)
        if caps is not None:
            return "\n".join(lines + _capped_lines(rows, max_rows))
        if env.behaviour.download_sample:
            return "\n".join(lines + _sampled_lines(rows, max_rows))
        return "\n".join(lines + _parsed_lines(rows, max_rows))
    except httpx.HTTPStatusError as error:
        return f"Error: HTTP {error.response.status_code} - {error}"
    except Exception as error:  # the release reports any other failure as text
        return f"Error: {error}"


# --------------------------------------------------------------------------------- get_metrics


def _metric_table(
    rows: list[dict[str, Any]], lines: list[str], with_visits: bool, none_safe: bool
) -> None:
    """Append the monthly table; a bad row raises after the rows before it were appended."""
    rule = "-" * (60 if with_visits else 40)
    lines += ["Monthly Statistics:", rule]
    header = f"{'Month':<12} {'Visits':<15} " if with_visits else f"{'Month':<12} "
    lines += [header + f"{'Downloads':<15}", rule]
    visits_total = downloads_total = 0
    for row in rows:
        month = row.get("metric_month", "Unknown")
        downloads = row.get("monthly_download_resource", 0)
        if none_safe:
            downloads = downloads or 0
        if with_visits:
            visits = row.get("monthly_visit", 0)
            if none_safe:
                visits = visits or 0
            visits_total += visits
            downloads_total += downloads
            lines.append(f"{month:<12} {visits:<15,} {downloads:<15,}")
        else:
            downloads_total += downloads
            lines.append(f"{month:<12} {downloads:<15,}")
    lines.append(rule)
    if with_visits:
        lines.append(f"{'Total':<12} {visits_total:<15,} {downloads_total:<15,}")
    else:
        lines.append(f"{'Total':<12} {downloads_total:<15,}")


async def _metrics_section(
    env: ToolEnv, kind: str, object_id: str, limit: int, lines: list[str]
) -> None:
    """Append the section of a dataset (``kind="dataset"``) or a resource to ``lines``."""
    label = kind.capitalize()
    try:
        if kind == "dataset":
            title = await _dataset_title(env, object_id)
        else:
            title, _ = await _resource_summary(env, object_id)
        lines.append(f"{label} Metrics: {title}")
    except Exception:  # the section goes on without a title
        lines.append(f"{label} Metrics")
    lines += [f"{label} ID: {object_id}", ""]
    try:
        body = await env.get_json(
            f"{env.upstream.urls.metrics_api}{kind}s/data/",
            {
                f"{kind}_id__exact": object_id,
                "metric_month__sort": "desc",
                "page_size": limit,
            },
            timeout=TIMEOUT_METRICS,
        )
        rows = body.get("data", [])
        if not rows:
            lines.append(f"No metrics available for this {kind}.")
        else:
            _metric_table(rows, lines, kind == "dataset", none_safe=env.behaviour.metrics_none_safe)
    except Exception as error:  # the release shows a failed section as a line
        lines.append(f"Error fetching {kind} metrics: {error}")


async def get_metrics(env: ToolEnv, args: Mapping[str, Any]) -> str:
    """``get_metrics``: monthly visits and downloads of a dataset and/or a resource."""
    dataset_id: str | None = args.get("dataset_id")
    resource_id: str | None = args.get("resource_id")
    if not dataset_id and not resource_id:
        return "Error: At least one of dataset_id or resource_id must be provided."
    limit = max(1, min(args["limit"], env.behaviour.metrics_limit_max))
    lines: list[str] = []
    try:
        if dataset_id:
            dataset_id = dataset_id.strip()
            if not dataset_id:
                return "Error: dataset_id cannot be empty."
            await _metrics_section(env, "dataset", dataset_id, limit, lines)
            if resource_id:
                lines += ["", ""]
        if resource_id:
            resource_id = resource_id.strip()
            if not resource_id:
                return "Error: resource_id cannot be empty."
            await _metrics_section(env, "resource", resource_id, limit, lines)
        return "\n".join(lines)
    except Exception as error:  # the release's last resort
        return f"Error: {error}"


# --------------------------------------------------------------------------- dataservice tools


def _dataservice_not_found(env: ToolEnv, dataservice_id: str) -> str:
    if env.behaviour.wording == "dataservice":
        return f"Error: Dataservice with ID '{dataservice_id}' not found."
    return f"Error: Third-party API not found (dataservice_id='{dataservice_id}')."


async def _dataservice(env: ToolEnv, dataservice_id: str) -> dict[str, Any]:
    """The v1 dataservice record; HTTP errors propagate."""
    result: dict[str, Any] = await env.get_json(
        f"{env.upstream.urls.datagouv_api}1/dataservices/{dataservice_id}/"
    )
    return result


def _dataservice_lines(env: ToolEnv, data: Mapping[str, Any]) -> list[str]:
    heading = (
        "Dataservice Information"
        if env.behaviour.wording == "dataservice"
        else "Third-party API information"
    )
    lines = [f"{heading}: {data.get('title', 'Unknown')}", ""]
    if data.get("id"):
        lines.append(f"ID: {data['id']}")
    lines.append(f"URL: {env.upstream.urls.site}dataservices/{data.get('id', '')}/")
    if data.get("description"):
        lines += ["", f"Description: {data['description'][:500]}..."]
    lines.append("")
    if data.get("base_api_url"):
        lines.append(f"Base API URL: {data['base_api_url']}")
    if data.get("machine_documentation_url"):
        lines.append(f"OpenAPI/Swagger spec: {data['machine_documentation_url']}")
    organization = data.get("organization")
    if organization and isinstance(organization, dict):
        lines += ["", f"Organization: {organization.get('name', 'Unknown')}"]
        if organization.get("id"):
            lines.append(f"  Organization ID: {organization['id']}")
    tags = [
        tag if isinstance(tag, str) else tag.get("name", "")
        for tag in data.get("tags") or []
        if isinstance(tag, str) or (isinstance(tag, dict) and tag.get("name", ""))
    ]
    if tags:
        lines += ["", f"Tags: {', '.join(tags[:10])}"]
    if data.get("created_at"):
        lines += ["", f"Created: {data['created_at']}"]
    if data.get("last_update"):
        lines.append(f"Last updated: {data['last_update']}")
    if data.get("license"):
        lines += ["", f"License: {data['license']}"]
    datasets = data.get("datasets", {})
    if isinstance(datasets, dict) and datasets.get("total"):
        lines += ["", f"Related datasets: {datasets['total']}"]
    return lines


async def get_dataservice_info(env: ToolEnv, args: Mapping[str, Any]) -> str:
    """``get_dataservice_info``: every failure becomes text (404 has its own)."""
    dataservice_id: str = args["dataservice_id"]
    try:
        return "\n".join(_dataservice_lines(env, await _dataservice(env, dataservice_id)))
    except httpx.HTTPStatusError as error:
        if error.response.status_code == 404:
            return _dataservice_not_found(env, dataservice_id)
        return f"Error: HTTP {error.response.status_code} - {error}"
    except Exception as error:  # the release reports any other failure as text
        return f"Error: {error}"


async def _openapi_document(env: ToolEnv, url: str) -> Any:
    """The spec at ``url``, read as JSON, else YAML (any YAML value, as the release takes it)."""
    response = await env.upstream.get(
        url, timeout=OPENAPI_TIMEOUT, headers=env.headers, follow_redirects=True
    )
    response.raise_for_status()
    text = response.text
    with contextlib.suppress(ValueError):
        return json.loads(text)
    with contextlib.suppress(yaml.YAMLError):
        return safe_load(text)
    raise ValueError(f"Could not parse OpenAPI spec from {url} as JSON or YAML")


def _parameter_lines(parameters: list[Any]) -> list[str]:
    lines = []
    for parameter in parameters:
        required = " (required)" if parameter.get("required", False) else ""
        kind = parameter.get("schema", {}).get("type", "")
        lines.append(
            f"      - {parameter.get('name', '?')} [{parameter.get('in', '')}, {kind}]{required}"
        )
    return lines


def _spec_summary(spec: Any) -> str:
    """Info, servers, base URL and endpoints of a spec (a non-object raises, as in the release)."""
    lines: list[str] = []
    info = spec.get("info", {})
    if info.get("title"):
        lines.append(f"API: {info['title']}")
    if info.get("version"):
        lines.append(f"Version: {info['version']}")
    if info.get("description"):
        lines.append(f"Description: {info['description'][:300]}...")
    servers = spec.get("servers", [])
    if servers:
        lines += ["", "Servers:"]
        for server in servers[:3]:
            note = server.get("description", "")
            lines.append(f"  - {server.get('url', '')}" + (f" ({note})" if note else ""))
    if spec.get("host"):
        scheme = (spec.get("schemes") or ["https"])[0]
        lines.append(f"\nBase URL: {scheme}://{spec['host']}{spec.get('basePath', '')}")
    paths = spec.get("paths", {})
    if paths:
        lines += ["", f"Endpoints ({len(paths)} paths):"]
        for path, methods in paths.items():
            if not isinstance(methods, dict):
                continue
            for method, details in methods.items():
                if method.startswith("x-") or method == "parameters":
                    continue
                if not isinstance(details, dict):
                    continue
                summary = details.get("summary", details.get("description", ""))
                lines.append(f"  {method.upper()} {path}")
                if summary:
                    lines.append(f"    {summary.split(chr(10))[0][:120]}")
                if details.get("parameters", []):
                    lines.append("\n".join(_parameter_lines(details["parameters"])))
    return "\n".join(lines)


async def get_dataservice_openapi_spec(env: ToolEnv, args: Mapping[str, Any]) -> str:
    """``get_dataservice_openapi_spec``: the record, then a summary of its spec."""
    dataservice_id: str = args["dataservice_id"]
    try:
        data = await _dataservice(env, dataservice_id)
        doc_url = data.get("machine_documentation_url")
        base = data.get("base_api_url")
        title = data.get("title", "Unknown")
        if not doc_url:
            if env.behaviour.wording == "dataservice":
                text = f"Dataservice '{title}' has no machine_documentation_url."
            else:
                text = (
                    f"Third-party API '{title}' has no machine_documentation_url "
                    "(dataservice catalog entry)."
                )
            if base:
                text += f" Base API URL is: {base}"
            return text
        summary = _spec_summary(await _openapi_document(env, doc_url))
        lines = [f"OpenAPI spec for: {title}", f"Source: {doc_url}"]
        if base:
            lines.append(f"Base API URL: {base}")
        return "\n".join([*lines, "", summary])
    except httpx.HTTPStatusError as error:
        # Also a spec URL that answers 404: the release names the dataservice as not found.
        if error.response.status_code == 404:
            return _dataservice_not_found(env, dataservice_id)
        return f"Error: HTTP {error.response.status_code} - {error}"
    except Exception as error:  # the release reports any other failure as text
        return f"Error fetching OpenAPI spec: {error}"


IMPLEMENTATIONS: Final[Mapping[str, ToolImpl]] = {
    "search_datasets": search_datasets,
    "search_organizations": tools.search_organizations,
    "search_dataservices": tools.search_dataservices,
    "get_dataservice_info": get_dataservice_info,
    "get_dataservice_openapi_spec": get_dataservice_openapi_spec,
    "get_dataset_info": get_dataset_info,
    "list_dataset_resources": list_dataset_resources,
    "get_resource_info": get_resource_info,
    "query_resource_data": query_resource_data,
    "query_dataset_data": query_dataset_data,
    "download_and_parse_resource": download_and_parse_resource,
    "get_metrics": get_metrics,
}
"""The ``code`` layout of each tool of v0.2.14, v0.2.19 and v0.2.26."""
