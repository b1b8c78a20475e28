"""Real builds of the data.gouv.fr MCP server as toolset versions.

An entry of ``mcp_versions.yml`` with a ``build`` (``package``, ``git`` or ``path``) is installed
into an environment of its own (:mod:`.install`, cached per build), started as a subprocess on
127.0.0.1 for the run (:mod:`.process`) with the hostname front's variables offline, so the
server keeps its production hostnames and reads the twin, and stopped with the run
(:mod:`.servers`). Its own ``tools/list`` is the cell's tool list. See ``docs/mcp-builds.md``.

The public names are imported on first use (PEP 562): the dry run's estimate reads a build's
code digest without importing the servers (and the twin's HTTP stack behind them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from datagouv_eval_pipeline.base.faces import lazy_attributes

if TYPE_CHECKING:
    from datagouv_eval_pipeline.world.mcp_builds.install import (
        BUILDS_ENV,
        BuildError,
        InstalledBuild,
        build_id,
        code_digest,
        current_code_digest,
        default_builds_dir,
        install_build,
    )
    from datagouv_eval_pipeline.world.mcp_builds.process import (
        BuildServer,
        reap_orphans,
        server_environment,
    )
    from datagouv_eval_pipeline.world.mcp_builds.servers import BuildEndpoint, BuildServers

_MODULE_OF: dict[str, str] = {
    "BUILDS_ENV": ".install",
    "BuildEndpoint": ".servers",
    "BuildError": ".install",
    "BuildServer": ".process",
    "BuildServers": ".servers",
    "InstalledBuild": ".install",
    "build_id": ".install",
    "code_digest": ".install",
    "current_code_digest": ".install",
    "default_builds_dir": ".install",
    "install_build": ".install",
    "reap_orphans": ".process",
    "server_environment": ".process",
}
"""Each public name, and the module that defines it."""

if not TYPE_CHECKING:  # hidden from mypy, which then checks each name imported from the face
    __getattr__ = lazy_attributes(__name__, _MODULE_OF)


__all__ = [
    "BUILDS_ENV",
    "BuildEndpoint",
    "BuildError",
    "BuildServer",
    "BuildServers",
    "InstalledBuild",
    "build_id",
    "code_digest",
    "current_code_digest",
    "default_builds_dir",
    "install_build",
    "reap_orphans",
    "server_environment",
]
