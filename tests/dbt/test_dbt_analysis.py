"""The analyst's models: cost per correct answer and paired regressions between MCP versions,
and ``dbt docs generate`` documenting them (real DuckDB, real dbt)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from tests.dbt.dbt_helpers import load_fixture_warehouse, run_dbt, warehouse_env
from tests.dbt.dbt_helpers import rows as _rows
from tests.warehouse.warehouse_factories import CODE, HAND, MCP_19, MCP_26

MODELS = ["cost_per_correct_answer", "regressions"]


@pytest.fixture(scope="module")
def analysed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    tmp = tmp_path_factory.mktemp("dbt_analysis")
    db = tmp / "warehouse.duckdb"
    load_fixture_warehouse(db)
    # Plant a regression: MCP 0.2.26 now fails task_0011 (accuracy 1 at 0.2.19).
    with duckdb.connect(str(db)) as conn:
        conn.execute(
            "UPDATE eval.metrics SET value = 0 WHERE cell_key = ? AND task_id = 'task_0011' "
            "AND metric = 'accuracy' AND tier = 'minimal'",
            [MCP_26],
        )
        # Price 0.2.19's three runs at 0.10 each (the fixture's runs are unpriced).
        conn.execute("UPDATE eval.runs SET cost = 0.10 WHERE cell_key = ?", [MCP_19])
    with warehouse_env(db):
        models = run_dbt(["run", "--select", *MODELS], tmp)
        assert models.success, models.exception
        built = run_dbt(["test", "--select", *MODELS], tmp)
        results: Any = built.result
        assert built.success, [
            (r.node.name, str(r.status), r.message)
            for r in results or []
            if str(r.status) not in ("pass", "success")
        ]
        docs = run_dbt(["docs", "generate"], tmp)
        assert docs.success, docs.exception
        yield db, tmp / "target"


def test_regressions_pair_tasks_across_versions_compared_as_versions(
    analysed: tuple[Path, Path],
) -> None:
    db, _ = analysed
    found = _rows(
        db,
        "SELECT older_cell, newer_cell, older_version, newer_version, task_id, paired_runs, "
        "older_mean, newer_mean, mean_difference FROM main.regressions "
        "WHERE metric = 'accuracy' AND tier = 'minimal'",
    )
    assert found == [(MCP_19, MCP_26, "0.2.19", "0.2.26", "task_0011", 1, 1.0, 0.0, -1.0)]
    # No row ever goes from a newer version to an older one.
    assert _rows(
        db,
        "SELECT count(*) FROM main.regressions "
        "WHERE string_split(older_version, '.')::INT[] >= string_split(newer_version, '.')::INT[]",
    ) == [(0,)]


def test_version_key_orders_versions_not_text(analysed: tuple[Path, Path]) -> None:
    db, _ = analysed
    # The macro's expression, as the model compiles it.
    assert _rows(
        db,
        "SELECT try_cast(string_split('0.2.5', '.') AS INTEGER[]) "
        "< try_cast(string_split('0.2.26', '.') AS INTEGER[]), '0.2.5' < '0.2.26'",
    ) == [(True, False)]


def test_cost_per_correct_answer_counts_correct_runs_and_priced_cells(
    analysed: tuple[Path, Path],
) -> None:
    db, _ = analysed
    found = {
        row[0]: row[1:]
        for row in _rows(
            db,
            "SELECT cell_key, runs, priced_runs, correct_answers, total_cost, "
            "cost_per_correct_answer FROM main.cost_per_correct_answer WHERE tier = 'minimal'",
        )
    }
    # 0.2.19: 3 runs priced 0.10 (judge 0), 2 correct (task_0002#0, task_0011#0): 0.30 / 2.
    runs, priced, correct, total, per_correct = found[MCP_19]
    assert (runs, priced, correct) == (3, 3, 2)
    assert (total, per_correct) == (pytest.approx(0.30), pytest.approx(0.15))
    # 0.2.26: one correct answer left (task_0002#0), no run priced: no total, no price per answer.
    assert found[MCP_26] == (4, 0, 1, None, None)
    # hand-a: task_0001 right (1), task_0002 half right (0.5), the others unscored.
    assert found[HAND][2] == 1 and found[CODE][2] == 1


def test_dbt_docs_generate_shows_the_models_and_their_columns(
    analysed: tuple[Path, Path],
) -> None:
    _, target = analysed
    manifest = json.loads((target / "manifest.json").read_text(encoding="utf-8"))
    catalog = json.loads((target / "catalog.json").read_text(encoding="utf-8"))
    for model in MODELS:
        node = manifest["nodes"][f"model.dbt_metrics.{model}"]
        assert node["description"]
        documented = {name: c["description"] for name, c in node["columns"].items()}
        built = set(catalog["nodes"][f"model.dbt_metrics.{model}"]["columns"])
        assert built == set(documented), model
        assert all(documented.values()), model
