"""The catalog tools of the reference layouts: search (every release), metadata and metrics (0.2.5).

Each tool makes the upstream GET requests of the real server (reference §1.4 table) through an
:class:`~datagouv_eval_pipeline.twin.mcp.upstream.Upstream` and formats the answer with the text
layout of the emulated release. Two failure modes, as in the real server: an error the tool
catches comes back as ordinary text starting with ``Error:`` (``isError`` false); an error it
lets escape is raised, and the MCP layer reports ``Error executing tool <name>: <message>``
with ``isError`` true (see ``server.py``).

The data tools (Tabular queries, downloads) are in ``data_tools.py``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from datagouv_eval_pipeline.twin.mcp.text import (
    clean_query,
    human_size,
    is_int,
    org_name,
    string_tags,
)
from datagouv_eval_pipeline.twin.mcp.upstream import Upstream
from datagouv_eval_pipeline.twin.mcp.versions import Behaviour, VersionSpec

SEARCH_PAGE_SIZE_MAX = 100
TIMEOUT_MAIN = 15.0
TIMEOUT_TABULAR = 30.0
TIMEOUT_METRICS = 20.0
TIMEOUT_PROBE = 10.0


@dataclass(frozen=True)
class ToolEnv:
    """What a tool needs: the emulated release and where to send requests."""

    spec: VersionSpec
    upstream: Upstream

    @property
    def behaviour(self) -> Behaviour:
        """Return the release's behaviour flags."""
        return self.spec.behaviour

    @property
    def headers(self) -> dict[str, str] | None:
        """Return the upstream request headers of this release."""
        if self.behaviour.user_agent:
            return {"User-Agent": f"datagouv-mcp/{self.spec.version}"}
        return None

    async def get_json(
        self, url: str, params: dict[str, Any] | None = None, timeout: float = TIMEOUT_MAIN
    ) -> Any:
        """GET ``url`` with this release's headers; raise on HTTP errors; return the JSON."""
        return await self.upstream.get_json(
            url, params=params, timeout=timeout, headers=self.headers
        )

    @property
    def api_word(self) -> str:
        """Return how the release names a dataservice (``dataservice``/``third-party API``)."""
        return self.behaviour.wording


ToolImpl = Callable[[ToolEnv, Mapping[str, Any]], Awaitable[str]]


def title_of(record: Mapping[str, Any], fallback: str = "Untitled") -> str:
    """Return ``title``, else ``name``, else ``fallback`` (the real tools' fallback order)."""
    return str(record.get("title") or record.get("name") or fallback)


async def _search(
    env: ToolEnv, url: str, query: str, extra: dict[str, Any]
) -> tuple[dict[str, Any], str]:
    """Run a search with stop-word cleaning and the original-query fallback."""
    cleaned = clean_query(query) if env.behaviour.query_cleaning else query
    result: dict[str, Any] = await env.get_json(url, {"q": cleaned, **extra})
    if env.behaviour.query_cleaning and not result.get("total") and cleaned != query:
        result = await env.get_json(url, {"q": query, **extra})
    return result, cleaned


# ---------------------------------------------------------------------------- search_datasets


async def search_datasets(env: ToolEnv, args: Mapping[str, Any]) -> str:
    """``search_datasets``: upstream errors escape (``isError`` true), as in the real tool."""
    query: str = args["query"]
    page: int = args["page"]
    urls = env.upstream.urls
    extra: dict[str, Any] = {
        "page": page,
        "page_size": min(int(args["page_size"]), SEARCH_PAGE_SIZE_MAX),
    }
    if args.get("sort"):
        extra["sort"] = args["sort"]
    if args.get("last_update_range"):
        extra["last_update_range"] = args["last_update_range"]
    endpoint = "2/datasets/search/" if env.behaviour.search_api == "v2" else "1/datasets/"
    result, _ = await _search(env, urls.datagouv_api + endpoint, query, extra)
    datasets = result.get("data") or []
    if not datasets:
        return f"No datasets found for query: '{query}'"
    parts = [
        f"Found {result.get('total', len(datasets))} dataset(s) for query: '{query}'",
        f"Page {page} of results:",
        "",
    ]
    for index, dataset in enumerate(datasets, 1):
        resources = dataset.get("resources")
        if env.behaviour.resources_count == "total" and isinstance(resources, dict):
            count = resources.get("total", 0)
        else:
            # len() of a v1 list is right; of a v2 link object it is 4 (v0.2.21-v0.2.25 bug).
            count = len(resources or [])
        parts.append(f"{index}. {title_of(dataset)}")
        parts.append(f"   ID: {dataset.get('id')}")
        if dataset.get("description_short"):
            parts.append(f"   Description: {str(dataset['description_short'])[:200]}...")
        organization = org_name(dataset)
        if organization:
            parts.append(f"   Organization: {organization}")
        tags = string_tags(dataset)
        if tags:
            parts.append(f"   Tags: {', '.join(tags[:5])}")
        parts.append(f"   Resources: {count}")
        parts.append(f"   URL: {urls.site}datasets/{dataset.get('slug') or dataset.get('id')}")
        parts.append("")
    return "\n".join(parts)


# ---------------------------------------------------------------------- search_organizations


async def search_organizations(env: ToolEnv, args: Mapping[str, Any]) -> str:
    """``search_organizations`` (v0.2.25 on); upstream errors escape."""
    query: str = args["query"] or ""
    page: int = args["page"]
    urls = env.upstream.urls
    params: dict[str, Any] = {
        "page": page,
        "page_size": min(int(args["page_size"]), SEARCH_PAGE_SIZE_MAX),
    }
    filters = ("sort", "badge", "name", "business_number_id")
    for key in filters:
        if args.get(key):
            params[key] = args[key]
    url = urls.datagouv_api + "2/organizations/search/"

    async def search(text: str) -> dict[str, Any]:
        # The release sends page and page_size first, then q, then the filters.
        ordered: dict[str, Any] = {"page": params["page"], "page_size": params["page_size"]}
        if text:
            ordered["q"] = text
        ordered.update((key, params[key]) for key in filters if key in params)
        found: dict[str, Any] = await env.get_json(url, ordered)
        return found

    cleaned = clean_query(query) if query else ""
    result = await search(cleaned)
    if not result.get("data") and query and cleaned != query:
        result = await search(query)
    described = [f"query '{query}'"] if query else []
    described += [
        f"{key}={args[key]}"
        for key in ("badge", "name", "business_number_id", "sort")
        if args.get(key)
    ]
    description = ", ".join(described) or "browse (no text query)"
    organizations = result.get("data") or []
    if not organizations:
        if query:
            return f"No organizations found for query '{query}'"
        return "No organizations found for current filters"
    parts = [
        f"Found {result.get('total', len(organizations))} organization(s) ({description})",
        f"Page {page} of results:",
        "",
    ]
    for index, org in enumerate(organizations, 1):
        name = org.get("name") or "Untitled"
        acronym = f" ({org['acronym']})" if org.get("acronym") else ""
        url_org = f"{urls.site}organizations/{org.get('slug') or org.get('id')}"
        parts.append(f"{index}. {name}{acronym}")
        parts.append(f"   ID: {org.get('id')}")
        if org.get("slug"):
            parts.append(f"   Slug: {org['slug']}")
        badges = [
            b["kind"] for b in org.get("badges") or [] if isinstance(b, dict) and b.get("kind")
        ]
        if badges:
            parts.append(f"   Badges: {', '.join(str(b) for b in badges)}")
        metrics = org.get("metrics") or {}
        shown = [
            f"{key}={metrics[key]}"
            for key in ("datasets", "reuses", "followers", "views")
            if metrics.get(key) is not None
        ]
        if shown:
            parts.append(f"   Metrics: {', '.join(shown)}")
        parts.append(f"   URL: {url_org}")
        if org.get("page") and org["page"] != url_org:
            parts.append(f"   Profile: {org['page']}")
        parts.append("")
    return "\n".join(parts)


# ------------------------------------------------------------------------- dataservices


async def search_dataservices(env: ToolEnv, args: Mapping[str, Any]) -> str:
    """``search_dataservices`` (v0.2.15 on); upstream errors escape."""
    query: str = args["query"]
    page: int = args["page"]
    urls = env.upstream.urls
    extra = {"page": page, "page_size": min(int(args["page_size"]), SEARCH_PAGE_SIZE_MAX)}
    endpoint = "2/dataservices/search/" if env.behaviour.search_api == "v2" else "1/dataservices/"
    result, _ = await _search(env, urls.datagouv_api + endpoint, query, extra)
    services = result.get("data") or []
    word = env.api_word
    if not services:
        return f"No {word}s found for query: '{query}'"
    parts = [
        f"Found {result.get('total', len(services))} {word}(s) for query: '{query}'",
        f"Page {page} of results:",
        "",
    ]
    for index, service in enumerate(services, 1):
        parts.append(f"{index}. {title_of(service)}")
        parts.append(f"   ID: {service.get('id')}")
        if service.get("description"):
            parts.append(f"   Description: {str(service['description'])[:200]}...")
        organization = org_name(service)
        if organization:
            parts.append(f"   Organization: {organization}")
        if service.get("base_api_url"):
            parts.append(f"   Base API URL: {service['base_api_url']}")
        tags = string_tags(service)
        if tags:
            parts.append(f"   Tags: {', '.join(tags[:5])}")
        parts.append(f"   URL: {urls.site}dataservices/{service.get('id')}")
        parts.append("")
    return "\n".join(parts)


# ------------------------------------------------------------------ datasets and resources


async def get_dataset_info(env: ToolEnv, args: Mapping[str, Any]) -> str:
    """``get_dataset_info``: 404 and other errors are caught and returned as text."""
    dataset_id: str = args["dataset_id"]
    urls = env.upstream.urls
    try:
        dataset = await env.get_json(f"{urls.datagouv_api}1/datasets/{dataset_id}/")
    except httpx.HTTPStatusError as error:
        if error.response.status_code == 404:
            return f"Error: Dataset with ID '{dataset_id}' not found."
        return f"Error: HTTP {error.response.status_code} - {error}"
    except Exception as error:  # the real tool reports any other failure as text
        return f"Error: {error}"
    parts = [f"Dataset Information: {title_of(dataset)}", ""]
    parts.append(f"ID: {dataset.get('id')}")
    slug = dataset.get("slug")
    if slug:
        parts.append(f"Slug: {slug}")
        parts.append(f"URL: {urls.site}datasets/{slug}/")
    short = dataset.get("description_short")
    if short:
        parts.append(f"Description: {short}")
    description = dataset.get("description")
    if description and description != short:
        parts.append(f"Full description: {str(description)[:500]}...")
    organization = dataset.get("organization")
    if isinstance(organization, dict) and organization.get("name"):
        parts.append(f"Organization: {organization['name']}")
        parts.append(f"  Organization ID: {organization.get('id')}")
    tags = string_tags(dataset)
    if tags:
        parts.append(f"Tags: {', '.join(tags[:10])}")
    parts.append(f"Resources: {len(dataset.get('resources') or [])} file(s)")
    for key, label in (
        ("created_at", "Created"),
        ("last_update", "Last updated"),
        ("license", "License"),
        ("frequency", "Update frequency"),
    ):
        if dataset.get(key):
            parts.append(f"{label}: {dataset[key]}")
    return "\n".join(parts)


def _resource_lines(resource: Mapping[str, Any], indent: str) -> list[str]:
    lines = []
    if resource.get("format"):
        lines.append(f"{indent}Format: {resource['format']}")
    if is_int(resource.get("filesize")):
        lines.append(f"{indent}Size: {human_size(resource['filesize'])}")
    if resource.get("mime"):
        lines.append(f"{indent}MIME type: {resource['mime']}")
    if resource.get("type"):
        lines.append(f"{indent}Type: {resource['type']}")
    return lines


async def list_dataset_resources(env: ToolEnv, args: Mapping[str, Any]) -> str:
    """``list_dataset_resources``: a 404 is not special-cased (httpx's message is shown)."""
    dataset_id: str = args["dataset_id"]
    urls = env.upstream.urls
    try:
        dataset = await env.get_json(f"{urls.datagouv_api}1/datasets/{dataset_id}/")
    except Exception as error:  # the real tool reports every failure as text
        return f"Error: {error}"
    resources = dataset.get("resources") or []
    parts = [
        f"Resources in dataset: {title_of(dataset)}",
        f"Dataset ID: {dataset.get('id', dataset_id)}",
        f"Total resources: {len(resources)}",
        "",
    ]
    if not resources:
        parts.append("This dataset has no resources.")
        return "\n".join(parts)
    for index, resource in enumerate(resources, 1):
        parts.append(f"{index}. {title_of(resource)}")
        parts.append(f"   Resource ID: {resource.get('id')}")
        parts.extend(_resource_lines(resource, "   "))
        if resource.get("url"):
            parts.append(f"   URL: {resource['url']}")
        parts.append("")
    return "\n".join(parts)


async def dataset_title(env: ToolEnv, dataset_id: str, fallback: str = "Unknown") -> str:
    """Return a dataset's title; any failure is silent, as in the real tools."""
    try:
        dataset = await env.get_json(f"{env.upstream.urls.datagouv_api}1/datasets/{dataset_id}/")
        return title_of(dataset, fallback)
    except Exception:  # deliberately silent: the title is decoration
        return fallback


async def _tabular_availability(env: ToolEnv, resource_id: str) -> str:
    urls = env.upstream.urls
    try:
        # The real probe uses a bare client (no User-Agent), 10 s timeout.
        response = await env.upstream.get(
            f"{urls.tabular_api}resources/{resource_id}/profile/", timeout=TIMEOUT_PROBE
        )
    except Exception:  # unreachable API: say so rather than fail the tool
        return "⚠️  Could not check Tabular API availability"
    if response.status_code != 200:
        return "⚠️  Not available via Tabular API (may not be tabular data)"
    if resource_id in await env.upstream.crawler_exception_ids():
        return "✅ Available via Tabular API (large file exception)"
    return "✅ Available via Tabular API (can be queried)"


async def get_resource_info(env: ToolEnv, args: Mapping[str, Any]) -> str:
    """``get_resource_info``: metadata, parent dataset and Tabular availability."""
    resource_id: str = args["resource_id"]
    urls = env.upstream.urls
    try:
        payload = await env.get_json(f"{urls.datagouv_api}2/datasets/resources/{resource_id}/")
        resource = payload.get("resource") or {}
        if not resource.get("id"):
            return f"Error: Resource with ID '{resource_id}' not found."
        dataset_id = payload.get("dataset_id")
        parts = [f"Resource Information: {title_of(resource)}", ""]
        parts.append(f"Resource ID: {resource_id}")
        parts.extend(_resource_lines(resource, ""))
        parts.append("")
        if resource.get("url"):
            parts.extend([f"URL: {resource['url']}", ""])
        if resource.get("description"):
            parts.extend([f"Description: {resource['description']}", ""])
        if dataset_id:
            parts.append(f"Dataset ID: {dataset_id}")
            parts.append(f"Dataset: {await dataset_title(env, dataset_id)}")
            parts.append("")
        parts.append("Tabular API availability:")
        parts.append(await _tabular_availability(env, resource_id))
        return "\n".join(parts)
    except httpx.HTTPStatusError as error:
        return f"Error: HTTP {error.response.status_code} - {error}"
    except Exception as error:  # the real tool reports any other failure as text
        return f"Error: {error}"


# ------------------------------------------------------------------------------ metrics


def _metric(value: Any, none_safe: bool) -> Any:
    # Before v0.2.22 a null went straight into the format spec and raised TypeError.
    return 0 if value is None and none_safe else value


async def _metrics_rows(
    env: ToolEnv, model: str, id_field: str, object_id: str, limit: int
) -> list[dict[str, Any]]:
    body = await env.get_json(
        f"{env.upstream.urls.metrics_api}{model}/data/",
        {f"{id_field}__exact": object_id, "metric_month__sort": "desc", "page_size": limit},
        timeout=TIMEOUT_METRICS,
    )
    return list(body.get("data") or [])


async def _dataset_metrics(env: ToolEnv, dataset_id: str, limit: int) -> str:
    none_safe = env.behaviour.metrics_none_safe
    try:
        dataset = await env.get_json(f"{env.upstream.urls.datagouv_api}1/datasets/{dataset_id}/")
        rows = await _metrics_rows(env, "datasets", "dataset_id", dataset_id, limit)
        parts = [f"Dataset Metrics: {title_of(dataset)}", f"Dataset ID: {dataset_id}", ""]
        if not rows:
            parts.append("No metrics available for this dataset.")
            return "\n".join(parts)
        rule = "-" * 60
        parts += ["Monthly Statistics:", rule]
        parts.append(f"{'Month':<12} | {'Visits':<15} | {'Downloads':<15}")
        parts.append(rule)
        total_visits = total_downloads = 0
        for row in rows:
            visits = _metric(row.get("monthly_visit"), none_safe)
            downloads = _metric(row.get("monthly_download_resource"), none_safe)
            parts.append(f"{row.get('metric_month', '')!s:<12} | {visits:<15,} | {downloads:<15,}")
            total_visits += visits
            total_downloads += downloads
        parts.append(rule)
        parts.append(f"{'Total':<12} | {total_visits:<15,} | {total_downloads:<15,}")
        return "\n".join(parts)
    except Exception as error:  # the real tool turns a section failure into text
        return f"Error fetching dataset metrics: {error}"


async def _resource_metrics(env: ToolEnv, resource_id: str, limit: int) -> str:
    none_safe = env.behaviour.metrics_none_safe
    try:
        payload = await env.get_json(
            f"{env.upstream.urls.datagouv_api}2/datasets/resources/{resource_id}/"
        )
        title = title_of(payload.get("resource") or {}, "Unknown")
        rows = await _metrics_rows(env, "resources", "resource_id", resource_id, limit)
        parts = [f"Resource Metrics: {title}", f"Resource ID: {resource_id}", ""]
        if not rows:
            parts.append("No metrics available for this resource.")
            return "\n".join(parts)
        rule = "-" * 40
        parts += ["Monthly Statistics:", rule, f"{'Month':<12} | {'Downloads':<15}", rule]
        total = 0
        for row in rows:
            downloads = _metric(row.get("monthly_download_resource"), none_safe)
            parts.append(f"{row.get('metric_month', '')!s:<12} | {downloads:<15,}")
            total += downloads
        parts.append(rule)
        parts.append(f"{'Total':<12} | {total:<15,}")
        return "\n".join(parts)
    except Exception as error:  # the real tool turns a section failure into text
        return f"Error fetching resource metrics: {error}"


async def get_metrics(env: ToolEnv, args: Mapping[str, Any]) -> str:
    """``get_metrics``: monthly visits/downloads of a dataset and/or a resource."""
    dataset_id: str | None = args.get("dataset_id")
    resource_id: str | None = args.get("resource_id")
    if not dataset_id and not resource_id:
        return "Error: At least one of dataset_id or resource_id must be provided."
    if dataset_id is not None and not dataset_id.strip():
        return "Error: dataset_id cannot be empty."
    if resource_id is not None and not resource_id.strip():
        return "Error: resource_id cannot be empty."
    limit = max(1, min(int(args["limit"]), env.behaviour.metrics_limit_max))
    sections = []
    if dataset_id:
        sections.append(await _dataset_metrics(env, dataset_id.strip(), limit))
    if resource_id:
        sections.append(await _resource_metrics(env, resource_id.strip(), limit))
    return "\n\n\n".join(sections)
