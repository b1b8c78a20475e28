"""Loopback is never proxied: the twin, the replay server, MCP builds and local providers.

A machine whose network is reached through a proxy (``HTTPS_PROXY``, common in CI and in
companies) would otherwise send the pipeline's own requests to 127.0.0.1 through that proxy,
which cannot reach them. The package adds the loopback names to ``NO_PROXY`` when it is
imported, once, for every entry point (CLI, Dagster code location, worker processes, tests).
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
"""Host names that always mean this machine (as ``NO_PROXY`` entries)."""


def exempt_loopback_from_proxies(environ: MutableMapping[str, str] | None = None) -> None:
    """Add :data:`LOOPBACK_NAMES` to ``NO_PROXY`` and ``no_proxy`` when a proxy is set.

    Nothing changes without a proxy variable, or when ``NO_PROXY`` is ``*`` (nothing proxied).
    Entries already there are kept, in order.
    """
    env = os.environ if environ is None else environ
    proxied = any(
        env.get(name)
        for name in (
            "HTTPS_PROXY",
            "https_proxy",
            "HTTP_PROXY",
            "http_proxy",
            "ALL_PROXY",
            "all_proxy",
        )
    )
    if not proxied:
        return
    current = env.get("no_proxy") or env.get("NO_PROXY") or ""
    entries = [entry.strip() for entry in current.split(",") if entry.strip()]
    if "*" in entries:
        return
    entries += [name for name in LOOPBACK_NAMES if name not in entries]
    env["NO_PROXY"] = env["no_proxy"] = ",".join(entries)
