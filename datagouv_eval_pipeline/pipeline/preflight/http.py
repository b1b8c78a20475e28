"""HTTP access for the pre-flight: bounded concurrency, one request per URL, errors as values.

Several tasks often check the same object (a dataservice cited by two tasks); the fetcher sends
each distinct request once per run, so every task sees the same answer. A transport error
(unreachable host, timeout) is returned as a ``Fetched`` with ``error`` set, never raised, so
that it becomes a failed check with its reason.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import httpx
import tenacity

from datagouv_eval_pipeline.core.providers import RetryPolicy

USER_AGENT = "datagouv-eval-preflight"
TRANSIENT_STATUSES = frozenset({429, 502, 503, 504})
"""Statuses worth asking again: a rate limit or a gateway that lost its upstream for a moment."""


PREFLIGHT_RETRY = RetryPolicy(
    retries=2,
    base_delay_s=0.5,
    max_delay_s=8.0,
    min_delay_s=0.0,
    jitter_s=0.5,
    retry_statuses=TRANSIENT_STATUSES,
)
"""The pre-flight's retries: three requests at most, 0.5 s then 1 s plus up to 0.5 s jitter."""


# Statuses some servers give to HEAD while GET works; the download check retries with GET then.
HEAD_REFUSED = {403, 405, 501}


@dataclass(frozen=True)
class Fetched:
    """One HTTP exchange, or the reason there was none.

    Attributes:
        method: ``GET`` or ``HEAD``.
        url: The requested URL, query string included.
        status: Final status code; ``None`` when no response arrived.
        final_url: The URL after redirects.
        body: The decoded JSON body, or ``None`` (not JSON, HEAD, or no response).
        text: The body as text, cut to 500 characters (for messages).
        error: Transport error as ``ExceptionName: message``; ``None`` when a response arrived.
    """

    method: str
    url: str
    status: int | None
    final_url: str
    body: Any
    text: str
    error: str | None

    @property
    def ok(self) -> bool:
        """Return whether a 2xx response arrived."""
        return self.status is not None and 200 <= self.status < 300

    def describe(self) -> str:
        """Return ``METHOD url → status`` or ``METHOD url failed: error`` for messages."""
        if self.status is None:
            return f"{self.method} {self.url} failed: {self.error}"
        where = f" (redirected to {self.final_url})" if self.final_url != self.url else ""
        return f"{self.method} {self.url} → HTTP {self.status}{where}"


def with_query(url: str, params: Sequence[tuple[str, str]]) -> str:
    """Append an encoded query string to ``url``."""
    return f"{url}?{urlencode(list(params))}" if params else url


class Fetcher:
    """Send GET/HEAD requests through one ``httpx.AsyncClient``, at most ``limit`` at a time."""

    def __init__(
        self, client: httpx.AsyncClient, limit: int, retry: RetryPolicy | None = None
    ) -> None:
        """Wrap a client.

        Args:
            client: The HTTP client (its timeout applies to every request).
            limit: Maximum number of requests in flight.
            retry: Retries of transport errors and transient statuses (429, 502–504): one
                passing 502 must not quarantine a task. Default: ``PREFLIGHT_RETRY``.
        """
        self._client = client
        self._retry = retry or PREFLIGHT_RETRY
        self._semaphore = asyncio.Semaphore(max(1, limit))
        self._cache: dict[tuple[str, str, bool], asyncio.Task[Fetched]] = {}

    async def get(self, url: str, *, follow: bool = False) -> Fetched:
        """GET ``url`` (once per run) and decode JSON when the body is JSON."""
        return await self._cached("GET", url, follow)

    async def head(self, url: str, *, follow: bool = True) -> Fetched:
        """HEAD ``url`` following redirects (once per run)."""
        return await self._cached("HEAD", url, follow)

    async def _cached(self, method: str, url: str, follow: bool) -> Fetched:
        key = (method, url, follow)
        task = self._cache.get(key)
        if task is None:
            task = asyncio.ensure_future(self._send(method, url, follow))
            self._cache[key] = task
        return await task

    async def _send(self, method: str, url: str, follow: bool) -> Fetched:
        policy = self._retry
        retrying = tenacity.AsyncRetrying(
            stop=tenacity.stop_after_attempt(policy.max_attempts),
            wait=lambda state: policy.backoff(state.attempt_number),
            retry=tenacity.retry_if_result(
                lambda fetched: fetched.status is None or fetched.status in policy.retry_statuses
            ),
            # The last answer is the result, whatever it is: errors stay values.
            retry_error_callback=lambda state: state.outcome.result() if state.outcome else None,
        )
        fetched: Fetched = await retrying(self._send_once, method, url, follow)
        return fetched

    async def _send_once(self, method: str, url: str, follow: bool) -> Fetched:
        async with self._semaphore:
            try:
                if method == "GET" and follow:
                    # A download may be large: read only the first bytes.
                    async with self._client.stream(
                        "GET", url, follow_redirects=True, headers={"Range": "bytes=0-1023"}
                    ) as response:
                        chunk = b""
                        async for piece in response.aiter_bytes():
                            chunk += piece
                            if len(chunk) >= 1024:
                                break
                        return Fetched(
                            method, url, response.status_code, str(response.url), None, "", None
                        )
                response = await self._client.request(method, url, follow_redirects=follow)
            except httpx.HTTPError as error:
                return Fetched(method, url, None, url, None, "", _error_text(error))
        text = response.text[:500] if method == "GET" else ""
        body: Any = None
        if method == "GET" and "json" in response.headers.get("content-type", ""):
            try:
                body = response.json()
            except (json.JSONDecodeError, UnicodeDecodeError):
                body = None
        return Fetched(method, url, response.status_code, str(response.url), body, text, None)


def _error_text(error: httpx.HTTPError) -> str:
    message = str(error) or repr(error)
    return f"{type(error).__name__}: {message}"
