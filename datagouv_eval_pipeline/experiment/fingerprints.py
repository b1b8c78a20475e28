"""The code each cell's runs depend on, so an edit reruns and stales only the cells it touches.

A cell's runs depend on code every cell shares (the agent runner, the baselines, the benchmark
configuration code, the trace format) and on the code of the toolsets its capabilities reach:

* ``mcp`` served by the twin: the emulation's shared code, plus the cell's own *version row*
  (its ``VersionSpec``: tool signatures, behaviour flags, titles) and the tool descriptions
  rendered for that version, so editing one release's row changes only the cells on it;
* ``mcp`` from a build: the build tooling and the build's spec (a ``path`` build: its files);
* ``code``: the sandbox; ``datagouv-cli``: the emulated CLI; ``web_search``: the web tools;
* anything that reads the catalogue (every capability): the twin's catalogue and the front.

A cell without tools depends on the shared code only. :func:`cell_code_fingerprint` is both
the code part of the agent-run cache key and the code part of the cell's data version in
Dagster (``defs/versions.py``): what reruns is exactly what shows as stale.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable
from pathlib import Path

from datagouv_eval_pipeline import project_files
from datagouv_eval_pipeline.benchmark.cells import Cell

_PACKAGE = project_files.PACKAGE_DIR
_SUFFIXES = frozenset({".py", ".yml", ".yaml", ".md", ".json"})

# Relative to the package; a directory stands for its source files, minus the excluded ones.
# replay/ was shared while it lived under agents/: the provider stand-in a replayed run talks
# to, so an edit to it still reruns every cell.
_SHARED = ("agents", "replay", "benchmark", "traces.py")
_SHARED_EXCLUDED = ("agents/web.py",)
_CATALOGUE = ("twin", "front")
_CATALOGUE_EXCLUDED = ("twin/mcp",)
_MCP_SHARED = ("twin/mcp",)
_MCP_PER_VERSION = ("twin/mcp/versions.py", "twin/mcp/descriptions.py")
_TOOLSETS: dict[str, tuple[str, ...]] = {
    "code": ("sandbox",),
    "datagouv-cli": ("datagouv_cli",),
    "web_search": ("agents/web.py",),
}


def _files(names: Iterable[str], excluded: Iterable[str] = ()) -> list[Path]:
    skip = [_PACKAGE / name for name in excluded]
    found: list[Path] = []
    for name in names:
        root = _PACKAGE / name
        candidates = sorted(root.rglob("*")) if root.is_dir() else [root]
        for path in candidates:
            if path.suffix not in _SUFFIXES or not path.is_file():
                continue
            if any(path == s or s in path.parents for s in skip):
                continue
            found.append(path)
    return found


def _digest(paths: Iterable[Path], base: Path = _PACKAGE) -> str:
    digest = hashlib.sha256()
    for path in paths:
        digest.update(str(path.relative_to(base)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


@functools.cache
def _sources(names: tuple[str, ...], excluded: tuple[str, ...] = ()) -> str:
    return _digest(_files(names, excluded))


def shared_run_code() -> str:
    """sha256 of the code every cell's runs share (the ``agent_runs`` code version)."""
    return _sources(_SHARED, _SHARED_EXCLUDED)


def mcp_emulation_fingerprint(version: str) -> str:
    """sha256 of what the twin's emulation of one MCP release is made of.

    Its shared code (every module of ``twin/mcp`` but the version table and the description
    templates) plus the release's own row and the descriptions rendered for it: an edit to
    one release's row changes only that release's fingerprint.
    """
    # Imported here: the version table is the twin's, and only cells on the twin need it.
    from datagouv_eval_pipeline.twin.mcp.descriptions import describe
    from datagouv_eval_pipeline.twin.mcp.versions import VERSIONS

    digest = hashlib.sha256(_sources(_MCP_SHARED, _MCP_PER_VERSION).encode())
    spec = VERSIONS.get(version)
    digest.update(repr(spec).encode())
    if spec is not None:
        for signature in spec.tools:
            digest.update(describe(signature, spec).encode())
    return digest.hexdigest()


def _build_fingerprint(cell: Cell) -> str:
    digest = hashlib.sha256(_sources(("mcp_builds",)).encode())
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
        parts["catalogue"] = _sources(_CATALOGUE, _CATALOGUE_EXCLUDED)
    if "mcp" in capabilities and cell.mcp_version is not None:
        if cell.mcp_build is not None:
            parts["mcp"] = _build_fingerprint(cell)
        elif cell.mcp_source in (None, "twin"):
            parts["mcp"] = mcp_emulation_fingerprint(cell.mcp_version)
        else:  # a deployed server: its URL is in the cell record, its code is not ours
            parts["mcp"] = hashlib.sha256(str(cell.mcp_url).encode()).hexdigest()
    for capability, names in _TOOLSETS.items():
        if capability in capabilities:
            parts[capability] = _sources(names)
    return dict(sorted(parts.items()))


def cell_code_fingerprint(cell: Cell) -> str:
    """sha256 of every line of code a cell's runs depend on (shared code and its toolsets)."""
    digest = hashlib.sha256(shared_run_code().encode())
    for name, value in toolset_fingerprints(cell).items():
        digest.update(f"{name}={value}".encode())
    return digest.hexdigest()
