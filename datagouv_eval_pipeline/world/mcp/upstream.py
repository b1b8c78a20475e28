"""Where the emulated MCP tools send their HTTP requests: the twin's own APIs, or the live ones.

The real server is a thin layer over the data.gouv.fr REST, Tabular, Metrics and crawler APIs
(reference §1.4, "upstream calls"). The emulation keeps that shape: every tool makes the same
GET requests with httpx and formats what comes back, so status codes, error bodies and httpx's
own exception texts reach the tool exactly as they would in production.

* :meth:`Upstream.twin` routes those requests in-process to the twin's ASGI app (no socket, no
  second HTTP parse). The tools use the production base URLs, which the twin answers for
  (``twin.hosts``), so tool outputs carry the same links as in production and nothing that
  depends on the port the twin happens to listen on.
* :meth:`Upstream.live` sends them over the network to fixed base URLs (``TwinUrls.live()`` for
  production): the same tool code, pointed elsewhere.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any

import httpx
from starlette.types import ASGIApp

from datagouv_eval_pipeline.world.catalogue import TwinUrls

CRAWLER_CACHE_SECONDS = 3600.0
# Bytes of upstream answers kept per twin app (one answer at most 1/16 of it).
RESPONSE_CACHE_BYTES = 32 << 20
# Body bytes of the parsed answers Upstream.get_json keeps (decoded JSON takes about three
# times the memory of its text, hence a smaller budget).
PARSED_CACHE_BYTES = 8 << 20


class _TwinTransport(httpx.AsyncBaseTransport):
    """Send requests for the twin's own host to its ASGI app; other hosts are unreachable.

    The twin has no network: a URL on another host (an OpenAPI spec the snapshot does not hold,
    say) fails as a connection error would, instead of being answered by the twin by mistake.

    Answers are cached by URL (LRU, 32 MB). The catalog a twin app serves never changes while it
    runs (drift overlays build a new store and a new app), so a repeated GET gets the same
    status, headers and bytes the app would render again; this keeps tool calls cheap.
    """

    def __init__(
        self, app: ASGIApp, hosts: frozenset[str], cache_bytes: int = RESPONSE_CACHE_BYTES
    ) -> None:
        self._asgi = httpx.ASGITransport(app=app)
        self._hosts = hosts
        self._cache: OrderedDict[str, tuple[int, list[tuple[bytes, bytes]], bytes]] = OrderedDict()
        self._cache_budget = cache_bytes
        self._cached_bytes = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.host not in self._hosts:
            raise httpx.ConnectError(
                f"[twin] {request.url.host} is not reachable from the twin (offline)",
                request=request,
            )
        if request.method != "GET" or self._cache_budget <= 0:
            return await self._asgi.handle_async_request(request)
        key = str(request.url)
        cached = self._cache.get(key)
        if cached is None:
            response = await self._asgi.handle_async_request(request)
            body = await response.aread()
            cached = (response.status_code, response.headers.raw, body)
            # A concurrent miss of the same URL may have stored it meanwhile.
            if key not in self._cache and len(body) <= self._cache_budget // 16:
                self._cache[key] = cached
                self._cached_bytes += len(body)
                while self._cached_bytes > self._cache_budget:
                    _, (_, _, dropped) = self._cache.popitem(last=False)
                    self._cached_bytes -= len(dropped)
        else:
            self._cache.move_to_end(key)
        status, headers, body = cached
        return httpx.Response(status, headers=headers, content=body, request=request)

    async def aclose(self) -> None:
        await self._asgi.aclose()


_MemoKey = tuple[str, tuple[tuple[str, Any], ...]]


class Upstream:
    """The HTTP client and base URLs the tools use, plus the crawler-exceptions cache."""

    def __init__(self, client: httpx.AsyncClient, urls: TwinUrls, memo_bytes: int = 0) -> None:
        """Wrap a client.

        Args:
            client: The httpx client every request goes through.
            urls: The base URLs of the services (production ones, also on the twin).
            memo_bytes: Budget (in response-body bytes) of the :meth:`get_json` memo; 0 turns it
                off. Only for upstreams whose answers never change (the twin's own app).
        """
        self._client = client
        self._urls = urls
        self._crawler_ids: frozenset[str] | None = None
        self._crawler_fetched_at = 0.0
        self._memo: OrderedDict[_MemoKey, tuple[Any, int]] | None = (
            OrderedDict() if memo_bytes > 0 else None
        )
        self._memo_budget = memo_bytes
        self._memo_bytes = 0

    @classmethod
    def twin(cls, app: ASGIApp, hosts: frozenset[str]) -> Upstream:
        """Return an upstream that answers from the twin's ASGI app, in-process.

        Args:
            app: The twin's app, which answers for the production ``hosts``.
            hosts: The host names it answers for; any other is unreachable.
        """
        client = httpx.AsyncClient(transport=_TwinTransport(app, hosts), follow_redirects=False)
        return cls(client, TwinUrls.live(), memo_bytes=PARSED_CACHE_BYTES)

    @classmethod
    def live(cls, urls: TwinUrls) -> Upstream:
        """Return an upstream that calls real services at ``urls`` over the network."""
        return cls(httpx.AsyncClient(follow_redirects=False), urls)

    @property
    def urls(self) -> TwinUrls:
        """Return the base URLs the tools build their requests from."""
        return self._urls

    async def get(
        self,
        url: str,
        *,
        params: dict[str, Any] | None = None,
        timeout: float = 15.0,
        headers: dict[str, str] | None = None,
        follow_redirects: bool = False,
    ) -> httpx.Response:
        """Send a GET and return the response (the caller decides about status codes)."""
        return await self._client.get(
            url,
            params=params,
            timeout=timeout,
            headers=headers,
            follow_redirects=follow_redirects,
        )

    async def get_json(
        self,
        url: str,
        *,
        params: dict[str, Any] | None = None,
        timeout: float = 15.0,
        headers: dict[str, str] | None = None,
    ) -> Any:
        """GET, raise ``httpx.HTTPStatusError`` on 4xx/5xx (as ``raise_for_status``), parse JSON.

        On the twin, a successful answer is memoised by (URL, params): a repeated call
        skips httpx and the JSON decoding (about 1 ms of a search call). The returned value
        is then shared between calls, so callers must not modify it (the tools only read).
        """
        memo = self._memo
        key: _MemoKey | None = None
        if memo is not None:
            key = (url, tuple(params.items()) if params else ())
            try:
                hit = memo.get(key)
            except TypeError:  # an unhashable parameter value: no memo for this call
                key = None
            else:
                if hit is not None:
                    memo.move_to_end(key)
                    return hit[0]
        response = await self.get(url, params=params, timeout=timeout, headers=headers)
        response.raise_for_status()
        value = response.json()
        if memo is not None and key is not None:
            self._remember(memo, key, value, len(response.content))
        return value

    def _remember(
        self,
        memo: OrderedDict[_MemoKey, tuple[Any, int]],
        key: _MemoKey,
        value: Any,
        size: int,
    ) -> None:
        # Concurrent misses of one key may both get here; the first stored wins.
        if key in memo or size > self._memo_budget // 16:
            return
        memo[key] = (value, size)
        self._memo_bytes += size
        while self._memo_bytes > self._memo_budget:
            _, (_, dropped) = memo.popitem(last=False)
            self._memo_bytes -= dropped

    async def crawler_exception_ids(self) -> frozenset[str]:
        """Return the resource ids of the crawler's large-file exceptions (cached for 1 h).

        On error the stale list is kept, or an empty set is used, as the real server does.
        """
        now = time.monotonic()
        if self._crawler_ids is not None and now - self._crawler_fetched_at < CRAWLER_CACHE_SECONDS:
            return self._crawler_ids
        try:
            entries = await self.get_json(
                self.urls.crawler_api + "resources-exceptions", timeout=30.0
            )
            ids = frozenset(str(e["resource_id"]) for e in entries if "resource_id" in e)
        except (httpx.HTTPError, ValueError, TypeError):
            return self._crawler_ids or frozenset()
        self._crawler_ids = ids
        self._crawler_fetched_at = now
        return ids

    async def aclose(self) -> None:
        """Close the underlying client."""
        await self._client.aclose()
