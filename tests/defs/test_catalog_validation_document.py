"""An invalid ``catalog_validation`` document stops the run naming the file and the field."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from datagouv_eval_pipeline.defs import catalog_validation as catalog_validation_module
from datagouv_eval_pipeline.defs import checks as checks_module
from datagouv_eval_pipeline.defs.resources import ExperimentSettings, RunStoreResource


def test_an_invalid_preflight_document_fails_catalog_reachable_naming_file_and_field(
    tmp_path: Path,
) -> None:
    resource = RunStoreResource(root=str(tmp_path / "store"))
    path = resource.store().write(
        "catalog_validation", "all", {"snapshot_id": "snap", "report": {"tasks": []}}
    )
    result = catalog_validation_module.catalog_reachable(
        run_store=resource, experiment=ExperimentSettings()
    )
    assert isinstance(result, dg.AssetCheckResult)
    assert not result.passed
    reason = str(result.metadata["reason"].value)
    assert reason == f"- {path}: report.urls: Field required (and 3 more problem(s))"
    warning = catalog_validation_module.no_quarantined_tasks(run_store=resource)
    assert isinstance(warning, dg.AssetCheckResult)
    assert not warning.passed
    assert str(warning.metadata["quarantined"].value) == reason
    transcripts = checks_module.transcripts_present(
        run_store=resource, experiment=ExperimentSettings()
    )
    assert isinstance(transcripts, dg.AssetCheckResult)
    assert not transcripts.passed
    assert str(transcripts.metadata["details"].value) == reason
