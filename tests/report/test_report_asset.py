"""The ``experiment_report`` asset, materialized by Dagster on the fixture warehouse."""

from __future__ import annotations

import base64
import shutil
from pathlib import Path

import dagster as dg
import pytest

from datagouv_eval_pipeline.defs.report import REPORT_DEPS, experiment_report_asset
from datagouv_eval_pipeline.defs.resources import RunStoreResource, WarehouseResource
from datagouv_eval_pipeline.pipeline.report_site import REPORT_URL_ENV
from tests.report.report_helpers import QUARANTINED, FixtureWarehouse


def test_the_asset_writes_the_pages_and_shows_them_in_its_metadata(
    fixture_warehouse: FixtureWarehouse, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(REPORT_URL_ENV, raising=False)
    db = tmp_path / "warehouse.duckdb"
    shutil.copy(fixture_warehouse.db, db)
    result = dg.materialize(
        [experiment_report_asset(REPORT_DEPS)],
        resources={
            "warehouse": WarehouseResource(path=str(db)),
            "run_store": RunStoreResource(root=str(fixture_warehouse.store_root)),
        },
    )
    assert result.success
    (materialization,) = result.asset_materializations_for_node("experiment_report")
    metadata = materialization.metadata
    page = tmp_path / "report" / "index.html"
    assert metadata["report_page"] == dg.MetadataValue.path(str(page))
    # The UI opens no file:// link: the pages are linked where `dagster ui` serves them.
    assert metadata["report_url"] == dg.MetadataValue.url("http://127.0.0.1:8766/index.html")
    browser = tmp_path / "report" / "browser" / "index.html"
    assert metadata["browser_url"] == dg.MetadataValue.url(
        "http://127.0.0.1:8766/browser/index.html"
    )
    assert page.is_file() and browser.is_file()
    # the plots as images the UI renders from Markdown, with links to the served report
    for name in ("accuracy_by_version", "cost_accuracy", "failure_heatmap"):
        text = metadata[f"plot_{name}"].value
        assert isinstance(text, str)
        image, links = text.split("\n\n")
        encoded = image.split("data:image/png;base64,", 1)[1].rstrip(")")
        assert base64.b64decode(encoded).startswith(b"\x89PNG")
        assert links == (
            "[the report](http://127.0.0.1:8766/index.html) · "
            f"[this plot](http://127.0.0.1:8766/figures/{name}.png)"
        )
        assert (tmp_path / "report" / "figures" / f"{name}.png").is_file()
    # the headline ranking as a table: tier minimal, ranked cells first
    ranking = metadata["ranking"]
    assert isinstance(ranking, dg.TableMetadataValue)
    assert [c.name for c in ranking.schema.columns][:3] == [
        "accuracy_rank",
        "model_name",
        "capability_set",
    ]
    assert len(ranking.records) == 5 and ranking.records[0].data["accuracy_rank"] == 1
    assert str(metadata["ranking_shown"].value).startswith("5 of 5 rows (tier minimal")
    markdown = (tmp_path / "experiment_report.md").read_text(encoding="utf-8")
    assert metadata["report"] == dg.MetadataValue.md(markdown)
    assert "## Accuracy (minimal tier)" in markdown
    assert f"| quarantined | {QUARANTINED[0]} |" in markdown
    # the per cell × tier table of experiment_summary follows
    assert "## Every cell and tier" in markdown
    assert "| hand~model-a__none__p | minimal | 4 | 3 | 0 | 0.75 | 0.50 |" in markdown


def test_the_asset_depends_on_the_marts_and_the_statistics() -> None:
    asset = experiment_report_asset(REPORT_DEPS)
    deps = {key.to_user_string() for key in asset.asset_deps[dg.AssetKey("experiment_report")]}
    assert deps == {
        "metrics/experiment_summary",
        "eval/metric_estimates",
        "eval/comparisons",
        "eval/feature_estimates",
        "eval/feature_comparisons",
        "eval/questions",
        "eval/question_comparisons",
        "eval/gate_results",
        "eval/judge_calibration",
        "eval/task_features",
    }
