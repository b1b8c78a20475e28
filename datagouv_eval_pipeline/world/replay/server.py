"""Serve the replay app on 127.0.0.1, in a background thread or in the foreground.

    with ReplayServer(ReplayConfig(mode="replay", cassettes_dir=Path("cassettes"))) as server:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="offline")
        ...
    server.raise_for_misses()   # fail loudly if any request had no recorded answer

The server only ever binds a loopback address.
"""

from __future__ import annotations

from collections.abc import Callable

import uvicorn

from datagouv_eval_pipeline.base.serving import (
    LOOPBACK_HOSTS,
    BackgroundUvicorn,
    LoopbackApp,
    bind_loopback,
    serve_in_foreground,
)
from datagouv_eval_pipeline.world.replay.app import (
    ReplayConfig,
    ReplayMiss,
    ReplayState,
    create_app,
)
from datagouv_eval_pipeline.world.replay.cassette import check_name

__all__ = ["HEALTH_PATH", "LOOPBACK_HOSTS", "ReplayServer", "serve_forever"]

HEALTH_PATH = "/_replay/health"
_WHAT = "the replay server"
# A deep backlog: the rate-limit benchmark opens many connections at once.
_BACKLOG = 1024


def _uvicorn_config(config: ReplayConfig, state: ReplayState, port: int) -> uvicorn.Config:
    return uvicorn.Config(
        create_app(config, state),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=2,
    )


class ReplayServer(LoopbackApp["ReplayServer"]):
    """The replay app served by uvicorn in a daemon thread; a context manager yielding itself."""

    def __init__(self, config: ReplayConfig, *, port: int = 0, host: str = "127.0.0.1") -> None:
        """Prepare a server (nothing is bound until :meth:`start`).

        Args:
            config: Mode, cassettes, upstream and simulation settings.
            port: TCP port; 0 picks a free one.
            host: ``127.0.0.1`` or ``localhost`` (anything else is refused).
        """
        runner = BackgroundUvicorn(
            _WHAT,
            lambda bound: _uvicorn_config(self.config, self.state, bound),
            HEALTH_PATH,
            backlog=_BACKLOG,
        )
        super().__init__(runner, host=host, port=port)
        self.config = config
        self.state = ReplayState(config)
        self._url: str | None = None

    @property
    def url(self) -> str:
        """Root URL of the running server, e.g. ``http://127.0.0.1:54321`` (no trailing slash)."""
        if self._url is None:
            raise RuntimeError("the replay server is not running; call start() first")
        return self._url

    @property
    def base_url(self) -> str:
        """OpenAI ``base_url`` for the default cassette: ``<url>/v1``."""
        return self.url + "/v1"

    def cassette_url(self, name: str) -> str:
        """OpenAI ``base_url`` for cassette ``name``: ``<url>/cassettes/<name>/v1``."""
        return f"{self.url}/cassettes/{check_name(name)}/v1"

    @property
    def misses(self) -> list[ReplayMiss]:
        """Requests that had no recorded answer, in order."""
        return self.state.misses

    def raise_for_misses(self) -> None:
        """Raise ``CassetteMissError`` naming every request that missed, if any."""
        self.state.raise_for_misses()

    def _started(self, port: int) -> ReplayServer:
        self._url = f"http://{self._host}:{port}"
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Ask uvicorn to exit, wait for the thread, and release the socket."""
        super().stop(timeout)
        self._url = None


def serve_forever(
    config: ReplayConfig,
    *,
    port: int = 8766,
    host: str = "127.0.0.1",
    on_ready: Callable[[str], None] | None = None,
) -> ReplayState:
    """Serve in the foreground until interrupted (Ctrl-C); return the final state.

    Args:
        config: Mode, cassettes, upstream and simulation settings.
        port: TCP port (0 picks a free one).
        host: ``127.0.0.1`` or ``localhost``.
        on_ready: Called with the root URL once the socket is bound.
    """
    sock = bind_loopback(host, port, what=_WHAT, backlog=_BACKLOG)
    bound = int(sock.getsockname()[1])
    url = f"http://{host}:{bound}"
    state = ReplayState(config)
    if on_ready is not None:
        on_ready(url)
    serve_in_foreground(sock, _uvicorn_config(config, state, bound))
    return state
