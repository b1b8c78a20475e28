"""What of the project sandboxed code may import: named subpackages, nothing else.

Agent code must not read the project's sources: the task specs' loaders, the twin and its
snapshot generator hold the expected answers. So instead of mounting the whole package, the
sandbox gets a copy of the subpackages it needs (the emulated ``datagouv`` command) under empty
parent packages. Copies are content-addressed in the user cache: the same sources give the
same directory, shared by every process, and a changed source gives a new one.
"""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from datagouv_eval_pipeline.base.cache_home import project_cache_dir

LIBRARY_DIR_ENV = "DATAGOUV_EVAL_SANDBOX_LIBRARY"
"""Where the copies are kept (default: ``$XDG_CACHE_HOME/datagouv-eval/sandbox-library``)."""

_PARENT_DOCSTRING = '"""Only the subpackages sandboxed code needs (see the sandbox docs)."""\n'


def library_root() -> Path:
    """Return the directory holding the content-addressed copies."""
    return project_cache_dir("sandbox-library", LIBRARY_DIR_ENV)


def _source_dir(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f"{module!r} is not an importable package")
    return Path(next(iter(spec.submodule_search_locations)))


def _sources(directory: Path) -> list[Path]:
    """The package's Python sources (no bytecode, tests or data), sorted for hashing."""
    return sorted(path for path in directory.rglob("*.py") if "__pycache__" not in path.parts)


def sandbox_library(modules: Sequence[str]) -> Path:
    """Return a top-level package directory exposing only ``modules`` (dotted package names).

    Every module must live under the same top-level package. Parent packages are empty; each
    named package is copied with its Python sources only.

    Args:
        modules: Dotted names of the packages to expose, e.g.
            ``["datagouv_eval_pipeline.world.datagouv_cli"]``.

    Returns:
        The copy of the top-level package (e.g. ``…/<digest>/datagouv_eval_pipeline``), to pass
        as one of the sandbox's ``python_packages``.

    Raises:
        ValueError: No module, modules under different top-level packages, or one that is not
            an importable package.
    """
    if not modules:
        raise ValueError("name at least one package to expose")
    tops = {module.split(".")[0] for module in modules}
    if len(tops) != 1:
        raise ValueError(f"the packages must share one top-level package, got {sorted(tops)}")
    (top,) = tops
    digest = hashlib.sha256()
    plan: list[tuple[str, Path, list[Path]]] = []
    for module in sorted(modules):
        source = _source_dir(module)
        files = _sources(source)
        plan.append((module, source, files))
        digest.update(module.encode() + b"\0")
        for path in files:
            digest.update(path.relative_to(source).as_posix().encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    target = library_root() / digest.hexdigest()[:16]
    package = target / top
    if package.is_dir():
        return package
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=target.parent))
    try:
        for module, source, files in plan:
            parts = module.split(".")
            for depth in range(1, len(parts)):
                parent = staging.joinpath(*parts[:depth])
                parent.mkdir(exist_ok=True)
                (parent / "__init__.py").write_text(_PARENT_DOCSTRING, encoding="utf-8")
            destination = staging.joinpath(*parts)
            for path in files:
                copy = destination / path.relative_to(source)
                copy.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, copy)
        for path in [staging, *staging.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)  # readable by the sandbox's uid
        try:
            staging.rename(target)
        except OSError:
            if not package.is_dir():  # not another process that got there first
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return package
