"""The data.gouv.fr MCP server emulated at pinned releases (0.2.5, 0.2.14, 0.2.19, 0.2.26).

``versions`` is the version table (tool sets, signatures, behaviour flags, protocol versions and
pydantic docs per release); ``code_layout`` renders every release's tools as the release's own
code does (one family, the differences as ``Behaviour`` flags, each release checked call by call
against a real build of it), over the data.gouv.fr HTTP APIs through an ``upstream.Upstream``
(the twin in-process, or the live services); ``tools`` holds the v2 search tools of 0.2.26 and
the environment every tool shares; ``release_sdk`` answers the handshake and argument errors as
each release's mcp 1.x and pydantic did; ``server`` builds one MCP server per release and mounts
them side by side at ``/mcp/v{version}/mcp``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from datagouv_eval_pipeline.base.faces import lazy_attributes

if TYPE_CHECKING:
    from datagouv_eval_pipeline.world.mcp.descriptions import describe
    from datagouv_eval_pipeline.world.mcp.server import mcp_urls, mount_mcp
    from datagouv_eval_pipeline.world.mcp.versions import DEFAULT_VERSIONS, VERSIONS

_MODULE_OF: dict[str, str] = {
    "DEFAULT_VERSIONS": ".versions",
    "VERSIONS": ".versions",
    "describe": ".descriptions",
    "mcp_urls": ".server",
    "mount_mcp": ".server",
}
"""Each public name, and the module that defines it."""

if not TYPE_CHECKING:  # hidden from mypy, which then checks each name imported from the face
    __getattr__ = lazy_attributes(__name__, _MODULE_OF)


__all__ = [
    "DEFAULT_VERSIONS",
    "VERSIONS",
    "describe",
    "mcp_urls",
    "mount_mcp",
]
