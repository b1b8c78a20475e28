"""The pre-flight asks again after a transient failure (a real HTTP server on 127.0.0.1)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import httpx
import pytest

from datagouv_eval_pipeline.core.providers.retry import RetryPolicy
from datagouv_eval_pipeline.pipeline.preflight.http import TRANSIENT_STATUSES, Fetched, Fetcher

FAST = RetryPolicy(
    retries=2,
    base_delay_s=0.01,
    max_delay_s=0.05,
    min_delay_s=0.0,
    jitter_s=0.0,
    retry_statuses=TRANSIENT_STATUSES,
)


class _Flaky(BaseHTTPRequestHandler):
    """Answers each path's scripted statuses in turn, then the last one again."""

    script: ClassVar[dict[str, list[int]]] = {}
    seen: ClassVar[dict[str, int]] = {}

    def do_GET(self) -> None:
        count = self.seen.get(self.path, 0)
        self.seen[self.path] = count + 1
        statuses = self.script[self.path]
        status = statuses[min(count, len(statuses) - 1)]
        body = b'{"ok": true}'
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        """Quiet."""


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    _Flaky.seen = {}
    _Flaky.script = {"/once": [502, 200], "/always": [503], "/missing": [404]}
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _get(url: str, policy: RetryPolicy = FAST) -> Fetched:
    async def run() -> Fetched:
        async with httpx.AsyncClient(timeout=5) as client:
            return await Fetcher(client, 2, policy).get(url)

    return asyncio.run(run())


def test_one_transient_502_is_retried_and_the_check_sees_the_200(server: str) -> None:
    fetched = _get(server + "/once")
    assert fetched.status == 200 and fetched.body == {"ok": True}
    assert _Flaky.seen["/once"] == 2


def test_a_lasting_503_is_asked_three_times_then_reported(server: str) -> None:
    fetched = _get(server + "/always")
    assert fetched.status == 503
    assert _Flaky.seen["/always"] == 3


def test_a_404_is_an_answer_not_retried(server: str) -> None:
    assert _get(server + "/missing").status == 404
    assert _Flaky.seen["/missing"] == 1


def test_an_unreachable_host_ends_as_an_error_value_after_the_retries() -> None:
    fetched = _get(
        "http://127.0.0.1:9/",
        RetryPolicy(retries=1, base_delay_s=0.01, min_delay_s=0.0, jitter_s=0.0),
    )
    assert fetched.status is None and fetched.error is not None
    assert fetched.error.startswith("ConnectError")
