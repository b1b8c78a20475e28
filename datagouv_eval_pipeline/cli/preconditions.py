"""What ``datagouv-eval experiment`` checks before any agent runs.

Each check fails with one line naming the path and what is wrong, so a bad ``DAGSTER_HOME``,
an unwritable warehouse directory or a warehouse file locked by an analyst's
``duckdb -readonly`` shell stops the command at once instead of after every agent run.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click
import duckdb

from datagouv_eval_pipeline.base.filelock import LockHeldError, exclusive_lock
from datagouv_eval_pipeline.base.writable import writable_dir_problem
from datagouv_eval_pipeline.pipeline.warehouse import describe_open_error


def require_instance_dir(home: Path) -> None:
    """``DAGSTER_HOME`` must be a directory, or creatable as one.

    Raises:
        click.ClickException: It is a file, or it cannot be created.
    """
    if home.exists() and not home.is_dir():
        raise click.ClickException(
            f"{home}: DAGSTER_HOME must be a directory (the Dagster instance's), and this is a file"
        )
    try:
        home.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise click.ClickException(
            f"{home}: cannot create the Dagster instance directory ({error.strerror})"
        ) from None


def require_writable_warehouse(path: Path) -> None:
    """The warehouse file must be writable now: its directory creatable, the file not locked.

    DuckDB allows one writing process and no writer while another process holds the file open,
    even read-only; the pipeline writes it only at the end, so this is checked first.

    Raises:
        click.ClickException: Naming the path and the problem (and the holder's pid for a lock).
    """
    if path.exists() and not path.is_file():
        raise click.ClickException(f"{path}: the warehouse path is a directory, not a DuckDB file")
    directory = path.parent
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise click.ClickException(
            f"{directory}: cannot create the warehouse directory ({error.strerror})"
        ) from None
    if not os.access(directory, os.W_OK):
        raise click.ClickException(f"{directory}: the warehouse directory is not writable")
    if not path.exists():
        return
    try:
        duckdb.connect(str(path)).close()
    except duckdb.Error as error:
        raise click.ClickException(describe_open_error(path, error)) from None


def require_code_cell_dirs() -> None:
    """What code cells write outside the run store must be usable directories.

    The twin home (the front's CA) and the cache holding the sandbox's copy of the libraries.

    Raises:
        click.ClickException: One is a file, or cannot be created or written.
    """
    from datagouv_eval_pipeline.base.cache_home import CacheDirError, require_writable_dir
    from datagouv_eval_pipeline.world.front import TwinHomeError, require_twin_home
    from datagouv_eval_pipeline.world.sandbox import LIBRARY_DIR_ENV, library_root

    try:
        require_twin_home()
        require_writable_dir(
            library_root(), "the code sandbox's copy of the libraries", LIBRARY_DIR_ENV
        )
    except (TwinHomeError, CacheDirError) as error:
        raise click.ClickException(str(error)) from None


def sandbox_notice() -> str | None:
    """Why the code cells will be skipped on this machine, or None when they can run."""
    if shutil.which("bwrap") is not None:
        return None
    return (
        "bubblewrap (bwrap) is not installed: the code cells (code, code + skills, code + CLI) "
        "will be skipped; install it with `apt-get install bubblewrap` (./dev run does it as root)"
    )


LOCK_NAME = ".experiment.lock"
"""The file in the run store an experiment holds locked while it runs."""


@contextmanager
def exclusive_run_store(root: Path) -> Iterator[None]:
    """Hold the run store for one experiment; a second one on the same store is refused at once.

    Two experiments on one store corrupt nothing, but the second fails a cell late with a digest
    mismatch. The lock is the kernel's (``flock``): it goes with the process, even on ``kill -9``.

    Raises:
        click.ClickException: The store is a file or cannot be created, or another experiment
            holds it.
    """
    problem = writable_dir_problem(root)
    if problem is not None:
        raise click.ClickException(
            f"{root}: the run store {problem}; set DATAGOUV_EVAL_RUN_STORE to a directory"
        )
    try:
        with exclusive_lock(root / LOCK_NAME, wait=False):
            yield
    except LockHeldError as held:
        who = f"process {held.holder}" if held.holder.isdigit() else "another process"
        raise click.ClickException(
            f"{root}: another experiment ({who}) is using this run store; wait for it to end, "
            "or give this one its own DATAGOUV_EVAL_RUN_STORE and DATAGOUV_EVAL_DUCKDB"
        ) from None
