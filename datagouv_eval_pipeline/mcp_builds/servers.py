"""The build servers of one run.

Each build is installed and started on first use; all are stopped together when the run ends
(also on errors and Ctrl-C).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from datagouv_eval_pipeline.benchmark.cells import Cell
from datagouv_eval_pipeline.benchmark.config import McpBuild
from datagouv_eval_pipeline.mcp_builds.install import install_build
from datagouv_eval_pipeline.mcp_builds.process import BuildServer


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


class BuildServers:
    """Starts the builds cells need, once each, and stops them all on :meth:`close`."""

    def __init__(
        self, network_env: Mapping[str, str] | None, *, cache_dir: Path | None = None
    ) -> None:
        """Prepare an empty pool.

        Args:
            network_env: The hostname front's client variables (offline: the builds read the
                twin through it); None for a live run (they read production).
            cache_dir: The builds cache (default: ``data/mcp_builds``).
        """
        self._network_env = None if network_env is None else dict(network_env)
        self._cache_dir = cache_dir
        self._servers: dict[str, BuildServer] = {}
        self._lock = threading.Lock()

    @property
    def servers(self) -> dict[str, BuildServer]:
        """The started servers by build spec."""
        return dict(self._servers)

    def start(self, build: McpBuild) -> BuildEndpoint:
        """Install (or find in the cache) and start ``build``, or return its running server.

        Raises:
            BuildError: The build cannot be installed or started (the message says why).
        """
        with self._lock:
            server = self._servers.get(build.spec)
            if server is None:
                installed = install_build(build, self._cache_dir)
                server = BuildServer(installed, self._network_env)
                server.start()
                self._servers[build.spec] = server
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
        with self._lock:
            servers, self._servers = list(self._servers.values()), {}
        for server in servers:
            server.stop()

    def __enter__(self) -> BuildServers:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
