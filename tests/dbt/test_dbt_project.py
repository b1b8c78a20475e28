"""The dbt project Dagster loads: a fresh clone gets its manifest, the venv's dbt is used."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from dagster_dbt import DbtProject

from datagouv_eval_pipeline.defs.dbt_project import (
    DBT_EXECUTABLE,
    DBT_PROJECT_DIR,
    ensure_manifest,
)
from tests.dbt.dbt_helpers import WAREHOUSE_TABLES


def test_the_dbt_executable_is_the_venvs_even_without_path() -> None:
    assert Path(DBT_EXECUTABLE) == Path(sys.executable).parent / "dbt"


def test_a_fresh_copy_without_target_gets_its_manifest_once(tmp_path: Path) -> None:
    fresh = tmp_path / "dbt_metrics"
    shutil.copytree(DBT_PROJECT_DIR, fresh, ignore=shutil.ignore_patterns("target", "logs"))
    project = DbtProject(project_dir=fresh)
    assert not project.manifest_path.exists()

    path = ensure_manifest(project)

    assert path == project.manifest_path
    manifest = json.loads(path.read_text(encoding="utf-8"))
    models = sorted(n["name"] for n in manifest["nodes"].values() if n["resource_type"] == "model")
    assert len(models) == 23 and {
        "cost_per_correct_answer",
        "regressions",
        "regression_gate",
    } <= set(models)
    assert sorted(s["name"] for s in manifest["sources"].values()) == WAREHOUSE_TABLES
    # the scratch parse directory is gone; a second call reuses the manifest
    assert sorted(p.name for p in path.parent.iterdir()) == [
        "manifest.json",
        "partial_parse.msgpack",
    ]
    written = path.stat().st_mtime_ns
    assert ensure_manifest(project) == path
    assert path.stat().st_mtime_ns == written


def _models(path: Path) -> set[str]:
    manifest = json.loads(path.read_text(encoding="utf-8"))
    return {n["name"] for n in manifest["nodes"].values() if n["resource_type"] == "model"}


def _touch_after(path: Path, manifest: Path) -> None:
    # A second after the parse: the file system's clock may not tick between two writes.
    later = manifest.stat().st_mtime_ns + 1_000_000_000
    os.utime(path, ns=(later, later))


def test_the_manifest_is_parsed_again_only_when_a_model_is_added_or_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh = tmp_path / "dbt_metrics"
    shutil.copytree(DBT_PROJECT_DIR, fresh, ignore=shutil.ignore_patterns("logs"))
    project = DbtProject(project_dir=fresh)
    path = ensure_manifest(project)
    written = path.stat().st_mtime_ns
    # Under `dagster dev` (every reload, every run worker) a manifest that is current stays.
    monkeypatch.setenv("DAGSTER_IS_DEV_CLI", "1")
    assert ensure_manifest(project) == path
    assert path.stat().st_mtime_ns == written

    added = fresh / "models" / "marts" / "one_more.sql"
    added.write_text("select 1 as one\n", encoding="utf-8")
    _touch_after(added, path)
    assert "one_more" in _models(ensure_manifest(project))

    added.unlink()
    _touch_after(added.parent, path)
    assert "one_more" not in _models(ensure_manifest(project))
