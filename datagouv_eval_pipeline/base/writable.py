"""Directories the project writes to: created on demand, or one line saying why they cannot be."""

from __future__ import annotations

import os
from pathlib import Path


def writable_dir_problem(path: Path) -> str | None:
    """Create ``path`` if needed; None when it is a writable directory, else what is wrong.

    The answer reads after the path, e.g. ``f"{path}: {problem}"``: "is a file, not a
    directory", "cannot be created (Permission denied)" or "is not writable".
    """
    if path.exists() and not path.is_dir():
        return "is a file, not a directory"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        return f"cannot be created ({error.strerror})"
    if not os.access(path, os.W_OK):
        return "is not writable"
    return None
