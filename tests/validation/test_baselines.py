"""Baselines are never created silently; a refresh shows its diff and writes only when applied."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import pytest

from datagouv_eval_pipeline.core.tasks.spec import SourceType
from datagouv_eval_pipeline.pipeline.preflight import (
    BaselineStore,
    DiffEntry,
    plan_refresh,
    validate,
)
from datagouv_eval_pipeline.world.catalogue.catalog import CatalogStore
from datagouv_eval_pipeline.world.catalogue.urls import TwinUrls

from .factories import DIAG, DIAG_TABLE, TASKS, TRANSPORTS_TABLE, config

BY_ID = {t.task_id: t for t in TASKS}


def files(directory: Path) -> dict[str, bytes]:
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def test_a_missing_baseline_is_an_error_with_the_refresh_hint(
    twin: TwinUrls, tmp_path: Path
) -> None:
    report = validate([BY_ID["task_0101"], BY_ID["task_0106"]], config(twin, tmp_path))
    (check,) = report.task("task_0101").checks
    assert check.outcome == "error"
    assert f"no baseline for task_0101 dataset {DIAG}" in check.reason
    assert "run `datagouv-eval preflight --refresh`" in check.reason
    # Checks that need no baseline still run, and nothing was written.
    assert report.task("task_0106").status == "ok"
    assert report.quarantined == ["task_0101"]
    assert files(tmp_path) == {}


def test_a_baseline_without_the_field_a_check_needs_is_an_error(
    twin: TwinUrls, baselines: Path, tmp_path: Path
) -> None:
    shutil.copytree(baselines, tmp_path, dirs_exist_ok=True)
    path = BaselineStore(tmp_path).path("task_0107", SourceType.RESOURCE, DIAG_TABLE)
    data = json.loads(path.read_text(encoding="utf-8"))
    del data["columns"]
    data["title"] = "x"
    path.write_text(json.dumps(data), encoding="utf-8")
    (check,) = validate([BY_ID["task_0107"]], config(twin, tmp_path)).task("task_0107").checks
    assert check.outcome == "error"
    assert f"baseline of task_0107 resource {DIAG_TABLE} has no columns" in check.reason


def test_a_malformed_baseline_names_its_file(
    twin: TwinUrls, baselines: Path, tmp_path: Path
) -> None:
    shutil.copytree(baselines, tmp_path, dirs_exist_ok=True)
    path = BaselineStore(tmp_path).path("task_0101", SourceType.DATASET, DIAG)
    path.write_text("{not json", encoding="utf-8")
    (check,) = validate([BY_ID["task_0101"]], config(twin, tmp_path)).task("task_0101").checks
    assert check.outcome == "error"
    assert str(path) in check.reason and "not a readable JSON baseline" in check.reason


def test_refresh_from_scratch_adds_every_baseline_then_is_a_no_op(
    twin: TwinUrls, store: CatalogStore, tmp_path: Path
) -> None:
    plan = plan_refresh(TASKS, config(twin, tmp_path))
    assert files(tmp_path) == {}  # planning writes nothing
    assert plan.errors == []
    assert {c.kind for c in plan.changes} == {"added"}
    # One file per (task, object) whose checks compare with a baseline.
    assert sorted((c.task_id, c.object_id) for c in plan.changes) == [
        ("task_0101", DIAG),
        ("task_0102", "672cfc6bfc959adaf03a4d00"),
        ("task_0103", "53699ebba3a729239d205f4f"),
        ("task_0103", "672cf66f5e554cca4a916026"),
        ("task_0107", DIAG_TABLE),
        ("task_0108", DIAG_TABLE),
        ("task_0109", TRANSPORTS_TABLE),
        ("task_0113", "53699ebba3a729239d205f4f"),
    ]
    plan.apply()
    written = files(tmp_path)
    assert len(written) == 8
    row_count = json.loads(written[f"task_0109/resource-{TRANSPORTS_TABLE}.json"])
    assert row_count["row_count"] == 144 and "title" not in row_count
    title = json.loads(written[f"task_0101/dataset-{DIAG}.json"])
    assert set(title) == {"task_id", "object", "source", "title", "description"}
    assert title["title"] == store.datasets[DIAG]["title"]
    again = plan_refresh(TASKS, config(twin, tmp_path))
    assert again.pending == [] and {c.kind for c in again.changes} == {"unchanged"}


def test_refresh_shows_the_drift_before_writing_it(
    drift_twin: TwinUrls, baselines: Path, store: CatalogStore, tmp_path: Path
) -> None:
    shutil.copytree(baselines, tmp_path, dirs_exist_ok=True)
    before = files(tmp_path)
    plan = plan_refresh(TASKS, config(drift_twin, tmp_path))
    assert files(tmp_path) == before
    changed = {c.task_id: c.diffs for c in plan.pending}
    assert sorted(changed) == ["task_0101", "task_0102", "task_0107", "task_0108", "task_0109"]
    assert {c.kind for c in plan.pending} == {"changed"}
    assert changed["task_0101"] == [
        DiffEntry(
            field="title", baseline=store.datasets[DIAG]["title"], current="Annuaire (archive)"
        )
    ]
    assert changed["task_0109"] == [DiffEntry(field="row_count", baseline=144, current=100)]
    assert [d.field for d in changed["task_0107"]] == [
        "columns.code_postal",
        "columns.numero_certificat",
    ]
    plan.apply()
    # Once the drift is accepted, only the tasks whose checks need no baseline still fail.
    report = validate(TASKS, config(drift_twin, tmp_path))
    assert report.quarantined == ["task_0104", "task_0105", "task_0111"]


def test_refresh_removes_orphans_of_the_loaded_tasks_only(
    twin: TwinUrls, baselines: Path, tmp_path: Path
) -> None:
    shutil.copytree(baselines, tmp_path, dirs_exist_ok=True)
    orphan = tmp_path / "task_0101" / "dataset-000000000000000000000000.json"
    orphan.write_text("{}", encoding="utf-8")
    other_task = tmp_path / "task_0999" / "dataset-000000000000000000000000.json"
    other_task.parent.mkdir()
    other_task.write_text("{}", encoding="utf-8")
    plan = plan_refresh(TASKS, config(twin, tmp_path))
    assert [(c.kind, c.path) for c in plan.pending] == [("removed", str(orphan))]
    plan.apply()
    assert not orphan.exists() and other_task.exists()


def test_a_refresh_that_cannot_read_the_catalog_writes_nothing(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    plan = plan_refresh(TASKS[:1], config(TwinUrls.for_port(port), tmp_path, timeout=5))
    assert len(plan.errors) == 1 and "ConnectError" in plan.errors[0]
    with pytest.raises(RuntimeError, match="nothing was written"):
        plan.apply()
    assert files(tmp_path) == {}
