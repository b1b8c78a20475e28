"""The ``judge_coverage`` check names the criterion coverage of each tier (a real DuckDB file)."""

from dataclasses import replace
from pathlib import Path

import dagster as dg
import pytest

from datagouv_eval_pipeline.core.judges.judgement_record import JudgementRecord
from datagouv_eval_pipeline.defs.checks import judge_coverage
from datagouv_eval_pipeline.defs.resources import WarehouseResource
from datagouv_eval_pipeline.pipeline.warehouse import connect, load_cell
from tests.warehouse.warehouse_factories import hand_cell


def test_the_warning_names_the_criterion_coverage_per_tier(tmp_path: Path) -> None:
    # hand_cell: run A criteria [pass, unscored], B [fail, pass], C [unscored, unscored], D
    # failed (no verdicts); each of A, B, C also gets one optimal-only criterion, passed.
    # minimal: 3 of 6 criteria decided; optimal: the 6 minimal ones (inherited) + 3 = 6 of 9.
    # All verdicts, inherited copies left out: 9 criteria (6 decided) + one unscored trajectory
    # verdict per tier and run (6): 6 of 15 = 0.40.
    cell = hand_cell()
    runs = list(cell.runs)
    for position, run in enumerate(runs[:3]):
        assert run.judgement is not None
        judgement = run.judgement.model_dump(mode="json")
        extra = dict(judgement["criteria"][0], index=2, tier="optimal", criterion="c2")
        extra["verdict"] = dict(extra["verdict"], status="ok", passed=True, error=None)
        judgement["criteria"].append(extra)
        runs[position] = replace(run, judgement=JudgementRecord.model_validate(judgement))
    db = tmp_path / "w.duckdb"
    with connect(db) as conn:
        load_cell(conn, replace(cell, runs=runs))
    result = judge_coverage(warehouse=WarehouseResource(path=str(db)))
    assert isinstance(result, dg.AssetCheckResult)
    assert not result.passed and result.severity == dg.AssetCheckSeverity.WARN
    assert result.description == (
        "criterion coverage minimal 0.50 (3 of 6), optimal 0.67 (6 of 9); "
        "all verdicts 0.40 (threshold 0.80)"
    )
    assert result.metadata["criterion_coverage_minimal"] == dg.FloatMetadataValue(0.5)
    optimal = result.metadata["criterion_coverage_optimal"]
    assert isinstance(optimal, dg.FloatMetadataValue)
    assert optimal.value == pytest.approx(2 / 3)
