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
