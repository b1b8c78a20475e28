"""The data.gouv.fr MCP server emulated at pinned releases (0.2.5, 0.2.14, 0.2.19, 0.2.26).

``versions`` is the version table (tool sets, signatures, behaviour flags per release);
``tools`` and ``data_tools`` implement the tools over the data.gouv.fr HTTP APIs through an
``upstream.Upstream`` (the twin in-process, or the live services), with the layouts of the
reference (0.2.5, and the search tools the later releases kept); ``code_layout`` has those of
the releases emulated from their own code (0.2.14, 0.2.19, 0.2.26, each checked against a real
build); ``server`` builds one MCP
server per release and mounts them side by side at ``/mcp/v{version}/mcp``.
"""
