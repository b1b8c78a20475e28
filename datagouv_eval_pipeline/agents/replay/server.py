"""Serve the replay app on 127.0.0.1, in a background thread or in the foreground.

    with ReplayServer(ReplayConfig(mode="replay", cassettes_dir=Path("cassettes"))) as server:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="offline")
        ...
    server.raise_for_misses()   # fail loudly if any request had no recorded answer

The server only ever binds a loopback address.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from types import TracebackType

import httpx
import uvicorn

from datagouv_eval_pipeline.agents.replay.app import (
    ReplayConfig,
    ReplayMiss,
    ReplayState,
    create_app,
)
from datagouv_eval_pipeline.agents.replay.cassette import check_name

LOOPBACK_HOSTS = ("127.0.0.1", "localhost")
HEALTH_PATH = "/_replay/health"


def _bind(host: str, port: int) -> socket.socket:
    if host not in LOOPBACK_HOSTS:
        raise ValueError(
            f"the replay server binds to loopback only ({LOOPBACK_HOSTS}), not {host!r}"
        )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError:
        sock.close()
        raise
    # A deep backlog: the rate-limit benchmark opens many connections at once.
    sock.listen(1024)
    return sock


def _uvicorn(config: ReplayConfig, state: ReplayState, port: int) -> uvicorn.Server:
    return uvicorn.Server(
        uvicorn.Config(
            create_app(config, state),
            host="127.0.0.1",
            port=port,
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=2,
        )
    )


class ReplayServer:
    """The replay app served by uvicorn in a daemon thread; a context manager yielding itself."""

    def __init__(self, config: ReplayConfig, *, port: int = 0, host: str = "127.0.0.1") -> None:
        """Prepare a server (nothing is bound until :meth:`start`).

        Args:
            config: Mode, cassettes, upstream and simulation settings.
            port: TCP port; 0 picks a free one.
            host: ``127.0.0.1`` or ``localhost`` (anything else is refused).
        """
        if host not in LOOPBACK_HOSTS:
            raise ValueError(
                f"the replay server binds to loopback only ({LOOPBACK_HOSTS}), not {host!r}"
            )
        self.config = config
        self.state = ReplayState(config)
        self._requested_port = port
        self._host = host
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
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

    def start(self, timeout: float = 10.0) -> ReplayServer:
        """Bind, start serving in a background thread, and wait until healthy.

        Raises:
            RuntimeError: the server did not answer its health check within ``timeout`` s.
        """
        if self._server is not None:
            return self
        self._socket = _bind(self._host, self._requested_port)
        port = int(self._socket.getsockname()[1])
        self._server = _uvicorn(self.config, self.state, port)
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [self._socket]},
            name=f"replay-{port}",
            daemon=True,
        )
        self._thread.start()
        url = f"http://{self._host}:{port}"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self._thread.is_alive():
                self._cleanup()
                raise RuntimeError(f"the replay server thread on port {port} stopped at start-up")
            if self._server.started:
                try:
                    if httpx.get(url + HEALTH_PATH, timeout=1.0).status_code == 200:
                        self._url = url
                        return self
                except httpx.HTTPError:
                    pass
            time.sleep(0.01)
        self.stop()
        raise RuntimeError(f"the replay server on port {port} was not healthy after {timeout} s")

    def stop(self, timeout: float = 10.0) -> None:
        """Ask uvicorn to exit, wait for the thread, and release the socket."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
        self._cleanup()

    def _cleanup(self) -> None:
        if self._socket is not None:
            self._socket.close()
        self._server = None
        self._thread = None
        self._socket = None
        self._url = None

    def __enter__(self) -> ReplayServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


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
    sock = _bind(host, port)
    url = f"http://{host}:{int(sock.getsockname()[1])}"
    state = ReplayState(config)
    if on_ready is not None:
        on_ready(url)
    server = _uvicorn(config, state, int(sock.getsockname()[1]))
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
    return state
