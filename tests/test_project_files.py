"""Where project files are found: the checkout's directories, or the wheel's packaged copies."""

from __future__ import annotations

from pathlib import Path

import pytest

from datagouv_eval_pipeline.base import project_files
from datagouv_eval_pipeline.base.project_files import (
    DBT_DIR_ENV,
    PACKAGED_DIRNAME,
    checkout_root,
    dbt_project_dir,
    packaged_root,
    project_file,
    work_dir,
)

REPO = Path(__file__).resolve().parents[1]


def _fake_wheel(tmp_path: Path) -> Path:
    """A site-packages with the package and its ``_project/`` copies, as the wheel installs it."""
    package = tmp_path / "site-packages" / "datagouv_eval_pipeline"
    dbt = package / PACKAGED_DIRNAME / "dbt_metrics"
    (dbt / "models").mkdir(parents=True)
    (dbt / "dbt_project.yml").write_text("name: dbt_metrics\n", encoding="utf-8")
    (dbt / "models" / "a.sql").write_text("select 1\n", encoding="utf-8")
    (package / PACKAGED_DIRNAME / "task_specs").mkdir()
    return package


def test_this_checkout_reads_the_repository_directories() -> None:
    assert checkout_root() == REPO
    assert packaged_root() is None
    assert project_files.task_specs_dir() == REPO / "task_specs"
    assert project_files.snapshots_dir() == REPO / "snapshots"
    assert project_files.trace_schema_path() == REPO / "docs" / "trace.schema.json"
    assert project_files.sandbox_dockerfile() == REPO / "docker" / "sandbox" / "Dockerfile"
    assert project_files.workspace_file() == REPO / "workspace.yaml"
    assert project_files.dagster_home_dir() == project_files.dagster_config_dir()
    assert project_files.data_dir() == REPO / "data"
    assert dbt_project_dir() == REPO / "dbt_metrics"


def test_every_shipped_kind_exists_in_the_checkout() -> None:
    for relative in (
        project_files.TASK_SPECS,
        project_files.SNAPSHOTS,
        project_files.DBT_PROJECT,
        project_files.TRACE_SCHEMA,
        project_files.EXAMPLE_TRACES,
        project_files.SANDBOX_DOCKERFILE,
        project_files.DAGSTER_CONFIG,
        project_files.WORKSPACE,  # read from the checkout only
    ):
        assert (REPO / relative).exists(), relative


def test_a_wheel_reads_its_packaged_copies(tmp_path: Path) -> None:
    package = _fake_wheel(tmp_path)
    assert checkout_root(package) is None
    assert packaged_root(package) == package / PACKAGED_DIRNAME
    assert project_file("task_specs", package) == package / PACKAGED_DIRNAME / "task_specs"
    assert project_files.workspace_file(package) is None


def test_a_wheel_writes_data_in_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = _fake_wheel(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert work_dir(package) == tmp_path


def test_a_wheel_runs_dbt_in_one_writable_copy_per_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = _fake_wheel(tmp_path)
    monkeypatch.setenv(DBT_DIR_ENV, str(tmp_path / "cache"))
    first = dbt_project_dir(package)
    assert first.parent == tmp_path / "cache"
    assert (first / "models" / "a.sql").read_text(encoding="utf-8") == "select 1\n"
    (first / "target").mkdir()  # what dbt writes stays with the copy
    assert dbt_project_dir(package) == first
    (package / PACKAGED_DIRNAME / "dbt_metrics" / "models" / "a.sql").write_text("select 2\n")
    second = dbt_project_dir(package)
    assert second != first
    assert (second / "models" / "a.sql").read_text(encoding="utf-8") == "select 2\n"
    assert not list((tmp_path / "cache").glob(".copy-*"))
