"""The ``web_search`` capability: a search backend and a guarded page fetcher.

* Offline, search is a local index of catalog pages: the twin's dataset and dataservice search,
  answered with the *production* page URLs (``https://www.data.gouv.fr/datasets/<slug>/``), and
  fetching goes through the hostname front, which answers for the catalog's production hosts
  and refuses the others. The agent and its trace see real data.gouv.fr URLs only.
* Live, search uses the ``ddgs`` package (DuckDuckGo); it is not a dependency, so building the
  backend without it raises :class:`CapabilityUnavailableError` with the reason.
* :func:`check_url` refuses non-http(s) schemes and hosts that resolve to private, loopback,
  link-local or otherwise non-public addresses, except explicitly allowed hosts (the twin).
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
import ssl
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any, Protocol
from urllib.parse import SplitResult, urljoin, urlsplit

import httpx

from datagouv_eval_pipeline.world.catalogue import TwinUrls


class CapabilityUnavailableError(RuntimeError):
    """A capability cannot run here (missing package, no sandbox...); the message says why."""


class FetchRefusedError(ValueError):
    """A URL the fetch tool will not request; the message says why."""


USER_AGENT = "datagouv-eval-agent/1.0"
FETCH_TIMEOUT_S = 30.0
MAX_REDIRECTS = 5


def host_port(url: str) -> str:
    """``host:port`` of a URL (the scheme's default port when none is written)."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{(parts.hostname or '').lower()}:{port}"


def _is_public(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    return not (
        ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
    )


def check_scheme(url: str) -> SplitResult:
    """Refuse anything but http(s) URLs; return the split URL.

    Raises:
        FetchRefusedError: For another scheme or a relative URL.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise FetchRefusedError(
            f"only http and https URLs can be fetched, not {parts.scheme or 'relative'!r} URLs"
        )
    return parts


def _is_private_literal(host: str) -> bool:
    try:
        return not _is_public(host.strip("[]"))
    except ValueError:
        return False


async def check_url(url: str, *, allowed_hosts: Collection[str] = ()) -> None:
    """Refuse URLs the fetch tool must not request.

    Args:
        url: The URL the agent asked for.
        allowed_hosts: ``host:port`` entries allowed even though they are private (the twin).

    Raises:
        FetchRefusedError: For a non-http(s) scheme, a missing host, or a host that resolves to
            a non-public address.
    """
    parts = check_scheme(url)
    host = parts.hostname
    if not host:
        raise FetchRefusedError(f"the URL {url!r} has no host")
    if host_port(url) in allowed_hosts:
        return
    try:
        literal = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    if literal is not None:
        addresses = [str(literal)]
    else:
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(
                host, parts.port or 443, type=socket.SOCK_STREAM
            )
        except OSError as error:
            raise FetchRefusedError(f"cannot resolve {host!r}: {error}") from None
        addresses = [str(info[4][0]) for info in infos]
    private = [address for address in addresses if not _is_public(address)]
    if private:
        raise FetchRefusedError(
            f"{host!r} resolves to a non-public address ({private[0]}): private, loopback and "
            "link-local hosts cannot be fetched"
        )


class _TextExtractor(HTMLParser):
    """HTML to readable text: drops scripts and styles, keeps link targets."""

    def __init__(self, base_url: str) -> None:
        super().__init__(convert_charrefs=True)
        self.base_url = base_url
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        elif tag in ("p", "div", "li", "tr", "br", "h1", "h2", "h3", "h4", "section"):
            self.parts.append("\n")
        if tag == "a":
            href = dict(attrs).get("href")
            if href:
                target = urljoin(self.base_url, href)
                self.parts.append(f" <{target}> ")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style") and self._skip:
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)

    def text(self) -> str:
        joined = "".join(self.parts)
        lines = [re.sub(r"[ \t]+", " ", line).strip() for line in joined.splitlines()]
        return "\n".join(line for line in lines if line)


def html_to_text(html: str, base_url: str) -> str:
    """Readable text of an HTML page, links shown as ``<url>``."""
    extractor = _TextExtractor(base_url)
    extractor.feed(html)
    extractor.close()
    return extractor.text()


@dataclass(frozen=True)
class HttpFetchTool:
    """The ``http_fetch`` tool's implementation.

    Attributes:
        proxy: Offline: the hostname front every request goes through (it answers for the
            catalog's production hosts and refuses the rest); None when live.
        ca_bundle: The CA bundle that trusts the front's certificates (offline).
        offline: Send nothing but through ``proxy`` (there is no network).
    """

    proxy: str | None = None
    ca_bundle: str | None = None
    offline: bool = False

    async def fetch(self, url: str) -> str:
        """Fetch a page and return its text (status line first).

        Raises:
            FetchRefusedError: The URL is refused (scheme, private address, offline host).
            httpx.HTTPError: The request failed.
        """
        target = url.strip()
        host = check_scheme(target).hostname or ""
        if _is_private_literal(host):
            raise FetchRefusedError(
                f"{host!r} is a non-public address ({host}): private, loopback and link-local "
                "hosts cannot be fetched"
            )
        if self.offline and self.proxy is None:
            raise FetchRefusedError("offline mode without the hostname front: nothing to fetch")
        headers = {"User-Agent": USER_AGENT}
        client_options: dict[str, Any] = {"timeout": FETCH_TIMEOUT_S, "trust_env": False}
        if self.proxy is not None:
            client_options["proxy"] = self.proxy
            if self.ca_bundle is not None:
                client_options["verify"] = ssl.create_default_context(cafile=self.ca_bundle)
        async with httpx.AsyncClient(**client_options) as client:
            for _ in range(MAX_REDIRECTS + 1):
                if self.proxy is None:
                    await check_url(target)
                try:
                    response = await client.get(target, headers=headers)
                except httpx.ProxyError as error:
                    # The front refused the host (offline: only the catalog's hosts exist).
                    raise FetchRefusedError(
                        f"offline mode: {urlsplit(target).hostname} cannot be fetched, only "
                        f"the data.gouv.fr catalog hosts ({error})"
                    ) from None
                if response.is_redirect and "location" in response.headers:
                    target = urljoin(target, response.headers["location"])
                    continue
                break
            else:
                raise FetchRefusedError(f"more than {MAX_REDIRECTS} redirects")
        shown = str(response.url)
        status = f"HTTP {response.status_code} {response.reason_phrase} <{shown}>"
        kind = response.headers.get("content-type", "")
        if "html" in kind:
            body = html_to_text(response.text, str(response.url))
        elif kind.startswith(("text/", "application/json")) or "csv" in kind or "yaml" in kind:
            body = response.text
        else:
            body = f"[binary content: {kind or 'unknown type'}, {len(response.content)} bytes]"
        if response.status_code >= 400:
            raise FetchRefusedError(f"{status}\n{body[:2000]}")
        return f"{status}\n\n{body}"


@dataclass(frozen=True)
class SearchHit:
    """One search result.

    Attributes:
        title: Page title.
        url: Page URL.
        snippet: A short excerpt.
    """

    title: str
    url: str
    snippet: str = ""


class SearchBackend(Protocol):
    """A web search engine."""

    @property
    def name(self) -> str:
        """The backend's name."""
        ...

    async def search(self, query: str, max_results: int) -> list[SearchHit]:
        """Return up to ``max_results`` hits for ``query``."""
        ...


@dataclass(frozen=True)
class TwinCatalogSearch:
    """Offline search: the twin's catalog search, answered with production page URLs.

    Attributes:
        urls: The twin's base URLs.
        name: Backend name.
    """

    urls: TwinUrls
    name: str = "twin-catalog"

    async def search(self, query: str, max_results: int) -> list[SearchHit]:
        """Datasets then dataservices matching ``query``, interleaved by rank."""
        live = TwinUrls.live().site
        params: dict[str, Any] = {"q": query, "page_size": max_results}
        async with httpx.AsyncClient(timeout=FETCH_TIMEOUT_S, trust_env=False) as client:
            datasets = await client.get(
                self.urls.datagouv_api + "2/datasets/search/", params=params
            )
            services = await client.get(
                self.urls.datagouv_api + "2/dataservices/search/", params=params
            )
        datasets.raise_for_status()
        services.raise_for_status()
        hits: list[tuple[int, SearchHit]] = []
        for rank, item in enumerate(datasets.json().get("data") or []):
            slug = item.get("slug") or item.get("id")
            hits.append((rank, _hit(item, f"{live}datasets/{slug}/", "Jeu de données")))
        for rank, item in enumerate(services.json().get("data") or []):
            slug = item.get("slug") or item.get("id")
            hits.append((rank, _hit(item, f"{live}dataservices/{slug}/", "API")))
        hits.sort(key=lambda pair: pair[0])
        return [hit for _, hit in hits[:max_results]]


def _hit(item: dict[str, Any], url: str, kind: str) -> SearchHit:
    description = str(item.get("description") or "")
    snippet = re.sub(r"\s+", " ", description)[:240]
    return SearchHit(
        title=f"{item.get('title', '')} - {kind} - data.gouv.fr", url=url, snippet=snippet
    )


@dataclass(frozen=True)
class DdgsSearch:
    """Live search through the ``ddgs`` package (DuckDuckGo and others)."""

    name: str = "ddgs"

    def __post_init__(self) -> None:
        try:
            import ddgs  # type: ignore[import-not-found]  # noqa: F401
        except ImportError:
            raise CapabilityUnavailableError(
                "web_search in live mode needs the 'ddgs' package, which is not installed "
                "(pip install ddgs, or the web-search extra); offline runs use the twin's "
                "catalog search instead"
            ) from None

    async def search(self, query: str, max_results: int) -> list[SearchHit]:  # pragma: no cover
        """Run the blocking ``ddgs`` text search in a thread."""
        from ddgs import DDGS

        def run() -> list[dict[str, Any]]:
            return list(DDGS().text(query, max_results=max_results))

        results = await asyncio.to_thread(run)
        return [
            SearchHit(
                title=str(r.get("title", "")),
                url=str(r.get("href", "")),
                snippet=str(r.get("body", "")),
            )
            for r in results
        ]


def format_hits(query: str, hits: Sequence[SearchHit]) -> str:
    """The text the search tool returns."""
    if not hits:
        return f"No results for {query!r}."
    lines = [f"Results for {query!r}:", ""]
    for index, hit in enumerate(hits, 1):
        lines.append(f"{index}. {hit.title}")
        lines.append(f"   {hit.url}")
        if hit.snippet:
            lines.append(f"   {hit.snippet}")
    return "\n".join(lines)
