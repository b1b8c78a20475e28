"""The code version outside a checkout: the package version, no commit, dirtiness unknown."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from datagouv_eval_pipeline.metrics import provenance
from datagouv_eval_pipeline.metrics.provenance import CODE_VERSION_ENV


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
    assert provenance.working_tree_dirty() is None


@pytest.mark.usefixtures("installed_wheel")
def test_outside_a_checkout_the_variable_still_names_the_commit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(CODE_VERSION_ENV, "abc123")
    assert provenance.code_version().git_sha == "abc123"
