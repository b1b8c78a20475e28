"""The ``dbt_metrics`` Dagster assets: ``dbt build`` on a real warehouse, tests as asset checks."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
import pytest

from datagouv_eval_pipeline.defs.dbt import DUCKDB_POOL, dbt_cli_resource, dbt_metrics_assets
from datagouv_eval_pipeline.defs.resources import WarehouseResource
from tests.dbt.dbt_helpers import (
    RANGE_TESTS,
    WAREHOUSE_TABLES,
    load_fixture_warehouse,
    plant_out_of_range_score,
)
from tests.dbt.dbt_helpers import rows as _rows
from tests.warehouse.warehouse_factories import CODE, HAND, HAND_B, MCP_26

CALIBRATION_TABLES = {"judge_calibration", "review_labels"}

MODELS = [
    "action_usage",
    "cell_comparison",
    "cell_history",
    "cell_language_metrics",
    "cost_per_correct_answer",
    "experiment_metrics",
    "experiment_summary",
    "failure_mode_counts",
    "feature_metrics",
    "feature_version_comparison",
    "headline_ranking",
    "metrics_by_capability",
    "metrics_by_language",
    "pass_k_by_cell",
    "question_answers",
    "references_by_task",
    "regression_gate",
    "regressions",
    "stg_metrics",
    "stg_runs",
    "stg_task_features",
    "stg_verdicts",
    "tool_usage",
]


def _materialize(db: Path, **kwargs: Any) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        [dbt_metrics_assets],
        resources={"dbt": dbt_cli_resource, "warehouse": WarehouseResource(path=str(db))},
        **kwargs,
    )


@pytest.fixture(scope="module", autouse=True)
def _dbt_artefacts_in_tmp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    # dagster-dbt keeps each invocation's artefacts (~5 MB) under $DBT_TARGET_PATH, by default
    # dbt_metrics/target/: keep the tests' out of the work tree.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DBT_TARGET_PATH", str(tmp_path_factory.mktemp("dbt_target")))
        yield


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("dbt_assets") / "warehouse.duckdb"
    load_fixture_warehouse(db)
    return db


@pytest.fixture(scope="module")
def built(warehouse: Path) -> tuple[Path, dg.ExecuteInProcessResult]:
    """The warehouse before dbt (copied for planting) and the result of materializing on it."""
    pristine = warehouse.parent / "pristine" / warehouse.name
    pristine.parent.mkdir()
    shutil.copy(warehouse, pristine)
    return pristine, _materialize(warehouse)


def test_assets_join_the_warehouse_keys_in_group_metrics_and_pool() -> None:
    assert sorted(key.path[-1] for key in dbt_metrics_assets.keys) == MODELS
    assert all(key.path[0] == "metrics" for key in dbt_metrics_assets.keys)
    upstream = {key for key in dbt_metrics_assets.dependency_keys if key.path[0] == "eval"}
    # tasks is read by stg_runs; every other table by a model or a mart, except the calibration
    # tables: dbt only tests them as sources (no model reads them, so no Dagster dependency)
    read = [table for table in WAREHOUSE_TABLES if table not in CALIBRATION_TABLES]
    assert upstream == {dg.AssetKey(["eval", table]) for table in read}
    assert set(dbt_metrics_assets.group_names_by_key.values()) == {"metrics"}
    assert dbt_metrics_assets.op.pool == DUCKDB_POOL
    conditions = dbt_metrics_assets.automation_conditions_by_key.values()
    assert all(c is not None and c.get_label() == "eager" for c in conditions)
    checked = {check.asset_key for check in dbt_metrics_assets.check_keys}
    # source tests are checks on the warehouse tables, not mere observations
    assert {dg.AssetKey(["eval", t]) for t in read} <= checked
    assert dg.AssetKey(["metrics", "cell_comparison"]) in checked


def test_materialize_builds_every_model_and_passes_every_check(
    built: tuple[Path, dg.ExecuteInProcessResult], warehouse: Path
) -> None:
    _, result = built
    assert result.success
    materialized = {m.asset_key for m in result.get_asset_materialization_events()}
    assert materialized == set(dbt_metrics_assets.keys)
    evaluations = result.get_asset_check_evaluations()
    assert {e.asset_check_key for e in evaluations} == set(dbt_metrics_assets.check_keys)
    assert [e.check_name for e in evaluations if not e.passed] == []

    # 5 cells (3 realistic, 2 hand) x the 2 headline tiers
    assert _rows(warehouse, "SELECT count(*) FROM main.experiment_summary") == [(10,)]
    # hand_cell, minimal tier: recall defined for A (1.0) and B (0.5), undefined for C, D failed
    assert _rows(
        warehouse,
        "SELECT runs, scored, coverage, mean FROM main.experiment_metrics "
        "WHERE cell_key = ? AND tier = 'minimal' AND metric = 'action_recall'",
        [HAND],
    ) == [(4, 2, 0.5, 0.75)]
    # model-a (1.0, 0.5) vs model-b (0.0, 1.0) on the same two tasks
    assert _rows(
        warehouse,
        "SELECT dimension, mean_a, mean_b, delta, paired_tasks, paired_delta "
        "FROM main.cell_comparison WHERE cell_a = ? AND cell_b = ? "
        "AND tier = 'minimal' AND metric = 'action_recall'",
        [HAND, HAND_B],
    ) == [("model", 0.75, 0.5, -0.25, 2, -0.25)]


def test_tool_usage_counts_calls_per_cell_and_tool(warehouse: Path, built: Any) -> None:
    # MCP 0.2.26 runs: task_0002_mcp (search, info, resources, query), task_0002_mcp_wrong
    # (search, query failing with "Resource not found", search), task_0011_mcp_decline
    # (search), one failed run (no calls).
    assert _rows(
        warehouse,
        "SELECT tool_name, calls, runs_calling, tool_errors FROM main.tool_usage "
        "WHERE cell_key = ? ORDER BY tool_name",
        [MCP_26],
    ) == [
        ("get_dataset_info", 1, 1, 0),
        ("list_dataset_resources", 1, 1, 0),
        ("query_resource_data", 2, 2, 1),
        ("search_datasets", 4, 3, 0),
    ]
    assert _rows(
        warehouse,
        "SELECT tool_name, calls, runs_calling FROM main.tool_usage WHERE cell_key = ?",
        [CODE],
    ) == [("execute_python", 3, 1)]
    # the hand cells have no tool calls: 4 tools in each MCP cell + 1 in the code cell
    assert _rows(warehouse, "SELECT count(*) FROM main.tool_usage") == [(9,)]


def _readme_queries() -> list[str]:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    blocks = readme.split("```sql\n")[1:]
    sql = "\n".join(block.split("```")[0] for block in blocks)
    return [q.strip() for q in sql.split(";") if q.strip().replace("\n", "").strip("- ")]


def test_the_readme_example_queries_run_on_the_built_warehouse(warehouse: Path, built: Any) -> None:
    from datagouv_eval_pipeline.cli.experiment import EXAMPLE_QUERIES

    queries = _readme_queries() + list(EXAMPLE_QUERIES)
    assert len(queries) >= 5  # three in the README, two printed by the main command
    conn = duckdb.connect(str(warehouse), read_only=True)
    try:
        for query in queries:
            conn.execute(query).fetchall()  # raises on a wrong table or column name
        summary = conn.execute(queries[0]).fetchall()
    finally:
        conn.close()
    assert summary  # the headline query returns the cells of the fixture experiment


def test_a_planted_out_of_range_score_fails_its_check_and_the_run(
    built: tuple[Path, dg.ExecuteInProcessResult], tmp_path: Path
) -> None:
    # the same file name: dbt-duckdb names the database after the file stem
    db = tmp_path / built[0].name
    shutil.copy(built[0], db)
    plant_out_of_range_score(db)
    # only the warehouse table's checks: dbt then runs just those tests (`dbt build --select`)
    verdicts = dg.AssetKey(["eval", "verdicts"])
    result = _materialize(
        db, selection=dg.AssetSelection.checks_for_assets(verdicts), raise_on_error=False
    )
    assert not result.success  # dbt build exits non-zero on a failed test
    evaluations = result.get_asset_check_evaluations()
    assert {e.asset_key for e in evaluations} == {verdicts}
    assert sorted(e.check_name for e in evaluations if not e.passed) == RANGE_TESTS
    assert len([e for e in evaluations if e.passed]) == 4  # not null, 3 accepted values
    assert result.get_asset_materialization_events() == []
