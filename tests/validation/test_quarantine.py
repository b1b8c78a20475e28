"""Drift quarantines exactly the tasks that depend on it; the report is deterministic JSON."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from datagouv_eval_pipeline.core.tasks.loader import TASK_SPECS_DIR, load_task_specs
from datagouv_eval_pipeline.pipeline.preflight import (
    DiffEntry,
    ValidationReport,
    default_baselines_dir,
    validate,
)
from datagouv_eval_pipeline.world.api.server import TwinServer
from datagouv_eval_pipeline.world.catalogue.catalog import CatalogStore
from datagouv_eval_pipeline.world.catalogue.overlay import DriftOverlay
from datagouv_eval_pipeline.world.catalogue.urls import TwinUrls

from .factories import (
    DRIFTED,
    SPORTS,
    SPORTS_TABLE,
    TASKS,
    config,
    make_task,
    ref,
    tasks_checking,
)


def test_drift_quarantines_exactly_the_dependent_tasks(drift_report: ValidationReport) -> None:
    assert set(drift_report.quarantined) == DRIFTED
    assert set(drift_report.ok) == {t.task_id for t in TASKS} - DRIFTED
    for task in drift_report.tasks:
        assert (task.status == "quarantined") == bool(task.failing)


def test_the_report_is_deterministic_json(
    drift_twin: TwinUrls, baselines: Path, drift_report: ValidationReport
) -> None:
    again = validate(list(reversed(TASKS)), config(drift_twin, baselines, concurrency=2))
    assert again.model_dump_json() == drift_report.model_dump_json()
    assert ValidationReport.model_validate_json(drift_report.model_dump_json()) == drift_report
    task = drift_report.task("task_0105")
    # Checks keep the spec's order: resources in order, each resource's checks in order.
    assert [c.fn for c in task.checks] == ["download_url_reachable", "tabular_api_available"]


def test_drafts_and_deprecated_tasks_are_not_validated(twin: TwinUrls, tmp_path: Path) -> None:
    tasks = [
        make_task("task_0130", [ref("dataset", SPORTS, "same_title_description")], status="draft"),
        make_task(
            "task_0131",
            [ref("resource", SPORTS_TABLE, "tabular_api_available", dataset_id=SPORTS)],
            status="deprecated",
        ),
    ]
    assert validate(tasks, config(twin, tmp_path)).tasks == []


# ------------------------------------------------------------------ the real task specs

REAL_DRIFT = DriftOverlay.from_data(
    {
        "name": "real-drift",
        "changes": [
            {"op": "rename_title", "type": "dataset", "id": SPORTS, "title": "Équipements"},
            {"op": "set_row_count", "resource_id": SPORTS_TABLE, "rows": 500},
            {"op": "remove_resource", "resource_id": "98f3161f-79ff-4f16-8f6a-6d571a80fea2"},
        ],
    }
)


@pytest.fixture(scope="module")
def real_drift(store: CatalogStore) -> Iterator[tuple[CatalogStore, TwinUrls]]:
    drifted = REAL_DRIFT.apply(store)
    with TwinServer(drifted) as urls:
        yield drifted, urls


def test_the_committed_baselines_match_the_twin(twin: TwinUrls) -> None:
    specs = load_task_specs([TASK_SPECS_DIR])
    report = validate(specs, config(twin, default_baselines_dir()))
    failing = [(t.task_id, c.label, c.reason) for t in report.tasks for c in t.failing]
    assert failing == [], "refresh with `datagouv-eval preflight --refresh` after reviewing"
    assert report.tasks


def test_real_tasks_quarantined_by_drift(
    real_drift: tuple[CatalogStore, TwinUrls], store: CatalogStore
) -> None:
    drifted, urls = real_drift
    specs = load_task_specs([TASK_SPECS_DIR])
    report = validate(specs, config(urls, default_baselines_dir()))
    # FINESS lost a file (task_0001 and every task checking it); the sports dataset was renamed
    # (tasks 0004, 0012 and the others checking its title); its table was cut, so the Gers count
    # of task_0004 moved: that alone is followed.
    expected = sorted(
        set(tasks_checking(specs, "98f3161f-79ff-4f16-8f6a-6d571a80fea2"))
        | set(tasks_checking(specs, SPORTS, "same_title_description"))
    )
    assert {"task_0001", "task_0004", "task_0012"} <= set(expected)
    assert report.quarantined == expected
    gers = drifted.aggregate(SPORTS_TABLE, [("dep_code", "exact", "32")])
    assert gers is not None and gers < 1023
    task_0004 = {c.fn: c.diffs for c in report.task("task_0004").failing}
    record = store.dataset(SPORTS)
    assert record is not None
    assert task_0004 == {
        "same_title_description": [
            DiffEntry(field="title", baseline=record["title"], current="Équipements")
        ],
    }
    (reference,) = report.task("task_0004").references
    assert (reference.spec_value, reference.value) == (1023, gers)
    (download,) = [c for c in report.task("task_0001").failing]
    assert download.fn == "download_url_reachable"
    assert download.object_id == "98f3161f-79ff-4f16-8f6a-6d571a80fea2"
