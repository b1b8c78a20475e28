"""The search tools of 0.2.26 (v2 search), and what every tool shares: :class:`ToolEnv`.

Each tool makes the real server's upstream GET requests through an
:class:`~datagouv_eval_pipeline.world.mcp.upstream.Upstream` and formats the answer with the text
layout of the emulated release. Two failure modes, as in the real server: an error the tool
catches comes back as ordinary text starting with ``Error:`` (``isError`` false); an error it
lets escape is raised, and the MCP layer reports ``Error executing tool <name>: <message>``
with ``isError`` true (see ``server.py``).

The other tools, and the v1 dataset search of the earlier releases, are in ``code_layout.py``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from datagouv_eval_pipeline.world.mcp.text import (
    clean_query,
    org_name,
    string_tags,
)
from datagouv_eval_pipeline.world.mcp.upstream import Upstream
from datagouv_eval_pipeline.world.mcp.versions import Behaviour, VersionSpec

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
    """``search_datasets`` on the v2 search (v0.2.21 on; the v1 one is in ``code_layout``).

    Upstream errors escape (``isError`` true), as in the real tool.
    """
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
    result, _ = await _search(env, urls.datagouv_api + "2/datasets/search/", query, extra)
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
