"""The ``task_specs`` and ``catalog_validation`` documents: typed, same JSON, checked on read."""

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from datagouv_eval_pipeline.pipeline.experiment.documents import (
    CatalogValidationDocument,
    PreflightProbe,
    TaskSpecsDocument,
)
from datagouv_eval_pipeline.pipeline.experiment.quarantine import (
    DOCUMENT_KEY,
    STAGE,
    quarantined_tasks,
    read_preflight,
)
from datagouv_eval_pipeline.pipeline.experiment.store import RunStore, RunStoreError, content_digest
from datagouv_eval_pipeline.pipeline.preflight.models import ValidationReport

TASK_SPECS = "task_specs"


def _report_json(status: str = "quarantined") -> dict[str, Any]:
    check = {
        "fn": "dataset_exists",
        "object_type": "dataset",
        "object_id": "abc",
        "outcome": "failed",
        "reason": "dataset abc is gone",
    }
    task = {
        "task_id": "task_0002",
        "task_version": 1,
        "spec_hash": "h",
        "status": status,
        "checks": [check],
    }
    return {
        "urls": {},
        "source": "twin snap",
        "now": datetime(2026, 11, 30, tzinfo=UTC).isoformat(),
        "baselines_dir": "baselines",
        "tasks": [task],
    }


def test_the_task_specs_document_is_the_json_the_stage_always_wrote(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    hashes = {"task_0001": "aa", "task_0002": "bb"}
    cells = ["offline~a", "offline~b"]
    untyped = store.write(TASK_SPECS, "all", {"errors": [], "spec_hashes": hashes, "cells": cells})
    before = untyped.read_bytes()
    typed = TaskSpecsDocument(errors=[], spec_hashes=hashes, cells=cells)
    assert store.write(TASK_SPECS, "all", typed).read_bytes() == before
    assert before == (
        b'{"errors":[],"spec_hashes":{"task_0001":"aa","task_0002":"bb"},'
        b'"cells":["offline~a","offline~b"]}'
    )
    read = store.read_document(TASK_SPECS, "all", TaskSpecsDocument)
    assert read == typed
    assert content_digest(typed.to_json()) == content_digest(
        {"errors": [], "spec_hashes": hashes, "cells": cells}
    )
    # Invalid specs: the errors alone, without the absent keys.
    invalid = TaskSpecsDocument(errors=["task_0001.yml: goal: required"])
    assert store.write(TASK_SPECS, "all", invalid).read_bytes() == (
        b'{"errors":["task_0001.yml: goal: required"]}'
    )


def test_the_preflight_document_is_the_json_the_stage_always_wrote(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    report = ValidationReport.model_validate(_report_json())
    probe = {"ok": True, "detail": "GET https://www.data.gouv.fr/api/1/site/ → HTTP 200"}
    untyped = {"snapshot_id": "snap", "report": report.model_dump(mode="json"), "probe": probe}
    before = store.write(STAGE, DOCUMENT_KEY, untyped).read_bytes()
    typed = CatalogValidationDocument(
        snapshot_id="snap", report=report, probe=PreflightProbe.model_validate(probe)
    )
    assert store.write(STAGE, DOCUMENT_KEY, typed).read_bytes() == before
    assert content_digest(typed.to_json()) == content_digest(untyped)
    read = read_preflight(store)
    assert read == typed
    # Read back and written again: the same bytes (the digest is stable across stages).
    assert read is not None
    assert store.write(STAGE, DOCUMENT_KEY, read).read_bytes() == before
    assert quarantined_tasks(store) == {"task_0002": "dataset abc is gone"}


def test_a_preflight_written_before_the_probe_existed_still_reads(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    report = ValidationReport.model_validate(_report_json()).model_dump(mode="json")
    path = store.write(STAGE, DOCUMENT_KEY, {"snapshot_id": None, "report": report})
    document = read_preflight(store)
    assert document is not None
    assert document.probe is None
    before = path.read_bytes()
    assert b'"probe"' not in before
    assert store.write(STAGE, DOCUMENT_KEY, document).read_bytes() == before


def test_an_invalid_preflight_document_names_the_file_and_the_field(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    path = store.write(
        STAGE, DOCUMENT_KEY, {"snapshot_id": "snap", "report": _report_json(status="maybe")}
    )
    with pytest.raises(RunStoreError) as error:
        quarantined_tasks(store)
    message = str(error.value)
    assert message.startswith(f"{path}: report.tasks[0].status: Input should be ")
    assert "Traceback" not in message


def test_an_invalid_task_specs_document_names_the_file_and_the_field(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    path = store.write(TASK_SPECS, "all", {"errors": [], "spec_hashes": {"task_0001": 3}})
    with pytest.raises(RunStoreError) as error:
        store.read_document(TASK_SPECS, "all", TaskSpecsDocument)
    assert str(error.value) == (f"{path}: spec_hashes.task_0001: Input should be a valid string")
