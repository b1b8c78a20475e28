"""Where the project keeps what it can rebuild (search indexes, the sandbox's library copy)."""

from __future__ import annotations

import os
from pathlib import Path


def project_cache_dir(name: str, override_env: str) -> Path:
    """Return ``$<override_env>`` if set, else ``$XDG_CACHE_HOME/datagouv-eval/<name>``.

    ``XDG_CACHE_HOME`` defaults to ``~/.cache``.
    """
    override = os.environ.get(override_env)
    if override:
        return Path(override)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "datagouv-eval" / name
