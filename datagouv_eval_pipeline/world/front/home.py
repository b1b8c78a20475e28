"""Where the local twin keeps machine-local state: the front's CA, the running front's port.

``$DATAGOUV_EVAL_TWIN_HOME``, or ``.twin/`` in the current directory (git-ignored). Nothing in
it is ever committed or leaves the machine.
"""

from __future__ import annotations

import os
from pathlib import Path

from datagouv_eval_pipeline.base.writable import writable_dir_problem

TWIN_HOME_ENV = "DATAGOUV_EVAL_TWIN_HOME"
DEFAULT_TWIN_HOME = ".twin"


def twin_home(home: Path | str | None = None) -> Path:
    """Return the twin home: ``home``, else ``$DATAGOUV_EVAL_TWIN_HOME``, else ``./.twin``.

    The path is made absolute (it is handed to other processes) but not created.
    """
    chosen = home if home is not None else os.environ.get(TWIN_HOME_ENV) or DEFAULT_TWIN_HOME
    # realpath, not Path.resolve: a symlink loop is then the home check's clear error.
    return Path(os.path.realpath(Path(chosen).expanduser()))


class TwinHomeError(ValueError):
    """The twin home cannot hold the front's state (the message names the path and why)."""


def require_twin_home(home: Path | str | None = None) -> Path:
    """The twin home, checked to be a directory that exists or can be created, and writable.

    Raises:
        TwinHomeError: It is a file, or cannot be created or written.
    """
    path = twin_home(home)
    problem = writable_dir_problem(path)
    if problem is not None:
        raise TwinHomeError(f"{path} (the twin home: ${TWIN_HOME_ENV} or ./.twin): {problem}")
    return path
