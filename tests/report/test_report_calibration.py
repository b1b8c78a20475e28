"""The `judge_calibration` asset materialized by Dagster, and the report's calibration section."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import duckdb

from datagouv_eval_pipeline.defs.judge_calibration import judge_calibration
from datagouv_eval_pipeline.defs.resources import (
    CatalogResource,
    JudgeResource,
    RunStoreResource,
    WarehouseResource,
)
from datagouv_eval_pipeline.report import build_report
from tests.report.report_helpers import FixtureWarehouse


def test_the_asset_stores_kappa_per_kind_and_the_report_shows_it(
    fixture_warehouse: FixtureWarehouse, tmp_path: Path
) -> None:
    db = tmp_path / "warehouse.duckdb"
    shutil.copy(fixture_warehouse.db, db)
    before = build_report(db, tmp_path / "before")
    assert "Absent: the warehouse holds no judge calibration results." in before.markdown
    instance = dg.DagsterInstance.ephemeral()
    result = dg.materialize(
        [judge_calibration],
        instance=instance,
        resources={
            "judge": JudgeResource(),
            "warehouse": WarehouseResource(path=str(db)),
            "catalog": CatalogResource(),
            "run_store": RunStoreResource(root=str(tmp_path / "store")),
        },
    )
    assert result.success
    (materialization,) = result.asset_materializations_for_node("eval__judge_calibration")
    assert materialization.asset_key == dg.AssetKey(["eval", "judge_calibration"])
    metadata = materialization.metadata
    assert metadata["judge_id"] == dg.MetadataValue.text("deterministic@3")
    assert metadata["dagster/row_count"] == dg.MetadataValue.int(5)  # four kinds and 'all'
    assert "| trajectory |" in str(metadata["agreement"].value)
    with duckdb.connect(str(db), read_only=True) as conn:
        kinds = {
            row[0]: row[1:]
            for row in conn.execute(
                "SELECT verdict_kind, items, scored, kappa FROM eval.judge_calibration"
            ).fetchall()
        }
    assert set(kinds) == {"criterion", "arguments", "trajectory", "failure_mode", "all"}
    assert kinds["all"][0] == sum(kinds[k][0] for k in kinds if k != "all")
    after = build_report(db, tmp_path / "after")
    assert "| judge | verdict kind | labels | labelled items | n (decided) |" in after.markdown
    trajectory = "| deterministic@3 | trajectory | all (verdict-shown,written) | 36 | 36 |"
    assert trajectory in after.markdown
    # The argument kappa rests on 12 decided items: refused, with the reason.
    assert "fewer than 30 labelled items decided by the judge (n=12 of 42)" in after.markdown
    assert "used for decisions only once its kappa reaches 0.8" in after.markdown
    page = (tmp_path / "after" / "index.html").read_text(encoding="utf-8")
    assert "<td>failure_mode</td>" in page
