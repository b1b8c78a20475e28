"""Run the twin on 127.0.0.1, in a background thread (tests, Dagster resource) or the foreground.

    with TwinServer() as urls:          # free port, waits until /_twin/health answers
        httpx.get(urls.datagouv_api + "1/datasets/5d13a8b6634f41070a43dff3/")

The server only ever binds a loopback address (the thread and socket plumbing is shared with
the replay server, in ``datagouv_eval_pipeline.base.serving``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import uvicorn
from starlette.types import ASGIApp

from datagouv_eval_pipeline.base.serving import (
    LOOPBACK_HOSTS,
    BackgroundUvicorn,
    LoopbackApp,
    bind_loopback,
    check_loopback,
    serve_in_foreground,
)
from datagouv_eval_pipeline.world.api.app import TwinConfig, create_app
from datagouv_eval_pipeline.world.catalogue import CatalogStore, TwinUrls
from datagouv_eval_pipeline.world.mcp import DEFAULT_VERSIONS, mcp_urls

__all__ = ["HEALTH_PATH", "LOOPBACK_HOSTS", "TwinServer", "serve_forever", "uvicorn_config"]

HEALTH_PATH = "/_twin/health"
_WHAT = "the twin"


def uvicorn_config(app: ASGIApp, port: int) -> uvicorn.Config:
    """Return the uvicorn settings the twin's ``app`` is served with on a loopback ``port``."""
    return uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        access_log=False,
        # uvloop and httptools (dependencies of the project): about half the CPU per request of
        # asyncio's loop and h11; "auto" would fall back silently if they were missing.
        loop="uvloop",
        http="httptools",
        # The lifespan runs the MCP session managers.
        lifespan="on",
        # Loopback only, never behind a proxy: no X-Forwarded-* rewriting (and no wrapper
        # middleware on every request).
        proxy_headers=False,
        timeout_graceful_shutdown=2,
    )


def _uvicorn_config(
    store: CatalogStore,
    config: TwinConfig | None,
    port: int,
    mcp_versions: Sequence[str] | None = None,
) -> uvicorn.Config:
    return uvicorn_config(create_app(store, config, mcp_versions=mcp_versions), port)


class TwinServer(LoopbackApp[TwinUrls]):
    """The twin served by uvicorn in a daemon thread; a context manager yielding its URLs."""

    def __init__(
        self,
        store: CatalogStore | None = None,
        *,
        port: int = 0,
        host: str = "127.0.0.1",
        config: TwinConfig | None = None,
        snapshots_dir: Path | str | None = None,
        snapshot_id: str | None = None,
        mcp_versions: Sequence[str] | None = None,
    ) -> None:
        """Prepare a server (nothing is bound until :meth:`start`).

        Args:
            store: A loaded catalog; loaded from ``snapshots_dir``/``snapshot_id`` if omitted.
            port: TCP port; 0 picks a free one.
            host: ``127.0.0.1`` or ``localhost`` (anything else is refused).
            config: API settings.
            snapshots_dir: Where to load the snapshot from when ``store`` is omitted.
            snapshot_id: Which snapshot to load when ``store`` is omitted.
            mcp_versions: MCP releases to serve (default: all; ``()`` for none).
        """
        check_loopback(host, _WHAT)
        self.store = store or CatalogStore.load(snapshots_dir, snapshot_id)
        self._config = config
        self._mcp_versions = mcp_versions
        runner = BackgroundUvicorn(
            _WHAT,
            lambda bound: _uvicorn_config(self.store, self._config, bound, self._mcp_versions),
            HEALTH_PATH,
            inheritable=True,
        )
        super().__init__(runner, host=host, port=port)

    @property
    def urls(self) -> TwinUrls:
        """Return the base URLs of the running server."""
        if self._running is None:
            raise RuntimeError("the twin server is not running; call start() first")
        return self._running

    @property
    def mcp_urls(self) -> dict[str, str]:
        """Return ``{version: MCP endpoint URL}`` of the running server."""
        versions = DEFAULT_VERSIONS if self._mcp_versions is None else self._mcp_versions
        return mcp_urls(self.urls.site, versions)

    def _started(self, port: int) -> TwinUrls:
        return TwinUrls.for_port(port, self._host)


def serve_forever(
    store: CatalogStore,
    *,
    port: int = 8765,
    host: str = "127.0.0.1",
    config: TwinConfig | None = None,
    on_ready: Callable[[TwinUrls], None] | None = None,
    mcp_versions: Sequence[str] | None = None,
) -> None:
    """Serve the twin in the foreground until interrupted (Ctrl-C).

    Args:
        store: The loaded catalog.
        port: TCP port (0 picks a free one).
        host: ``127.0.0.1`` or ``localhost``.
        config: API settings.
        on_ready: Optional callable receiving the :class:`TwinUrls` once the socket is bound.
        mcp_versions: MCP releases to serve (default: all; ``()`` for none). Their endpoint
            URLs are printed after ``on_ready`` runs.
    """
    sock = bind_loopback(host, port, what=_WHAT, inheritable=True)
    bound = int(sock.getsockname()[1])
    urls = TwinUrls.for_port(bound, host)
    if on_ready is not None:
        on_ready(urls)
    versions = DEFAULT_VERSIONS if mcp_versions is None else mcp_versions
    for version, url in mcp_urls(urls.site, versions).items():
        print(f"  mcp {version:<9} {url}", flush=True)
    serve_in_foreground(sock, _uvicorn_config(store, config, bound, mcp_versions))
