"""The data tools: Tabular queries and file downloads.

``query_resource_data`` exists from v0.2.6, ``query_dataset_data`` up to v0.2.5 and
``download_and_parse_resource`` up to v0.2.19.

``query_resource_data`` follows reference §1.4 to the letter (validation texts, clamps, header,
row layout, pagination hints, the v0.2.24 Tabular error hints and their latent TypeError).
The two older tools are reconstructions: the reference gives their signatures, not their text
layouts; docs/twin.md lists what is reconstructed.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
from collections.abc import Mapping
from typing import Any

import httpx

from datagouv_eval_pipeline.twin.mcp.text import (
    FILTER_OPERATORS,
    SORT_DIRECTIONS,
    cut,
    human_size,
    is_int,
)
from datagouv_eval_pipeline.twin.mcp.tools import (
    TIMEOUT_TABULAR,
    ToolEnv,
    dataset_title,
    title_of,
)

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
INVALID_OPERATOR = (
    "Error: invalid filter_operator. Supported values: " + ", ".join(FILTER_OPERATORS) + "."
)
INVALID_DIRECTION = (
    "Error: invalid sort_direction. Supported values: " + ", ".join(SORT_DIRECTIONS) + "."
)
# api-tabular's documented PAGE_SIZE_MAX; the reconstructed query_dataset_data pages by it.
TABULAR_PAGE = 50
DOWNLOAD_TIMEOUT = 60.0


def _tabular_error_text(response: httpx.Response) -> str:
    """The v0.2.24+ hint for a Tabular error response (may raise, as the real parser does)."""
    status = response.status_code
    if status == 404:
        return TABULAR_404_HINT
    if status >= 500 or status in (408, 429):
        return TABULAR_UNAVAILABLE_HINT
    if status in (401, 403):
        return (
            f"⚠️  The Tabular API returned HTTP {status} (access or permission). "
            "If the problem persists, try again in about one minute."
        )
    # The real parser assumes every errors[*].detail is an object with "message": a string
    # detail raises TypeError, a body without "errors" raises KeyError (reference §1.4).
    errors = response.json()["errors"]
    messages = [str(error["detail"]["message"]) for error in errors]
    text = TABULAR_REJECTED_HINT
    if messages and "does not exist" in messages[0]:
        text += TABULAR_MISSING_COLUMN_HINT
    return text + f" - Original error message: {'; '.join(messages)[:2000]}"


def _row_lines(rows: list[dict[str, Any]], indent: str) -> list[str]:
    lines = []
    for index, row in enumerate(rows, 1):
        lines.append(f"{indent}Row {index}:")
        lines.extend(f"{indent}  {key}: {cut(value)}" for key, value in row.items())
    return lines


async def query_resource_data(env: ToolEnv, args: Mapping[str, Any]) -> str:
    """``query_resource_data``: one page of Tabular rows with an optional filter and sort."""
    resource_id: str = args["resource_id"]
    page = max(int(args["page"]), 1)
    page_size = max(1, min(int(args["page_size"]), env.behaviour.query_page_size_max))
    column, value = args.get("filter_column"), args.get("filter_value")
    operator = str(args.get("filter_operator") or "exact").lower()
    sort_column = args.get("sort_column")
    direction = str(args.get("sort_direction") or "asc").lower()
    filtering = bool(column) and value is not None
    if filtering and operator not in FILTER_OPERATORS:
        return INVALID_OPERATOR
    if sort_column and direction not in SORT_DIRECTIONS:
        return INVALID_DIRECTION
    urls = env.upstream.urls
    try:
        title, dataset_id, parent_title = "Unknown", None, "Unknown"
        try:
            payload = await env.get_json(f"{urls.datagouv_api}2/datasets/resources/{resource_id}/")
            title = title_of(payload.get("resource") or {}, "Unknown")
            dataset_id = payload.get("dataset_id")
        except Exception:  # metadata is decoration: failures leave "Unknown"
            pass
        if dataset_id:
            parent_title = await dataset_title(env, dataset_id)
        parts = [
            f"Querying resource: {title}",
            f"Resource ID: {resource_id}",
            f"Dataset: {parent_title} (ID: {dataset_id or 'Unknown'})",
            "",
        ]
        params: dict[str, Any] = {"page": page, "page_size": page_size}
        if filtering:
            params[f"{column}__{operator}"] = value
            parts.append(f"Filter: {column} {operator} {value}")
        if sort_column:
            params[f"{sort_column}__sort"] = direction
            parts.append(f"Sort: {sort_column} ({direction})")
        response = await env.upstream.get(
            f"{urls.tabular_api}resources/{resource_id}/data/",
            params=params,
            timeout=TIMEOUT_TABULAR,
            headers=env.headers,
        )
        if response.status_code >= 400:
            if not env.behaviour.tabular_error_hints:
                response.raise_for_status()
            parts.append(_tabular_error_text(response))
            return "\n".join(parts)
        body = response.json()
        rows: list[dict[str, Any]] = body.get("data") or []
        meta = body.get("meta") or {}
        links = body.get("links") or {}
        total = int(meta.get("total") or 0)
        shown_size = int(meta.get("page_size") or page_size)
        parts.append(f"Total rows (Tabular API): {meta.get('total')}")
        parts.append(
            f"Total pages: {math.ceil(total / shown_size) if shown_size else 0} "
            f"(page size: {shown_size})"
        )
        if not rows:
            parts.append("⚠️  No rows available (resource may be empty or filtered).")
            return "\n".join(parts)
        parts.append(f"Retrieved: {len(rows)} row(s) from page {meta.get('page', page)}")
        parts.append(f"Columns: {', '.join(rows[0].keys())}")
        parts.append("")
        parts.append(f"Data ({len(rows)} rows):")
        parts.extend(_row_lines(rows, "  "))
        if links.get("next"):
            parts.append("")
            if total > 1000:
                parts.append(
                    f"⚠️ Large dataset ({total} rows). To get all data, paginate using "
                    f"page={page + 1} or use get_resource_info to retrieve the raw file URL "
                    "and fetch it directly."
                )
            else:
                parts.append(f"📄 More data available. Use page={page + 1} to see the next page.")
        return "\n".join(parts)
    except Exception as error:  # the real tool's outer handler
        return f"❌ Error querying resource: {error}"


# ------------------------------------------------------------- query_dataset_data (≤0.2.5)


async def _tabular_rows(
    env: ToolEnv, resource_id: str, limit: int
) -> tuple[int | None, list[dict[str, Any]]]:
    """Fetch up to ``limit`` rows page by page; raise ``HTTPStatusError`` on errors."""
    rows: list[dict[str, Any]] = []
    total: int | None = None
    page = 1
    # One page size throughout: pages are offsets of (page - 1) * page_size.
    page_size = min(TABULAR_PAGE, limit)
    while len(rows) < limit:
        body = await env.get_json(
            f"{env.upstream.urls.tabular_api}resources/{resource_id}/data/",
            {"page": page, "page_size": page_size},
            timeout=TIMEOUT_TABULAR,
        )
        total = (body.get("meta") or {}).get("total", total)
        rows.extend(body.get("data") or [])
        if not (body.get("links") or {}).get("next"):
            break
        page += 1
    return total, rows[:limit]


async def query_dataset_data(env: ToolEnv, args: Mapping[str, Any]) -> str:
    """``query_dataset_data`` (reconstructed): rows of every tabular resource of a dataset."""
    question: str = args["question"]
    dataset_id: str | None = args.get("dataset_id")
    dataset_query: str | None = args.get("dataset_query")
    limit = max(1, min(int(args["limit_per_resource"]), 1000))
    if not dataset_id and not dataset_query:
        return "Error: Either dataset_id or dataset_query must be provided."
    urls = env.upstream.urls
    try:
        if not dataset_id:
            found = await env.get_json(
                f"{urls.datagouv_api}1/datasets/", {"q": dataset_query, "page_size": 1}
            )
            if not found.get("data"):
                return f"No datasets found for query: '{dataset_query}'"
            dataset_id = str(found["data"][0]["id"])
        dataset = await env.get_json(f"{urls.datagouv_api}1/datasets/{dataset_id}/")
    except httpx.HTTPStatusError as error:
        if error.response.status_code == 404:
            return f"Error: Dataset with ID '{dataset_id}' not found."
        return f"Error: HTTP {error.response.status_code} - {error}"
    except Exception as error:  # reported as text, like the other metadata tools
        return f"Error: {error}"
    resources = dataset.get("resources") or []
    parts = [
        f"Dataset: {title_of(dataset)}",
        f"Dataset ID: {dataset.get('id', dataset_id)}",
        f"Question: {question}",
        f"Resources: {len(resources)}",
        "",
    ]
    if not resources:
        parts.append("This dataset has no resources.")
        return "\n".join(parts)
    for index, resource in enumerate(resources, 1):
        resource_id = str(resource.get("id"))
        parts.append(f"{index}. {title_of(resource)}")
        parts.append(f"   Resource ID: {resource_id}")
        if resource.get("format"):
            parts.append(f"   Format: {resource['format']}")
        try:
            total, rows = await _tabular_rows(env, resource_id, limit)
        except httpx.HTTPStatusError as error:
            if error.response.status_code == 404:
                parts.append("   ⚠️  Not available via Tabular API (may not be tabular data)")
            else:
                parts.append(f"   ❌ Error querying resource: {error}")
            parts.append("")
            continue
        except Exception as error:  # one failing resource must not hide the others
            parts.append(f"   ❌ Error querying resource: {error}")
            parts.append("")
            continue
        parts.append(f"   Total rows (Tabular API): {total}")
        if rows:
            parts.append(f"   Columns: {', '.join(rows[0].keys())}")
            parts.append(f"   Data ({len(rows)} rows):")
            parts.extend(_row_lines(rows, "     "))
        else:
            parts.append("   ⚠️  No rows available (resource may be empty or filtered).")
        parts.append("")
    return "\n".join(parts)


# -------------------------------------------------------- download_and_parse_resource (≤0.2.19)


def _sniff_delimiter(sample: str) -> str:
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
    except csv.Error:
        return ","


def _parse(content: bytes, fmt: str) -> tuple[list[str], list[dict[str, Any]]]:
    """Parse CSV (optionally gzipped), JSON or JSON Lines into columns and rows.

    Raises:
        ValueError: unsupported format or unreadable content.
    """
    if fmt in ("csv.gz", "gz") or content[:2] == b"\x1f\x8b":
        content = gzip.decompress(content)
        fmt = "csv" if fmt in ("csv.gz", "gz") else fmt
    if fmt in ("csv", "txt", "tsv"):
        text = content.decode("utf-8-sig", errors="replace")
        reader = csv.DictReader(io.StringIO(text), delimiter=_sniff_delimiter(text[:4096]))
        records = [dict(r) for r in reader]
        return list(reader.fieldnames or []), records
    if fmt in ("json", "geojson"):
        data = json.loads(content)
        if isinstance(data, dict):
            data = data.get("data") or data.get("features") or [data]
        items = [d if isinstance(d, dict) else {"value": d} for d in data]
    elif fmt in ("jsonl", "ndjson"):
        lines = content.decode("utf-8", errors="replace").splitlines()
        parsed = [json.loads(line) for line in lines if line.strip()]
        items = [d if isinstance(d, dict) else {"value": d} for d in parsed]
    else:
        raise ValueError(
            f"Unsupported format '{fmt}'. Supported formats: CSV, CSV.GZ, JSON, JSONL."
        )
    columns: list[str] = []
    for item in items:
        columns.extend(k for k in item if k not in columns)
    return columns, items


async def download_and_parse_resource(env: ToolEnv, args: Mapping[str, Any]) -> str:
    """``download_and_parse_resource`` (reconstructed): download a file and show its first rows."""
    resource_id: str = args["resource_id"]
    max_rows = max(1, int(args["max_rows"]))
    caps = env.behaviour.download_caps
    if caps is not None:
        max_size_mb, max_rows = caps[0], min(max_rows, caps[1])
    else:
        max_size_mb = max(1, int(args["max_size_mb"]))
    limit_bytes = max_size_mb * 1024 * 1024
    urls = env.upstream.urls
    try:
        payload = await env.get_json(f"{urls.datagouv_api}2/datasets/resources/{resource_id}/")
        resource = payload.get("resource") or {}
        if not resource.get("id"):
            return f"Error: Resource with ID '{resource_id}' not found."
        fmt = str(resource.get("format") or "").lower()
        size = resource.get("filesize")
        if isinstance(size, int) and is_int(size) and size > limit_bytes:
            # Point at the data tool this release has.
            data_tool = (
                "query_resource_data"
                if env.spec.tool("query_resource_data")
                else ("query_dataset_data")
            )
            return (
                f"Error: File too large ({human_size(size)}). Maximum allowed size: "
                f"{max_size_mb} MB. Use {data_tool} or the Tabular API instead."
            )
        response = await env.upstream.get(
            str(resource.get("url")),
            timeout=DOWNLOAD_TIMEOUT,
            headers=env.headers,
            follow_redirects=True,
        )
        response.raise_for_status()
        content = response.content
        if len(content) > limit_bytes:
            return (
                f"Error: File too large ({human_size(len(content))}). Maximum allowed size: "
                f"{max_size_mb} MB."
            )
        columns, rows = _parse(content, fmt)
    except httpx.HTTPStatusError as error:
        return f"Error: HTTP {error.response.status_code} - {error}"
    except Exception as error:  # parse and network failures are reported as text
        return f"Error: {error}"
    shown = rows[:max_rows]
    parts = [
        f"Resource: {title_of(resource)}",
        f"Resource ID: {resource_id}",
        f"Dataset ID: {payload.get('dataset_id')}",
        f"Format: {fmt or 'unknown'}",
        f"File size: {human_size(len(content))}",
        f"Total rows: {len(rows)}",
        f"Columns: {', '.join(columns)}",
        "",
    ]
    if not shown:
        parts.append("⚠️  No rows found in the file.")
        return "\n".join(parts)
    parts.append(f"Showing first {len(shown)} row(s):")
    parts.extend(_row_lines(shown, "  "))
    if len(rows) > len(shown):
        parts.append("")
        parts.append(f"... {len(rows) - len(shown)} more row(s) not shown (max_rows={max_rows}).")
    return "\n".join(parts)
