"""The data tools of 0.2.5, the one release still on the reference layouts.

``query_dataset_data`` (up to v0.2.5) and 0.2.5's ``download_and_parse_resource`` are
reconstructions: the reference gives their signatures, not their text layouts; docs/twin.md
lists what is reconstructed. The releases from 0.2.14 on have their data tools in
``code_layout.py``.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from collections.abc import Mapping
from typing import Any

import httpx

from datagouv_eval_pipeline.twin.mcp.text import (
    cut,
    human_size,
    is_int,
)
from datagouv_eval_pipeline.twin.mcp.tools import (
    TIMEOUT_TABULAR,
    ToolEnv,
    title_of,
)

# api-tabular's documented PAGE_SIZE_MAX; the reconstructed query_dataset_data pages by it.
TABULAR_PAGE = 50
DOWNLOAD_TIMEOUT = 60.0


def _row_lines(rows: list[dict[str, Any]], indent: str) -> list[str]:
    lines = []
    for index, row in enumerate(rows, 1):
        lines.append(f"{indent}Row {index}:")
        lines.extend(f"{indent}  {key}: {cut(value)}" for key, value in row.items())
    return lines


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
