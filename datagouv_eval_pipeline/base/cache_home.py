"""Where the project keeps what it can rebuild (search indexes, the sandbox's library copy)."""

from __future__ import annotations

import os
from pathlib import Path

from datagouv_eval_pipeline.base.writable import writable_dir_problem


def project_cache_dir(name: str, override_env: str) -> Path:
    """Return ``$<override_env>`` if set, else ``$XDG_CACHE_HOME/datagouv-eval/<name>``.

    ``XDG_CACHE_HOME`` defaults to ``~/.cache``.
    """
    override = os.environ.get(override_env)
    if override:
        return Path(override)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "datagouv-eval" / name


class CacheDirError(ValueError):
    """A cache directory cannot be created or written (the message names it and why)."""


def require_writable_dir(path: Path, what: str, override_env: str) -> Path:
    """Create ``path`` if needed and check that it is a writable directory.

    Args:
        path: The directory.
        what: What it is for, named in the error (e.g. "the sandbox's library copy").
        override_env: The variable that chooses it (named in the error, as the remedy).

    Raises:
        CacheDirError: It is a file, or cannot be created or written.
    """
    problem = writable_dir_problem(path)
    if problem is not None:
        raise CacheDirError(
            f"{path} ({what}): {problem}; set ${override_env} or $XDG_CACHE_HOME to a writable "
            "directory"
        )
    return path
