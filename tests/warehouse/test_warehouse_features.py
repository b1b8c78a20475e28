"""Results by toolset feature: eval.task_features, eval.feature_estimates, eval.feature_comparisons.

Two hand cells differ only in the MCP version; six tasks, one criterion each (accuracy 0 or 1):

========= ===================== ====== ======
task      exercises             0.2.19 0.2.26
========= ===================== ====== ======
task_0001 search.x, tabular.y   0      1
task_0002 search.x              0      1
task_0003 search.x              0      1
task_0004 tabular.y             1      1
task_0005 tabular.y             1      1
task_0006 (none)                1      0
========= ===================== ====== ======
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from datagouv_eval_pipeline.core.tasks.spec import TaskSpec
from datagouv_eval_pipeline.pipeline.warehouse import CellLoad, connect, load_experiment, load_tasks
from datagouv_eval_pipeline.pipeline.warehouse.error_bars import compute_statistics
from tests.warehouse.warehouse_factories import (
    hand_record,
    hand_run,
    specs,
)

EXERCISES = {
    "task_0001": ["search.x", "tabular.y"],
    "task_0002": ["search.x"],
    "task_0003": ["search.x"],
    "task_0004": ["tabular.y"],
    "task_0005": ["tabular.y"],
    "task_0006": [],
}
OLD = "hand~model-a__mcp@0.2.19__p"
NEW = "hand~model-a__mcp@0.2.26__p"
ACCURACY = {OLD: [0, 0, 0, 1, 1, 1], NEW: [1, 1, 1, 1, 1, 0]}
Z2 = 1.959963984540054**2


def feature_specs() -> list[TaskSpec]:
    """Real task specs with the hand features in ``meta.exercises``."""
    out = []
    for task, features in EXERCISES.items():
        spec = specs()[task]
        out.append(
            spec.model_copy(update={"meta": spec.meta.model_copy(update={"exercises": features})})
        )
    return out


def version_cell(key: str) -> CellLoad:
    version = key.split("@")[1].split("__")[0]
    record = hand_record(key, capabilities=["mcp"], mcp_version=version)
    tasks = list(EXERCISES)
    return CellLoad(
        record, [hand_run(t, [a == 1]) for t, a in zip(tasks, ACCURACY[key], strict=True)]
    )


def rows(conn: duckdb.DuckDBPyConnection, sql: str, *params: object) -> list[tuple[object, ...]]:
    return conn.execute(sql, list(params)).fetchall()


@pytest.fixture
def conn(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    conn = connect(tmp_path / "w.duckdb")
    load_experiment(conn, [version_cell(OLD), version_cell(NEW)], tasks=feature_specs())
    compute_statistics(conn)
    return conn


def test_task_features_are_one_row_per_listed_feature_and_reload_idempotently(
    conn: duckdb.DuckDBPyConnection,
) -> None:
    expected = [
        ("task_0001", "search.x", "search"),
        ("task_0001", "tabular.y", "tabular"),
        ("task_0002", "search.x", "search"),
        ("task_0003", "search.x", "search"),
        ("task_0004", "tabular.y", "tabular"),
        ("task_0005", "tabular.y", "tabular"),
    ]
    sql = "SELECT task_id, feature, area FROM eval.task_features ORDER BY ALL"
    assert rows(conn, sql) == expected
    # provenance: the version's spec hash and version number, as in eval.tasks
    assert rows(
        conn,
        "SELECT count(*) FROM eval.task_features AS f JOIN eval.tasks AS t "
        "USING (task_id, spec_hash, task_version)",
    ) == [(6,)]
    load_tasks(conn, feature_specs())
    load_experiment(conn, [version_cell(OLD)], tasks=feature_specs())
    assert rows(conn, sql) == expected


def test_feature_estimates_are_the_cell_estimates_on_the_features_tasks(
    conn: duckdb.DuckDBPyConnection,
) -> None:
    found = {
        (cell, feature): (n, tasks, mean, low, high, method)
        for cell, feature, n, tasks, mean, low, high, method in rows(
            conn,
            "SELECT cell_key, feature, n, tasks, mean, ci_low, ci_high, interval_method "
            "FROM eval.feature_estimates WHERE tier = 'minimal' AND metric = 'accuracy'",
        )
    }
    # task_0006 exercises nothing: in no feature's figures
    assert sorted(found) == [
        (OLD, "search.x"), (OLD, "tabular.y"), (NEW, "search.x"), (NEW, "tabular.y")
    ]  # fmt: skip
    # Wilson with 0 of 3: [0, z² / (3 + z²)]; 3 of 3: [3 / (3 + z²), 1]
    upper = Z2 / (3 + Z2)  # 0.56149
    assert found[(OLD, "search.x")] == (3, 3, 0.0, 0.0, pytest.approx(upper), "wilson")
    assert found[(NEW, "search.x")] == (3, 3, 1.0, pytest.approx(1 - upper), 1.0, "wilson")
    # 2 of 3: centre (2/3 + z²/6) / (1 + z²/3), half-width z √(2/27 + z²/36) / (1 + z²/3)
    centre = (2 / 3 + Z2 / 6) / (1 + Z2 / 3)
    half = Z2**0.5 * (2 / 27 + Z2 / 36) ** 0.5 / (1 + Z2 / 3)
    n, tasks, mean, low, high, method = found[(OLD, "tabular.y")]
    assert (n, tasks, mean, method) == (3, 3, pytest.approx(2 / 3), "wilson")
    assert (low, high) == pytest.approx((centre - half, centre + half))
    assert (low, high) == pytest.approx((0.2077, 0.9385), abs=1e-4)


def test_feature_comparisons_pair_the_versions_on_the_features_tasks(
    conn: duckdb.DuckDBPyConnection,
) -> None:
    found = rows(
        conn,
        "SELECT feature, dimension, value_a, value_b, pairs, tasks, mean_difference, test, "
        "p_value, family_size, p_adjusted, verdict FROM eval.feature_comparisons "
        "WHERE tier = 'minimal' AND metric = 'accuracy' AND cell_a = ? ORDER BY feature",
        OLD,
    )
    # search.x: 3 tasks, all b-only passes: exact McNemar p = 2 / 2³ = 0.25 (one comparison in
    # the family: Holm leaves it). tabular.y: one b-only pass of 3: p = min(1, 2 / 2) = 1.
    assert found == [
        ("search.x", "mcp_version", "0.2.19", "0.2.26", 3, 3, 1.0, "mcnemar_exact",
         0.25, 1, 0.25, "no detectable difference"),
        ("tabular.y", "mcp_version", "0.2.19", "0.2.26", 3, 3, pytest.approx(1 / 3),
         "mcnemar_exact", 1.0, 1, 1.0, "no detectable difference"),
    ]  # fmt: skip
    # both orders, the difference negated
    assert rows(
        conn,
        "SELECT feature, mean_difference FROM eval.feature_comparisons WHERE tier = 'minimal' "
        "AND metric = 'accuracy' AND cell_a = ? ORDER BY feature",
        NEW,
    ) == [("search.x", -1.0), ("tabular.y", pytest.approx(-1 / 3))]
    # Over all six tasks the same pair differs by (5 - 3) / 6: the feature split is what shows
    # where the versions differ.
    assert rows(
        conn,
        "SELECT mean_difference FROM eval.comparisons WHERE tier = 'minimal' "
        "AND metric = 'accuracy' AND cell_a = ?",
        OLD,
    ) == [(pytest.approx(2 / 6),)]


def test_feature_comparisons_compare_toolset_changes_only(tmp_path: Path) -> None:
    # A third cell differs from OLD in its model: eval.comparisons pairs it, the by-feature
    # comparisons (read against toolset changes) do not.
    other_model = "hand~model-b__mcp@0.2.19__p"
    accuracy_b = [1, 0, 1, 0, 1, 0]
    tasks = list(EXERCISES)
    cell = CellLoad(
        hand_record(other_model, model="model-b", capabilities=["mcp"], mcp_version="0.2.19"),
        [hand_run(t, [a == 1]) for t, a in zip(tasks, accuracy_b, strict=True)],
    )
    conn = connect(tmp_path / "w.duckdb")
    load_experiment(conn, [version_cell(OLD), version_cell(NEW), cell], tasks=feature_specs())
    compute_statistics(conn)
    overall = "SELECT DISTINCT dimension FROM eval.{} WHERE cell_a = ? ORDER BY 1"
    assert rows(conn, overall.format("comparisons"), OLD) == [("mcp_version",), ("model",)]
    assert rows(conn, overall.format("feature_comparisons"), OLD) == [("mcp_version",)]
