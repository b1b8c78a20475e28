from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import duckdb
import pytest

from datagouv_eval_pipeline.core.benchmark.keys import run_id
from datagouv_eval_pipeline.core.traces import Provenance
from datagouv_eval_pipeline.pipeline.warehouse import (
    ALL_TABLES,
    DDL,
    CellLoad,
    RunLoad,
    SchemaVersionError,
    WarehouseInputError,
    connect,
    create_schema,
    delete_cell,
    load_cell,
    load_experiment,
)
from datagouv_eval_pipeline.pipeline.warehouse.queries import (
    cell_coverage,
    duplicate_runs,
    experiment_summary,
    out_of_range_values,
    row_counts,
    runs_per_cell,
)
from tests.warehouse.warehouse_factories import (
    HAND,
    HAND_B,
    MCP_26,
    hand_cell,
    hand_cell_b,
    hand_record,
    hand_score,
    hand_trace,
    realistic_experiment,
)


def _metric(
    conn: duckdb.DuckDBPyConnection, cell: str, tier: str, metric: str
) -> dict[str, object]:
    rows = [
        r
        for r in experiment_summary(conn)
        if r["cell_key"] == cell and r["tier"] == tier and r["metric"] == metric
    ]
    assert len(rows) == 1
    return rows[0]


def test_schema_creates_every_documented_table_with_its_primary_key(tmp_path: Path) -> None:
    conn = connect(tmp_path / "w.duckdb")
    create_schema(conn)  # idempotent
    names = {
        r[0]
        for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'eval'"
        ).fetchall()
    }
    assert names == {t.name for t in ALL_TABLES} | {"schema_info"}
    for table in ALL_TABLES:
        cols = [
            r[0]
            for r in conn.execute(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_schema = 'eval' AND table_name = ? ORDER BY ordinal_position",
                [table.name],
            ).fetchall()
        ]
        assert tuple(cols) == table.column_names
        assert f"PRIMARY KEY ({', '.join(table.primary_key)})" in DDL[table.name]
    conn.execute("INSERT INTO eval.tasks VALUES ('t', 'h', 1, 'n', 'fr', 'answer', 'active', 's')")
    with pytest.raises(duckdb.ConstraintException):
        conn.execute("INSERT INTO eval.tasks VALUES ('t', 'h', 2, 'n', 'en', 'answer', 'x', 's')")


def test_schema_version_mismatch_is_refused(tmp_path: Path) -> None:
    conn = connect(tmp_path / "w.duckdb")
    conn.execute("UPDATE eval.schema_info SET value = '0' WHERE key = 'schema_version'")
    with pytest.raises(SchemaVersionError, match="schema version 0"):
        create_schema(conn)


def test_reloading_a_cell_is_idempotent(tmp_path: Path) -> None:
    conn = connect(tmp_path / "w.duckdb")
    loads = realistic_experiment()
    for item in loads:
        load_cell(conn, item)
    first = row_counts(conn)
    for item in loads:
        load_cell(conn, item)
    assert row_counts(conn) == first
    assert duplicate_runs(conn) == []
    assert first["runs"] == 8 and first["cells"] == 3
    assert runs_per_cell(conn)[MCP_26] == 4


def test_changed_scores_replace_the_old_rows(tmp_path: Path) -> None:
    conn = connect(tmp_path / "w.duckdb")
    load_cell(conn, hand_cell(recall_b=0.5))
    assert _metric(conn, HAND, "minimal", "action_recall")["mean"] == pytest.approx(0.75)
    load_cell(conn, hand_cell(recall_b=0.0))
    # (1.0 + 0.0) / 2 scored runs
    assert _metric(conn, HAND, "minimal", "action_recall")["mean"] == pytest.approx(0.5)
    assert row_counts(conn)["runs"] == 4


def test_a_failing_load_leaves_the_previous_rows_intact(tmp_path: Path) -> None:
    conn = connect(tmp_path / "w.duckdb")
    load_cell(conn, hand_cell())
    before = row_counts(conn)
    good = hand_cell()
    # A bounded metric out of range is refused before anything is written.
    first = replace(good.runs[0], score=hand_score("task_0001", 1.5, 3))
    with pytest.raises(WarehouseInputError, match=r"action_recall: 1.5 is outside \[0, 1\]"):
        load_cell(conn, replace(good, runs=[first, *good.runs[1:]]))
    # Two runs with the same (task, repeat): refused too.
    with pytest.raises(WarehouseInputError, match="duplicate"):
        load_cell(conn, CellLoad(good.cell, [RunLoad(hand_trace("task_0001"))] * 2))
    assert row_counts(conn) == before
    assert _metric(conn, HAND, "minimal", "action_recall")["mean"] == pytest.approx(0.75)


def test_a_database_error_mid_transaction_rolls_back(tmp_path: Path) -> None:
    conn = connect(tmp_path / "w.duckdb")
    load_cell(conn, hand_cell())
    before = row_counts(conn)
    # A row of another cell with a colliding key makes the insert fail after the delete ran.
    conn.execute(
        "INSERT INTO eval.failure_modes VALUES "
        "('x', ?, 'task_0001', 0, 'minimal', 'EARLY_STOP', true, 'ok', 'r', NULL, 'j', 'p')",
        [HAND],
    )
    conn.execute("DELETE FROM eval.failure_modes WHERE run_id = 'x'")
    conn.execute("ALTER TABLE eval.metrics ADD COLUMN extra INTEGER NOT NULL DEFAULT 0")
    conn.execute("ALTER TABLE eval.metrics ALTER COLUMN extra DROP DEFAULT")
    with pytest.raises(duckdb.Error):
        load_cell(conn, hand_cell(recall_b=0.0))
    assert row_counts(conn) == before
    assert _metric(conn, HAND, "minimal", "action_recall")["mean"] == pytest.approx(0.75)


def test_failed_runs_have_null_scores_and_no_verdicts(tmp_path: Path) -> None:
    conn = connect(tmp_path / "w.duckdb")
    load_cell(conn, hand_cell())
    status, scored, reason = conn.execute(
        "SELECT status, scored, status_reason FROM eval.runs WHERE task_id = 'task_0004'"
    ).fetchone() or (None, None, None)
    assert (status, scored, reason) == ("error", False, "boom")
    values = conn.execute(
        "SELECT count(*), count(value), min(reason), max(reason) FROM eval.metrics "
        "WHERE task_id = 'task_0004'"
    ).fetchone()
    assert values is not None and values[0] > 0 and values[1] == 0
    assert values[2] == values[3] == "run error: boom"
    verdicts = conn.execute("SELECT count(*) FROM eval.verdicts WHERE task_id = 'task_0004'")
    assert (verdicts.fetchone() or [None])[0] == 0


def test_realistic_failed_run_and_provenance(tmp_path: Path) -> None:
    conn = connect(tmp_path / "w.duckdb")
    for item in realistic_experiment():
        load_cell(conn, item)
    row = conn.execute(
        "SELECT status, scored, effective_latency_ms FROM eval.runs "
        "WHERE cell_key = ? AND task_id = 'task_0003'",
        [MCP_26],
    ).fetchone()
    assert row == ("error", False, None)
    prov = conn.execute(
        "SELECT mcp_version, capability_set, judge_id, spec_hash IS NOT NULL, snapshot_id, "
        "code_version, judge_prompt_hash IS NOT NULL, started_at IS NOT NULL "
        "FROM eval.runs WHERE cell_key = ? AND task_id = 'task_0002' AND repeat_index = 0",
        [MCP_26],
    ).fetchone()
    assert prov == ("0.2.26", "mcp", "deterministic@3", True, "snap-2026-11", "abc1234", True, True)
    assert out_of_range_values(conn) == []
    # The run's id is the benchmark's (the report links runs by the same text).
    (stored,) = conn.execute(
        "SELECT run_id FROM eval.runs WHERE cell_key = ? AND task_id = 'task_0002' "
        "AND repeat_index = 0",
        [MCP_26],
    ).fetchone() or (None,)
    assert stored == run_id(MCP_26, "task_0002", 0) == f"{MCP_26}|task_0002|0"


def test_unscored_items_are_excluded_from_averages_and_counted_in_coverage(
    tmp_path: Path,
) -> None:
    conn = connect(tmp_path / "w.duckdb")
    load_cell(conn, hand_cell())
    recall = _metric(conn, HAND, "minimal", "action_recall")
    # values 1.0, 0.5, undefined, failed run -> mean of the two defined, coverage 2/4
    assert recall["mean"] == pytest.approx(0.75)
    assert (recall["runs"], recall["scored"], recall["coverage"]) == (4, 2, 0.5)
    accuracy = _metric(conn, HAND, "optimal", "accuracy")
    assert accuracy["mean"] == pytest.approx(0.75)
    assert accuracy["coverage"] == pytest.approx(0.5)
    required = _metric(conn, HAND, "minimal", "required_actions")
    assert required["total_value"] == 5  # 3 + 2 + 0, the failed run is NULL not 7
    assert required["mean"] is None
    # criterion verdicts: A [1, NULL], B [0, 1], C [NULL, NULL] -> 2/3 over 3 scored of 6
    row = conn.execute(
        "SELECT avg(value), count(value), count(*) FROM eval.verdicts "
        "WHERE cell_key = ? AND kind = 'criterion' AND tier = 'minimal'",
        [HAND],
    ).fetchone()
    assert row is not None
    assert row[0] == pytest.approx(2 / 3) and row[1:] == (3, 6)
    # minimal criteria count in the optimal tier too, their judge spend only once
    inherited = conn.execute(
        "SELECT count(*), count(input_tokens) FROM eval.verdicts "
        "WHERE cell_key = ? AND kind = 'criterion' AND tier = 'optimal'",
        [HAND],
    ).fetchone()
    assert inherited == (6, 0)


def test_load_experiment_reports_coverage_and_tolerates_a_bad_cell(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    twice = RunLoad(hand_trace("task_0001"))
    broken = CellLoad(hand_record("broken"), [twice, twice])
    results, coverage = load_experiment(
        db, [hand_cell(), broken], expected=[HAND, HAND_B, "broken"]
    )
    assert [r.cell_key for r in results] == [HAND]
    assert coverage.present == (HAND,)
    assert coverage.missing == (HAND_B, "broken")
    assert coverage.ratio == pytest.approx(1 / 3)
    assert coverage.failed_loads == {
        "broken": "cell broken, run #1 (task_0001 repeat 0): duplicate (task, repeat) in one cell"
    }
    _, coverage = load_experiment(db, [hand_cell_b()], expected=[HAND, HAND_B])
    assert coverage.ratio == 1.0 and coverage.failed_loads == {}
    conn = duckdb.connect(str(db))
    assert delete_cell(conn, HAND_B) > 0
    assert runs_per_cell(conn) == {HAND: 4}


def test_inconsistent_inputs_name_the_problem() -> None:
    conn = duckdb.connect(":memory:")
    item = hand_cell()
    first, second, *rest = item.runs
    swapped = [replace(first, score=second.score), replace(second, score=first.score), *rest]
    with pytest.raises(WarehouseInputError, match="the score is for task 'task_0002'"):
        load_cell(conn, replace(item, runs=swapped))
    other = hand_trace("task_0001").model_copy(
        update={"provenance": Provenance(cell_key="elsewhere")}
    )
    with pytest.raises(WarehouseInputError, match=r"provenance\.cell_key"):
        load_cell(conn, CellLoad(item.cell, [RunLoad(other)]))


def test_a_batch_that_fails_in_the_database_is_retried_cell_by_cell(tmp_path: Path) -> None:
    # The same cell twice in one batch collides on the primary key; one transaction per cell
    # then applies them in order, so the later one wins and nothing is duplicated.
    results, coverage = load_experiment(
        tmp_path / "w.duckdb", [hand_cell(recall_b=0.5), hand_cell(recall_b=0.0), hand_cell_b()]
    )
    assert [r.cell_key for r in results] == [HAND, HAND, HAND_B]
    assert coverage.failed_loads == {} and coverage.ratio == 1.0
    conn = duckdb.connect(str(tmp_path / "w.duckdb"))
    assert runs_per_cell(conn) == {HAND: 4, HAND_B: 2}
    assert _metric(conn, HAND, "minimal", "action_recall")["mean"] == pytest.approx(0.5)


def test_cell_coverage_reads_a_read_only_warehouse(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    with connect(db) as conn:
        load_cell(conn, hand_cell())
    with connect(db, read_only=True) as conn:
        coverage = cell_coverage(conn, ["absent", HAND])
    assert (coverage.present, coverage.missing, coverage.ratio) == ((HAND,), ("absent",), 0.5)
