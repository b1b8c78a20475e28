"""Where the project's files live, in a checkout and in an installed wheel.

The only module that knows. In a checkout (an editable install, ``uv sync``, or the package on
``PYTHONPATH``) every kind of file is the repository's own: editing ``task_specs/`` or
``snapshots/`` takes effect at once. An installed wheel carries copies of those directories in
the package, under ``_project/`` with the repository's layout (``pyproject.toml`` ships them), and
reads them through :func:`importlib.resources.files`; the wheel is the only thing that creates
``_project/``, so its presence is what tells the two apart.

The packaged copies are read-only: what the pipeline writes goes to the current directory
(``data/``, ``dagster_home/``, as ``.twin/`` already does) or, for dbt, to a copy of its project
under the project cache (``$DATAGOUV_EVAL_DBT_DIR``, else ``$XDG_CACHE_HOME/datagouv-eval/dbt``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from importlib import resources
from pathlib import Path

from datagouv_eval_pipeline.base.cache_home import project_cache_dir

PACKAGE_DIR = Path(__file__).resolve().parent.parent
"""The ``datagouv_eval_pipeline`` package directory (what code fingerprints hash)."""

PACKAGED_DIRNAME = "_project"
"""The package subdirectory where a wheel keeps its copies of the project files."""

DBT_DIR_ENV = "DATAGOUV_EVAL_DBT_DIR"
"""Overrides where an installed wheel keeps its writable copy of the dbt project."""

# Repository-relative paths of the files read at run time; each is shipped in the wheel under
# the same path (see `[tool.hatch.build.targets.wheel.sources]` in pyproject.toml).
TASK_SPECS = "task_specs"
SNAPSHOTS = "snapshots"
DBT_PROJECT = "dbt_metrics"
TRACE_SCHEMA = "docs/trace.schema.json"
EXAMPLE_TRACES = "docs/examples/traces"
SANDBOX_DOCKERFILE = "docker/sandbox/Dockerfile"
DAGSTER_CONFIG = "dagster_home"
WORKSPACE = "workspace.yaml"  # checkout only, see workspace_file()

# What dbt writes inside its project directory, never part of a copy.
_DBT_GENERATED = ("target", "logs", "dbt_packages", ".user.yml")


def packaged_root(package_dir: Path = PACKAGE_DIR) -> Path | None:
    """Return the wheel's copy of the project files, or None when running from a checkout.

    Args:
        package_dir: The package directory; tests pass a fake one.

    Raises:
        RuntimeError: The package is imported from a zip file, whose data cannot be handed to
            dbt, DuckDB or Docker as paths.
    """
    if package_dir == PACKAGE_DIR:
        resource = resources.files("datagouv_eval_pipeline") / PACKAGED_DIRNAME
        if not isinstance(resource, Path):
            raise RuntimeError(
                f"datagouv_eval_pipeline is imported from {resource!r}, not a directory: "
                "install the wheel (unzipped) or run from a checkout"
            )
    else:
        resource = package_dir / PACKAGED_DIRNAME
    return resource if resource.is_dir() else None


def checkout_root(package_dir: Path = PACKAGE_DIR) -> Path | None:
    """Return the repository root when running from a checkout, else None (an installed wheel).

    Args:
        package_dir: The package directory; tests pass a fake one.
    """
    return None if packaged_root(package_dir) is not None else package_dir.parent


def project_file(relative: str, package_dir: Path = PACKAGE_DIR) -> Path:
    """Return a read-only project file or directory: the checkout's, else the wheel's copy.

    Args:
        relative: Its path in the repository, such as :data:`TASK_SPECS`.
        package_dir: The package directory; tests pass a fake one.
    """
    packaged = packaged_root(package_dir)
    return (packaged if packaged is not None else package_dir.parent) / relative


def task_specs_dir() -> Path:
    """Return the curated task specifications (``task_specs/``)."""
    return project_file(TASK_SPECS)


def snapshots_dir() -> Path:
    """Return the twin's snapshots (``snapshots/``)."""
    return project_file(SNAPSHOTS)


def trace_schema_path() -> Path:
    """Return the committed JSON schema of the trace format (``docs/trace.schema.json``)."""
    return project_file(TRACE_SCHEMA)


def example_traces_dir() -> Path:
    """Return the example traces of ``datagouv-eval demo`` (``docs/examples/traces/``)."""
    return project_file(EXAMPLE_TRACES)


def sandbox_dockerfile() -> Path:
    """Return the sandbox image definition (``docker/sandbox/Dockerfile``)."""
    return project_file(SANDBOX_DOCKERFILE)


def workspace_file(package_dir: Path = PACKAGE_DIR) -> Path | None:
    """Return the checkout's Dagster workspace (``workspace.yaml``); None from a wheel.

    A wheel cannot ship a single top-level file under another name without hatch's
    ``force-include``, which also lands in editable installs, so the instance command writes
    its own workspace instead.

    Args:
        package_dir: The package directory; tests pass a fake one.
    """
    root = checkout_root(package_dir)
    return root / WORKSPACE if root is not None else None


def dagster_config_dir() -> Path:
    """Return the directory holding the instance's tracked ``dagster.yaml`` and ``pools.yaml``."""
    return project_file(DAGSTER_CONFIG)


def work_dir(package_dir: Path = PACKAGE_DIR) -> Path:
    """Return the directory that holds ``data/`` and the local ``dagster_home/``.

    The checkout's root; outside a checkout, the current directory (read when called), since
    the installed package must not be written to.

    Args:
        package_dir: The package directory; tests pass a fake one.
    """
    root = checkout_root(package_dir)
    return root if root is not None else Path.cwd()


def data_dir() -> Path:
    """Return the default home of generated data (run store, warehouse, builds): ``data/``."""
    return work_dir() / "data"


def dagster_home_dir() -> Path:
    """Return the default local Dagster instance directory: ``dagster_home/``."""
    return work_dir() / DAGSTER_CONFIG


def dbt_project_dir(package_dir: Path = PACKAGE_DIR) -> Path:
    """Return a dbt project directory dbt may write into (``target/``, ``logs/``).

    In a checkout, ``dbt_metrics/`` itself (its outputs are git-ignored). From a wheel, a copy
    of the packaged project under ``$DATAGOUV_EVAL_DBT_DIR`` (else the project cache), one per
    content hash: made once in a temporary directory and renamed into place, so concurrent
    processes share it and a new version of the models never meets an old manifest.

    Args:
        package_dir: The package directory; tests pass a fake one.
    """
    packaged = packaged_root(package_dir)
    if packaged is None:
        return package_dir.parent / DBT_PROJECT
    source = packaged / DBT_PROJECT
    files = sorted(p for p in source.rglob("*") if p.is_file())
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(source).as_posix().encode() + b"\0" + path.read_bytes())
    parent = project_cache_dir("dbt", DBT_DIR_ENV)
    target = parent / f"{DBT_PROJECT}-{digest.hexdigest()[:16]}"
    if not target.is_dir():
        parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=".copy-", dir=parent))
        copied = scratch / DBT_PROJECT
        shutil.copytree(source, copied, ignore=shutil.ignore_patterns(*_DBT_GENERATED))
        try:
            os.rename(copied, target)
        except OSError:
            # Another process renamed its copy first; theirs is identical.
            if not target.is_dir():
                raise
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return target
