"""Install a build of the real MCP server into its own environment, cached per build.

A build (``package``, ``git`` or ``path``, see
:class:`~datagouv_eval_pipeline.core.benchmark.config.
McpBuild`) gets a directory of its own under the builds cache, named by a hash of what it is
made of, holding a uv virtual environment. Its dependencies (``mcp<2`` for the releases of
2025-2026) never meet the pipeline's own environment. A finished install writes ``build.json``
last, so a directory without it is an interrupted install and is redone; concurrent installs of
one build wait for each other on a file lock.

* ``package: NAME==VERSION``: ``uv pip install`` of the pinned package; the server's code is
  the distribution's files in the environment.
* ``git: URL@REF``: cloned into the build's directory (needs the network), then as ``path``.
* ``path: DIR``: the checkout's dependencies are installed (from its ``uv.lock`` when it has
  one, else from ``pyproject.toml``) and its code runs in place, so an edit counts at the next
  run without reinstalling; the environment is redone only when the dependency files change.

The server is started as the official repository runs it: ``python main.py`` in the directory
holding ``main.py`` (see :mod:`.process`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from datagouv_eval_pipeline.base import project_files
from datagouv_eval_pipeline.base.filelock import exclusive_lock
from datagouv_eval_pipeline.core.benchmark import McpBuild

BUILDS_ENV = "DATAGOUV_EVAL_MCP_BUILDS"
"""Environment variable overriding the builds cache directory."""
DEFAULT_BUILDS_DIR = project_files.data_dir() / "mcp_builds"
"""The default builds cache (git-ignored, next to the run store)."""

ENTRY_SCRIPT = "main.py"
"""The server's entry point, at the root of its code (as in the official repository)."""
MARKER = "build.json"
DEPENDENCY_FILES = ("pyproject.toml", "uv.lock")
_LAYOUT = 1
"""Bumped when the layout of a build directory changes, so old ones are rebuilt."""
_SKIPPED_DIRS = frozenset({".git", ".venv", "venv", "__pycache__", "tests", "node_modules"})
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


class BuildError(RuntimeError):
    """A build cannot be installed or started; the message says which build and why."""


def default_builds_dir() -> Path:
    """The builds cache: ``$DATAGOUV_EVAL_MCP_BUILDS`` or ``data/mcp_builds``."""
    value = os.environ.get(BUILDS_ENV)
    return Path(value).expanduser().resolve() if value else DEFAULT_BUILDS_DIR


@dataclass(frozen=True)
class InstalledBuild:
    """A build ready to start.

    Attributes:
        build: The build.
        root: Its directory in the cache.
        python: The environment's interpreter.
        server_dir: The directory holding ``main.py`` (the checkout, or site-packages).
        code_digest: sha256 of the server's code (its ``.py`` files and dependency files), so
            results of an edited checkout are never mistaken for the old ones.
        revision: The commit of a ``git`` build (None otherwise).
        installed: False when the environment was found in the cache.
        seconds: Time spent installing (0 when cached).
    """

    build: McpBuild
    root: Path
    python: Path
    server_dir: Path
    code_digest: str
    revision: str | None
    installed: bool
    seconds: float


def uv_command() -> list[str]:
    """How uv is run: ``$UV`` (set by ``uv run``), ``uv`` on the PATH, or ``python3 -m uv``.

    Raises:
        BuildError: uv is nowhere to be found.
    """
    for candidate in (os.environ.get("UV"), shutil.which("uv")):
        if candidate and Path(candidate).is_file():
            return [candidate]
    python = shutil.which("python3") or sys.executable
    probe = subprocess.run([python, "-m", "uv", "--version"], capture_output=True, check=False)
    if probe.returncode == 0:
        return [python, "-m", "uv"]
    raise BuildError("a build is installed with uv, which is not installed: pip install uv")


def build_id(build: McpBuild) -> str:
    """The cache name of a build: what it is made of, hashed (a path also by its dependencies)."""
    parts: dict[str, Any] = {"layout": _LAYOUT, "spec": build.spec, "python": _python_of(build)}
    if build.path is not None:
        root = Path(build.path)
        parts["path"] = str(root)
        parts["deps"] = {
            name: _file_digest(root / name) for name in DEPENDENCY_FILES if (root / name).is_file()
        }
    text = json.dumps(parts, sort_keys=True)
    readable = re.sub(r"[^a-z0-9]+", "-", build.spec.lower()).strip("-")[:40]
    return f"{readable}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"


def install_build(
    build: McpBuild, cache_dir: Path | None = None, *, uv: Sequence[str] | None = None
) -> InstalledBuild:
    """Install ``build`` (or find it in the cache) and return how to start it.

    Args:
        build: The build; a ``path`` must be absolute (cells resolve it).
        cache_dir: The builds cache (default: :func:`default_builds_dir`).
        uv: The uv command (default: :func:`uv_command`).

    Raises:
        BuildError: The checkout is missing, uv or git failed (with their output), or the
            code has no ``main.py``.
    """
    cache_dir = cache_dir or default_builds_dir()
    uv = list(uv or uv_command())
    root = cache_dir / build_id(build)
    cache_dir.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(cache_dir / f"{root.name}.lock"):
        started = time.perf_counter()
        marker = _read_marker(root)
        installed = marker is None
        if marker is None:
            marker = _install(build, root, uv)
        elif build.git is not None and not _COMMIT.match(_git_ref(build.git)[1]):
            # A branch or tag may have moved: fetch it again (needs the network).
            marker = {**marker, "revision": _checkout(build.git, root / "src")}
        server_dir = Path(marker["server_dir"])
        digest = marker.get("code_digest") or code_digest(server_dir)
        return InstalledBuild(
            build=build,
            root=root,
            python=Path(marker["python"]),
            server_dir=server_dir,
            code_digest=digest,
            revision=marker.get("revision"),
            installed=installed,
            seconds=time.perf_counter() - started if installed else 0.0,
        )


def current_code_digest(build: McpBuild, cache_dir: Path | None = None) -> str | None:
    """The code digest a start of ``build`` would report now, without installing or starting it.

    A ``path`` build is hashed in place (its checkout may have changed since the last run); a
    ``package`` or ``git`` build is read from its cache entry. Used by the dry run (is the
    cell's agent-run cache still valid?) and the sensor of new builds.

    Args:
        build: The build; a ``path`` must be absolute (cells resolve it).
        cache_dir: The builds cache (default: :func:`default_builds_dir`).

    Returns:
        The digest, or None when the build is not installed yet (or its checkout is missing).
    """
    if build.path is not None:
        source = Path(build.path)
        return code_digest(source) if source.is_dir() else None
    marker = _read_marker((cache_dir or default_builds_dir()) / build_id(build))
    if marker is None:
        return None
    known = marker.get("code_digest")
    if isinstance(known, str) and known:
        return known
    server_dir = Path(str(marker.get("server_dir", "")))
    return code_digest(server_dir) if server_dir.is_dir() else None


def code_digest(server_dir: Path) -> str:
    """sha256 over the server's ``.py`` files and dependency files (tests and caches skipped)."""
    digest = hashlib.sha256()
    for path in sorted(_code_files(server_dir)):
        digest.update(path.relative_to(server_dir).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _code_files(server_dir: Path) -> Iterator[Path]:
    for directory, dirs, files in os.walk(server_dir):
        dirs[:] = [d for d in dirs if d not in _SKIPPED_DIRS and not d.startswith(".")]
        for name in files:
            if name.endswith(".py") or name in DEPENDENCY_FILES:
                yield Path(directory) / name


def _install(build: McpBuild, root: Path, uv: list[str]) -> dict[str, Any]:
    if root.exists():
        shutil.rmtree(root)  # an interrupted install
    root.mkdir(parents=True)
    try:
        return _install_into(build, root, uv)
    except BaseException:
        # Leave no half-made environment behind (Ctrl-C included).
        shutil.rmtree(root, ignore_errors=True)
        raise


def _install_into(build: McpBuild, root: Path, uv: list[str]) -> dict[str, Any]:
    venv = root / "venv"
    _run([*uv, "venv", "--quiet", "--python", _python_of(build), str(venv)], build, "create")
    python = venv / "bin" / "python"
    revision: str | None = None
    package_digest: str | None = None
    if build.package is not None:
        _run(
            [
                *uv,
                "pip",
                "install",
                "--quiet",
                "--compile-bytecode",
                "--python",
                str(python),
                build.package,
            ],
            build,
        )
        server_dir, package_digest = _package_code(python, build)
    else:
        if build.git is not None:
            source = root / "src"
            revision = _checkout(build.git, source)
        else:
            assert build.path is not None  # one origin, checked by the model
            source = Path(build.path)
            if not source.is_dir():
                raise BuildError(f"build {build.spec}: no such directory {source}")
        _install_dependencies(source, python, build, root, uv)
        _install_project_metadata(source, python, build, uv)
        server_dir = source
    if not (server_dir / ENTRY_SCRIPT).is_file():
        raise BuildError(
            f"build {build.spec}: no {ENTRY_SCRIPT} in {server_dir}; the server is started "
            f"as `python {ENTRY_SCRIPT}` at the root of its code, as the official one is"
        )
    marker = {
        "spec": build.spec,
        "python": str(python),
        "server_dir": str(server_dir),
        # A package's code never changes; a checkout's is hashed at every start.
        "code_digest": package_digest,
        "revision": revision,
        "installed_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    temporary = root / f"{MARKER}.tmp"
    temporary.write_text(json.dumps(marker, indent=2), encoding="utf-8")
    temporary.replace(root / MARKER)
    return marker


def _install_dependencies(
    source: Path, python: Path, build: McpBuild, root: Path, uv: list[str]
) -> None:
    if not (source / "pyproject.toml").is_file():
        raise BuildError(f"build {build.spec}: {source} has no pyproject.toml")
    requirements = str(source / "pyproject.toml")
    if (source / "uv.lock").is_file():
        # The checkout's own lock: the versions its developers test with.
        locked = root / "requirements.txt"
        export = [*uv, "export", "--quiet", "--frozen", "--no-dev", "--no-emit-project"]
        export += ["--no-hashes", "--directory", str(source), "--output-file", str(locked)]
        _run(export, build, "read the lock of")
        requirements = str(locked)
    _run(
        [
            *uv,
            "pip",
            "install",
            "--quiet",
            "--compile-bytecode",
            "--python",
            str(python),
            "-r",
            requirements,
        ],
        build,
    )


def _install_project_metadata(source: Path, python: Path, build: McpBuild, uv: list[str]) -> None:
    # Releases from 0.2.19 on read their own version from the installed distribution
    # (`importlib.metadata.version("datagouv-mcp")` for the User-Agent), as `uv sync` provides
    # in the official repository. The code still runs in place from the checkout: `main.py`'s
    # directory comes first on sys.path.
    _run(
        [*uv, "pip", "install", "--quiet", "--no-deps", "--python", str(python), str(source)],
        build,
        "install the project of",
    )


_PACKAGE_CODE = r"""
import hashlib, json, sys
from importlib.metadata import distribution
dist = distribution(sys.argv[1])
files = [f for f in dist.files or () if f.suffix == ".py" and ".." not in f.parts]
digest = hashlib.sha256()
for f in sorted(files, key=str):
    digest.update(f.as_posix().encode() + b"\0" + f.locate().read_bytes())
entry = [f for f in files if str(f) == sys.argv[2]]
print(json.dumps({"server_dir": str(entry[0].locate().parent) if entry else None,
                  "digest": digest.hexdigest()}))
"""


def _package_code(python: Path, build: McpBuild) -> tuple[Path, str]:
    """Where the installed distribution's ``main.py`` is, and a digest of its code."""
    assert build.package is not None
    name = build.package.split("==", 1)[0]
    output = _run([str(python), "-c", _PACKAGE_CODE, name, ENTRY_SCRIPT], build, "inspect")
    found = json.loads(output.strip().splitlines()[-1])
    if found["server_dir"] is None:
        raise BuildError(
            f"build {build.spec}: the package installs no top-level {ENTRY_SCRIPT}; the server "
            f"is started as `python {ENTRY_SCRIPT}`, as the official repository runs it"
        )
    return Path(found["server_dir"]), str(found["digest"])


def _git_ref(spec: str) -> tuple[str, str]:
    url, _, ref = spec.rpartition("@")
    return url, ref


def _checkout(spec: str, source: Path) -> str:
    """Clone (or fetch) ``URL@REF`` into ``source`` and return the commit checked out."""
    url, ref = _git_ref(spec)
    what = f"git:{spec}"
    git = shutil.which("git")
    if git is None:
        raise BuildError(f"build {what}: git is not installed")
    if not (source / ".git").is_dir():
        _git([git, "init", "--quiet", str(source)], what)
        _git([git, "-C", str(source), "remote", "add", "origin", url], what)
    _git([git, "-C", str(source), "fetch", "--quiet", "--depth", "1", "origin", ref], what)
    _git([git, "-C", str(source), "checkout", "--quiet", "--force", "FETCH_HEAD"], what)
    return _git([git, "-C", str(source), "rev-parse", "HEAD"], what).strip()


def _git(command: list[str], what: str) -> str:
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise BuildError(f"build {what}: {' '.join(command[1:3])} failed: {error}") from None
    if result.returncode != 0:
        raise BuildError(
            f"build {what}: `git {' '.join(command[1:])}` failed (a git build needs the "
            f"network to reach the repository): {_tail(result.stderr or result.stdout)}"
        )
    return result.stdout


def _run(command: list[str], build: McpBuild, verb: str = "install") -> str:
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise BuildError(f"cannot {verb} the build {build.spec}: {error}") from None
    if result.returncode != 0:
        program = " ".join(Path(part).name for part in command[:2])
        raise BuildError(
            f"cannot {verb} the build {build.spec} ({program} exited with {result.returncode}): "
            f"{_tail(result.stderr or result.stdout)}"
        )
    return result.stdout


def _tail(text: str, lines: int = 12) -> str:
    return "\n".join(text.strip().splitlines()[-lines:]) or "(no output)"


def _python_of(build: McpBuild) -> str:
    return build.python or sys.executable


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _read_marker(root: Path) -> dict[str, Any] | None:
    try:
        marker: dict[str, Any] = json.loads((root / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not Path(marker.get("python", "")).is_file():
        return None  # the environment was removed under the marker
    return marker
