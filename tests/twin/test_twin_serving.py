"""The shared background-uvicorn helpers (used by TwinServer and ReplayServer)."""

from __future__ import annotations

import http.client
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from datagouv_eval_pipeline.base.serving import (
    BackgroundUvicorn,
    LoopbackApp,
    answers_ok,
    bind_loopback,
    check_loopback,
)


async def _health(request: Request) -> PlainTextResponse:
    return PlainTextResponse("ok")


async def _down(request: Request) -> PlainTextResponse:
    return PlainTextResponse("starting", status_code=503)


APP = Starlette(routes=[Route("/health", _health), Route("/down", _down)])


def _config(port: int) -> uvicorn.Config:
    return uvicorn.Config(APP, host="127.0.0.1", port=port, log_level="warning", lifespan="off")


def _get(port: int, path: str) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_start_waits_for_health_and_stop_releases_the_port() -> None:
    runner = BackgroundUvicorn("the test server", _config, "/health")
    assert runner.port is None
    port = runner.start("127.0.0.1", 0)
    try:
        assert runner.port == port and port > 0
        assert _get(port, "/health") == (200, b"ok")
        assert runner.start("127.0.0.1", 0) == port  # already running: same server
    finally:
        runner.stop()
    assert runner.port is None and not answers_ok(port, "/health")
    # The socket was closed: the same port can be bound again.
    bind_loopback("127.0.0.1", port, what="the test server").close()


def test_a_server_that_never_gets_healthy_is_stopped_with_an_error() -> None:
    runner = BackgroundUvicorn("the test server", _config, "/down")
    with pytest.raises(RuntimeError, match=r"the test server on port \d+ was not healthy"):
        runner.start("127.0.0.1", 0, timeout=0.3)
    assert runner.port is None


def test_a_server_whose_thread_dies_is_reported() -> None:
    @asynccontextmanager
    async def failing(app: Starlette) -> AsyncIterator[None]:
        raise RuntimeError("no start")
        yield  # pragma: no cover

    broken = Starlette(routes=[Route("/health", _health)], lifespan=failing)

    def config(port: int) -> uvicorn.Config:
        return uvicorn.Config(broken, port=port, log_level="critical", lifespan="on")

    runner = BackgroundUvicorn("the test server", config, "/health")
    with pytest.raises(RuntimeError, match=r"thread on port \d+ stopped during start-up"):
        runner.start("127.0.0.1", 0)
    assert runner.port is None


def test_only_loopback_hosts_are_accepted() -> None:
    check_loopback("localhost", "the test server")
    with pytest.raises(ValueError, match=r"the test server binds to loopback only"):
        check_loopback("0.0.0.0", "the test server")
    runner = BackgroundUvicorn("the test server", _config, "/health")
    with pytest.raises(ValueError, match="loopback only"):
        runner.start("192.168.1.2", 0)
    assert runner.port is None


class _Served(LoopbackApp[str]):
    def __init__(self, health_path: str = "/health") -> None:
        runner = BackgroundUvicorn("the test app", _config, health_path)
        super().__init__(runner, host="127.0.0.1", port=0)
        self.starts = 0

    def _started(self, port: int) -> str:
        self.starts += 1
        return f"http://127.0.0.1:{port}"


def test_a_loopback_app_gives_what_its_start_made_until_stopped() -> None:
    served = _Served()
    with served as url:
        port = int(url.rsplit(":", 1)[1])
        assert _get(port, "/health") == (200, b"ok")
        assert served.start() == url and served.starts == 1  # running: the same, not restarted
    assert not answers_ok(port, "/health")
    with served as again:
        assert served.starts == 2 and again.startswith("http://127.0.0.1:")


def test_a_loopback_app_refuses_a_public_host() -> None:
    with pytest.raises(ValueError, match="the test app binds to loopback only"):
        runner = BackgroundUvicorn("the test app", _config, "/health")
        LoopbackApp[str](runner, host="0.0.0.0", port=0)


def test_a_loopback_app_that_never_gets_healthy_stays_stopped() -> None:
    served = _Served("/down")
    with pytest.raises(RuntimeError, match="was not healthy"):
        served.start(timeout=0.3)
    assert served.starts == 0
