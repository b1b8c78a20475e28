"""The code version: in a checkout or a linked worktree the commit; outside, the package alone."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from datagouv_eval_pipeline.core.metrics import provenance
from datagouv_eval_pipeline.core.metrics.provenance import CODE_VERSION_ENV


@pytest.fixture
def installed_wheel(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # What project_files reports for an installed wheel: no checkout root.
    monkeypatch.setattr(provenance, "_REPO_ROOT", None)
    monkeypatch.delenv(CODE_VERSION_ENV, raising=False)
    provenance.code_version.cache_clear()
    yield
    provenance.code_version.cache_clear()


@pytest.mark.usefixtures("installed_wheel")
def test_outside_a_checkout_the_version_is_the_package_alone() -> None:
    version = provenance.code_version()
    assert version.git_sha is None
    assert version.package is not None
    assert version.label == version.package  # what a trace records as its code version
    assert provenance.working_tree_dirty() is None


@pytest.mark.usefixtures("installed_wheel")
def test_outside_a_checkout_the_variable_still_names_the_commit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(CODE_VERSION_ENV, "abc123")
    assert provenance.code_version().git_sha == "abc123"
    assert provenance.code_version().label == "abc123"  # the commit wins over the package


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def test_the_commit_is_read_in_a_checkout_and_in_a_linked_worktree(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "f.txt").write_text("one\n", encoding="utf-8")
    _git(repo, "add", "f.txt")
    _git(repo, "commit", "-q", "-m", "one")
    first = _git(repo, "rev-parse", "HEAD")
    _git(repo, "worktree", "add", "-q", "-b", "side", str(tmp_path / "side"))
    (tmp_path / "side" / "f.txt").write_text("two\n", encoding="utf-8")
    _git(tmp_path / "side", "commit", "-q", "-am", "two")
    second = _git(tmp_path / "side", "rev-parse", "HEAD")
    # Packed refs too: where `git gc` leaves branches.
    _git(repo, "pack-refs", "--all")

    assert provenance._read_git_sha(repo / ".git") == first
    # The worktree's .git is a file; its branch lives in the main repository's refs.
    assert (tmp_path / "side" / ".git").is_file()
    assert provenance._read_git_sha(tmp_path / "side" / ".git") == second != first
