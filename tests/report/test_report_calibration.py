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
from datagouv_eval_pipeline.pipeline.report import build_report
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
    # Four kinds and 'all', on every label and on the blind labels alone.
    assert metadata["dagster/row_count"] == dg.MetadataValue.int(10)
    assert "| trajectory |" in str(metadata["agreement"].value)
    with duckdb.connect(str(db), read_only=True) as conn:
        rows = conn.execute(
            "SELECT label_set, verdict_kind, items FROM eval.judge_calibration"
        ).fetchall()
    for label_set in ("all", "blind"):
        kinds = {kind: items for set_name, kind, items in rows if set_name == label_set}
        assert set(kinds) == {"criterion", "arguments", "trajectory", "failure_mode", "all"}
        assert kinds["all"] == sum(items for kind, items in kinds.items() if kind != "all")
    blind = {kind: items for set_name, kind, items in rows if set_name == "blind"}
    every = {kind: items for set_name, kind, items in rows if set_name == "all"}
    assert all(blind[kind] < every[kind] for kind in blind)
    # The rules' criterion verdicts agree with labels given without seeing them.
    with duckdb.connect(str(db), read_only=True) as conn:
        (criterion_kappa,) = conn.execute(
            "SELECT kappa FROM eval.judge_calibration "
            "WHERE label_set = 'blind' AND verdict_kind = 'criterion'"
        ).fetchone() or (None,)
    assert criterion_kappa is not None and criterion_kappa >= 0.8
    after = build_report(db, tmp_path / "after")
    assert "| judge | verdict kind | labels | labelled items | n (decided) |" in after.markdown
    trajectory = (
        "| deterministic@3 | trajectory | all (blind-review,verdict-shown,written) | 84 | 84 |"
    )
    assert trajectory in after.markdown
    assert "| deterministic@3 | criterion | blind (blind-review) | 108 | 99 |" in after.markdown
    # The blind argument kappa would rest on 20 decided items: refused, with the reason.
    assert "fewer than 30 labelled items decided by the judge (n=20 of 63)" in after.markdown
    assert "used for decisions only once its kappa reaches 0.8" in after.markdown
    page = (tmp_path / "after" / "index.html").read_text(encoding="utf-8")
    assert "<td>failure_mode</td>" in page
