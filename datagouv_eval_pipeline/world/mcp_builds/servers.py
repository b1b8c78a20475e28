"""The build servers of one run.

Each build is installed and started on first use; all are stopped together when the run ends
(also on errors and Ctrl-C).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from datagouv_eval_pipeline.base.server_process import ServerPool
from datagouv_eval_pipeline.core.benchmark import Cell, McpBuild
from datagouv_eval_pipeline.world.api import TwinServer, twin_front
from datagouv_eval_pipeline.world.catalogue import TwinUrls
from datagouv_eval_pipeline.world.front import CA_BUNDLE_VARS
from datagouv_eval_pipeline.world.mcp_builds.install import install_build
from datagouv_eval_pipeline.world.mcp_builds.process import BuildServer


@dataclass(frozen=True)
class BuildEndpoint:
    """Where a cell's build answers, and which code it runs.

    Attributes:
        url: The server's streamable-HTTP endpoint on 127.0.0.1.
        code_digest: sha256 of the server's code (part of the agent-run cache key).
        revision: The commit of a ``git`` build, else None.
        spec: The build, as configured.
    """

    url: str
    code_digest: str
    revision: str | None
    spec: str

    @property
    def fingerprint(self) -> str:
        """What identifies the toolset's behaviour beyond the cell record."""
        return f"{self.spec}#{self.code_digest}"


class BuildServers(ServerPool[str, BuildServer]):
    """Starts the builds cells need, once each, and stops them all on :meth:`close`.

    Offline, the builds keep their production hostnames and reach the twin through the hostname
    front: given ``twin``, the pool starts a front before it with the first build (a run without
    build cells pays nothing) and stops it last.
    """

    def __init__(
        self,
        network_env: Mapping[str, str] | None = None,
        *,
        twin: TwinServer | TwinUrls | None = None,
        cache_dir: Path | None = None,
    ) -> None:
        """Prepare an empty pool.

        Args:
            network_env: The client variables of a front already running (offline).
            twin: The running twin to start a front before (offline), instead of
                ``network_env``. With neither, the run is live: the builds read production.
            cache_dir: The builds cache (default: ``data/mcp_builds``).
        """
        if network_env is not None and twin is not None:
            raise ValueError("give the front's variables or the twin to front, not both")
        super().__init__()
        self._network_env = None if network_env is None else dict(network_env)
        self._twin = twin
        self._cache_dir = cache_dir
        self._front = contextlib.ExitStack()

    @property
    def offline(self) -> bool:
        """True when the builds read the twin (through the front)."""
        return self._network_env is not None or self._twin is not None

    def _network(self) -> dict[str, str] | None:
        if self._network_env is None and self._twin is not None:
            front = self._front.enter_context(twin_front(self._twin))
            env = front.client_env()
            if front.authority is not None:
                # Offline the front is all a build reaches: trusting its CA alone spares the
                # real server's httpx (one client per request) parsing every public root.
                env.update(dict.fromkeys(CA_BUNDLE_VARS, str(front.authority.ca_path)))
            self._network_env = env
        return self._network_env

    @property
    def servers(self) -> dict[str, BuildServer]:
        """The started servers by build spec."""
        return self.started()

    def start(self, build: McpBuild) -> BuildEndpoint:
        """Install (or find in the cache) and start ``build``, or return its running server.

        Raises:
            BuildError: The build cannot be installed or started (the message says why).
        """

        def start(_: int) -> BuildServer:
            server = BuildServer(install_build(build, self._cache_dir), self._network())
            server.start()
            return server

        server = self.get(build.spec, start)
        return BuildEndpoint(
            url=server.url,
            code_digest=server.build.code_digest,
            revision=server.build.revision,
            spec=build.spec,
        )

    def endpoint(self, cell: Cell) -> BuildEndpoint | None:
        """The started build of a cell whose MCP server is a build; None for other cells."""
        if cell.mcp_build is None or "mcp" not in cell.capabilities:
            return None
        return self.start(cell.mcp_build)

    def close(self) -> None:
        """Stop every server (idempotent)."""
        try:
            super().close()
        finally:
            self._front.close()
            if self._twin is not None:
                self._network_env = None
