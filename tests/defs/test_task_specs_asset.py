"""The ``task_specs`` asset materializes for real; invalid specs fail its blocking check."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import pytest

from datagouv_eval_pipeline.core.tasks import TASK_SPECS_DIR, load_task_specs
from datagouv_eval_pipeline.definitions import build_definitions
from datagouv_eval_pipeline.defs import task_specs as task_specs_module
from datagouv_eval_pipeline.defs.resources import RunStoreResource

defs = build_definitions()


def _resources(tmp_path: Path) -> dict[str, object]:
    return {"run_store": RunStoreResource(root=str(tmp_path / "store"))}


def test_definitions_load_with_the_task_specs_asset() -> None:
    graph = defs.resolve_asset_graph()
    assert dg.AssetKey("task_specs") in graph.get_all_asset_keys()


def test_task_specs_materializes_with_counts_and_hashes(tmp_path: Path) -> None:
    result = dg.materialize(
        [task_specs_module.task_specs, task_specs_module.specs_valid],
        resources=_resources(tmp_path),
    )
    assert result.success
    materialization = result.asset_materializations_for_node("task_specs")[0]
    metadata = materialization.metadata
    specs = load_task_specs([TASK_SPECS_DIR])
    assert metadata["tasks"].value == len(specs)
    hashes = metadata["spec_hashes"].value
    assert isinstance(hashes, dict)
    assert hashes["task_0002"] == next(s for s in specs if s.task_id == "task_0002").spec_hash()
    (check,) = result.get_asset_check_evaluations()
    assert check.passed


def test_an_invalid_spec_fails_the_blocking_check_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = tmp_path / "task_specs"
    shutil.copytree(TASK_SPECS_DIR, broken)
    path = broken / "task_0002.yml"
    path.write_text(path.read_text(encoding="utf-8").replace("prompt: >", "promt: >"), "utf-8")
    monkeypatch.setattr(task_specs_module, "TASK_SPECS_DIR", broken)
    result = dg.materialize(
        [task_specs_module.task_specs, task_specs_module.specs_valid],
        resources=_resources(tmp_path),
        raise_on_error=False,
    )
    (check,) = result.get_asset_check_evaluations()
    assert not check.passed
    assert check.check_name == "specs_valid"
    details = str(check.metadata["details"].value)
    assert "task_0002.yml" in details
    assert "promt" in details or "prompt" in details
    # Blocking: the run fails, so nothing downstream would start on the bad specs.
    assert not result.success


def test_an_invalid_task_specs_document_fails_the_check_naming_file_and_field(
    tmp_path: Path,
) -> None:
    resource = RunStoreResource(root=str(tmp_path / "store"))
    path = resource.store().write("task_specs", "all", {"errors": [], "cells": "offline~a"})
    result = task_specs_module.specs_valid(run_store=resource)
    assert isinstance(result, dg.AssetCheckResult)
    assert not result.passed
    details = str(result.metadata["details"].value)
    assert details == f"- `{path}: cells: Input should be a valid list`"
