"""The code version stamped on every score: package version and, when available, the git commit.

Outside a git checkout (an installed wheel) there is no commit and no work tree: the version is
the package version alone (or ``$DATAGOUV_EVAL_GIT_SHA``), and whether the tree was dirty is
unknown (None), never guessed from whatever repository happens to contain the environment.
"""

from __future__ import annotations

import functools
import os
from importlib import metadata
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from datagouv_eval_pipeline.base import project_files

_PACKAGE = "datagouv-eval-pipeline"
_REPO_ROOT = project_files.checkout_root()
CODE_VERSION_ENV = "DATAGOUV_EVAL_GIT_SHA"
"""Overrides the git commit (for installs without a ``.git`` directory, e.g. container images)."""


class CodeVersion(BaseModel):
    """Which code produced a result (stored in every score's provenance)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    package: str | None
    """The installed package version, or None when it is not installed."""
    git_sha: str | None
    """The commit of the work tree, or None outside a git checkout (an installed wheel, unless
    ``$DATAGOUV_EVAL_GIT_SHA`` says) or before the first commit."""

    @property
    def label(self) -> str | None:
        """The commit, else the package version: a result row's ``code_version``.

        This names the code for provenance (a commit can be checked out again). What makes a
        stage stale is another thing, the digest of its import closure
        (``experiment.fingerprints``).
        """
        return self.git_sha or self.package


@functools.cache
def code_version() -> CodeVersion:
    """Return the code version, read once per process.

    The git commit is read from ``.git`` files directly (no subprocess), so scoring stays cheap and
    works where git is not installed.
    """
    try:
        package: str | None = metadata.version(_PACKAGE)
    except metadata.PackageNotFoundError:
        package = None
    sha = os.environ.get(CODE_VERSION_ENV)
    if not sha and _REPO_ROOT is not None:
        sha = _read_git_sha(_REPO_ROOT / ".git")
    return CodeVersion(package=package, git_sha=sha)


def _git_dirs(dot_git: Path) -> tuple[Path, Path]:
    """Return the checkout's own git directory (HEAD) and the common one (refs).

    In a linked worktree (``git worktree add``) ``.git`` is a file naming the worktree's git
    directory, whose ``commondir`` names the main repository's, where branches live.
    """
    if not dot_git.is_file():
        return dot_git, dot_git
    try:
        pointer = dot_git.read_text(encoding="utf-8").strip()
    except OSError:
        return dot_git, dot_git
    own = Path(pointer.removeprefix("gitdir:").strip())
    if not own.is_absolute():
        own = dot_git.parent / own
    try:
        common = Path((own / "commondir").read_text(encoding="utf-8").strip())
    except OSError:
        return own, own
    return own, common if common.is_absolute() else own / common


def _read_git_sha(dot_git: Path) -> str | None:
    own_dir, git_dir = _git_dirs(dot_git)
    try:
        head = (own_dir / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if not head.startswith("ref:"):
        return head or None
    ref = head.removeprefix("ref:").strip()
    try:
        return (git_dir / ref).read_text(encoding="utf-8").strip() or None
    except OSError:
        pass
    try:
        packed = (git_dir / "packed-refs").read_text(encoding="utf-8")
    except OSError:
        return None
    for line in packed.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1] == ref:
            return parts[0]
    return None


def working_tree_dirty() -> bool | None:
    """Whether tracked files of the checkout have uncommitted changes; None when unknown.

    Asks ``git`` (reading the index by hand is not worth it); None without git or outside a
    checkout. Called once per experiment run, not per score.
    """
    import subprocess

    if _REPO_ROOT is None:
        return None
    try:
        completed = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=_REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if completed.returncode != 0:
        return None
    return bool(completed.stdout.strip())
