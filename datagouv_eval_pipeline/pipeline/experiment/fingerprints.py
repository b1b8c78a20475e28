"""The code each stage depends on, derived from what its code imports.

A stage's code version is the digest of the *import closure* of its entry packages: every
module of the package they import, transitively (the import graph is read by grimp, the library
import-linter uses), each with the data files beside it. Nothing is listed by hand, so editing
``base/text.py`` stales every stage that imports it, and only those; an edit to a module no stage
imports stales nothing.

A cell's runs depend on code every cell shares (the agent runner, the replay stand-in, the
benchmark configuration code, the trace format, and all they import, minus the toolsets below)
and on the code of the toolsets its capabilities reach:

* ``mcp`` served by the twin: the emulation's closure, plus the cell's own *version row* (its
  ``VersionSpec``: tool signatures, behaviour flags, titles) and the tool descriptions rendered
  for that version, so editing one release's row changes only the cells on it;
* ``mcp`` from a build: the build tooling and the build's spec (a ``path`` build: its files);
* ``code``: the sandbox; ``datagouv-cli``: the emulated CLI; ``web_search``: the web tools;
* anything that reads the catalogue (every capability): the twin's catalogue and the front.

A cell without tools depends on the shared code only. :func:`cell_code_fingerprint` is both
the code part of the agent-run cache key and the code part of the cell's data version in
Dagster (``defs/versions.py``): what reruns is exactly what shows as stale.
:func:`stage_code_version` gives the other stages' Dagster code versions: their closure plus the
project files that steer them (the judge configuration ``judge.yml`` for the stages that ask the
judge, the calibration labels for the calibration), so editing a prompt, the judge or a label
stales the stage as an edit to its code would.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

import grimp

from datagouv_eval_pipeline.base import project_files
from datagouv_eval_pipeline.core.benchmark import Cell

_PACKAGE = project_files.PACKAGE_DIR
_NAME = _PACKAGE.name
_DATA_SUFFIXES = frozenset({".yml", ".yaml", ".md", ".json"})

# Entry packages and modules, relative to the package (a package stands for all its modules).
# The toolsets are their own parts: they leave the shared closure even where the runner
# imports them, so editing the sandbox reruns only the cells that offer code.
_TOOLSETS: dict[str, tuple[str, ...]] = {
    "code": ("world.sandbox",),
    "datagouv-cli": ("world.datagouv_cli",),
    "web_search": ("pipeline.agents.web",),
}
_CATALOGUE = ("world.api", "world.catalogue", "world.mcp", "world.front")
_MCP = ("world.mcp",)
_MCP_PER_VERSION = ("world.mcp.versions", "world.mcp.descriptions")
_BUILDS = ("world.mcp_builds",)
_SHARED = ("pipeline.agents", "world.replay", "core.benchmark", "core.traces")
_NOT_SHARED = (*(n for names in _TOOLSETS.values() for n in names), *_CATALOGUE, *_BUILDS)

Stage = Literal["action_mappings", "judge_scores", "judge_calibration"]
_STAGES: dict[Stage, tuple[str, ...]] = {
    # The mapper classifies with the judge what its rules leave undecided.
    "action_mappings": ("core.semantic", "core.traces", "core.judges"),
    "judge_scores": ("core.judges", "core.metrics"),
    "judge_calibration": ("core.judges",),
}


@functools.cache
def _graph() -> grimp.ImportGraph:
    return grimp.build_graph(_NAME, cache_dir=None)


def _modules_under(names: Iterable[str]) -> set[str]:
    modules = _graph().modules
    found: set[str] = set()
    for name in names:
        dotted = f"{_NAME}.{name}"
        found.update(m for m in modules if m == dotted or m.startswith(f"{dotted}."))
    return found


@functools.cache
def import_closure(roots: tuple[str, ...], excluded: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The package's modules that ``roots`` are made of or import, transitively.

    Args:
        roots: Packages or modules, relative to the package (``"judges"``, ``"traces"``).
        excluded: Packages or modules left out of the roots and of the result (their own
            imports stay in when a root imports them).

    Returns:
        Dotted module names, sorted.
    """
    graph = _graph()
    skip = _modules_under(excluded)
    found: set[str] = set()
    for module in _modules_under(roots) - skip:
        found.add(module)
        found.update(graph.find_upstream_modules(module))
    # Importing a module runs its parent packages' __init__ first.
    parents = {m.rsplit(".", i)[0] for m in found for i in range(1, m.count("."))}
    return tuple(sorted(m for m in (found | parents) - skip if m.startswith(f"{_NAME}.")))


def _module_file(module: str) -> Path:
    path = _PACKAGE.joinpath(*module.split(".")[1:])
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def _data_files(directory: Path) -> list[Path]:
    """The non-Python files a package directory keeps, its non-package subfolders included."""
    found: list[Path] = []
    for path in sorted(directory.iterdir()):
        if path.is_dir() and not (path / "__init__.py").exists() and path.name != "__pycache__":
            found.extend(_data_files(path))
        elif path.is_file() and path.suffix in _DATA_SUFFIXES:
            found.append(path)
    return found


def _digest(paths: Iterable[Path], base: Path = _PACKAGE) -> str:
    digest = hashlib.sha256()
    for path in paths:
        digest.update(str(path.relative_to(base)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


@functools.cache
def closure_fingerprint(roots: tuple[str, ...], excluded: tuple[str, ...] = ()) -> str:
    """sha256 of the sources of :func:`import_closure` and the data files beside them."""
    files = [_module_file(m) for m in import_closure(roots, excluded)]
    directories = sorted({f.parent for f in files})
    data = [f for d in directories for f in _data_files(d)]
    return _digest(sorted({*files, *data}))


def shared_run_code() -> str:
    """sha256 of the code every cell's runs share (the ``agent_runs`` code version)."""
    return closure_fingerprint(_SHARED, _NOT_SHARED)


def _stage_files(stage: Stage) -> list[Path]:
    """The project files (not code) that steer a stage, those that exist, in a fixed order."""
    # Imported here: the judges' modules are only needed by the stages after the agent runs.
    from datagouv_eval_pipeline.core.benchmark import BENCHMARK_CONFIG_DIR
    from datagouv_eval_pipeline.core.judges import CALIBRATION_DIR, JUDGE_FILE, calibration_files

    if stage == "judge_calibration":
        files = calibration_files([CALIBRATION_DIR]) if CALIBRATION_DIR.is_dir() else []
    else:
        # The judge scores, and classifies what the mapper's rules leave undecided.
        files = [BENCHMARK_CONFIG_DIR / JUDGE_FILE]
    return [path for path in files if path.is_file()]


def stage_code_version(stage: Stage) -> str:
    """sha256 of what a stage after the agent runs depends on (its Dagster code version).

    The import closure of its code (:func:`closure_fingerprint`) and the project files that
    steer it: ``judge.yml`` for ``action_mappings`` and ``judge_scores``, the calibration
    labels for ``judge_calibration``.
    """
    digest = hashlib.sha256(closure_fingerprint(_STAGES[stage]).encode())
    for path in _stage_files(stage):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def mcp_emulation_fingerprint(version: str) -> str:
    """sha256 of what the twin's emulation of one MCP release is made of.

    Its shared code (every module of ``twin/mcp`` and what it imports, but the version table
    and the description templates) plus the release's own row and the descriptions rendered
    for it: an edit to one release's row changes only that release's fingerprint.
    """
    # Imported here: the version table is the twin's, and only cells on the twin need it.
    from datagouv_eval_pipeline.world.mcp import VERSIONS, describe

    digest = hashlib.sha256(closure_fingerprint(_MCP, _MCP_PER_VERSION).encode())
    spec = VERSIONS.get(version)
    digest.update(repr(spec).encode())
    if spec is not None:
        for signature in spec.tools:
            digest.update(describe(signature, spec).encode())
    return digest.hexdigest()


def _build_fingerprint(cell: Cell) -> str:
    digest = hashlib.sha256(closure_fingerprint(_BUILDS).encode())
    build = cell.mcp_build
    if build is not None:
        digest.update(build.spec.encode())
        if build.path is not None and Path(build.path).is_dir():
            root = Path(build.path)
            files = [p for p in sorted(root.rglob("*.py")) if ".venv" not in p.parts]
            digest.update(_digest(files, root).encode())
    return digest.hexdigest()


def toolset_fingerprints(cell: Cell) -> dict[str, str]:
    """The fingerprint of each toolset part a cell's runs reach, by part name (sorted)."""
    parts: dict[str, str] = {}
    capabilities = set(cell.capabilities)
    if capabilities:
        parts["catalogue"] = closure_fingerprint(_CATALOGUE, _MCP)
    if "mcp" in capabilities and cell.mcp_version is not None:
        if cell.mcp_build is not None:
            parts["mcp"] = _build_fingerprint(cell)
        elif cell.mcp_source in (None, "twin"):
            parts["mcp"] = mcp_emulation_fingerprint(cell.mcp_version)
        else:  # a deployed server: its URL is in the cell record, its code is not ours
            parts["mcp"] = hashlib.sha256(str(cell.mcp_url).encode()).hexdigest()
    for capability, names in _TOOLSETS.items():
        if capability in capabilities:
            parts[capability] = closure_fingerprint(names)
    return dict(sorted(parts.items()))


def toolset_version(cell: Cell, build: str = "") -> str:
    """sha256 of the toolsets a cell's runs reach (no shared agent code), and its build's code.

    The part of the world the twin and the toolsets make: a change here means the runs met
    another world under the same cell key (the regression gate does not compare them).
    """
    digest = hashlib.sha256(repr(sorted(toolset_fingerprints(cell).items())).encode())
    digest.update(build.encode())
    return digest.hexdigest()


def cell_code_fingerprint(cell: Cell) -> str:
    """sha256 of every line of code a cell's runs depend on (shared code and its toolsets)."""
    digest = hashlib.sha256(shared_run_code().encode())
    for name, value in toolset_fingerprints(cell).items():
        digest.update(f"{name}={value}".encode())
    return digest.hexdigest()
