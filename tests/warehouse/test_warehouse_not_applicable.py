"""A run without any tool: usage, trajectory and TOOL_OMISSION are NULL "not applicable", not 0.

Real example traces through the real mapper, scorer, deterministic judge and loader, into a real
DuckDB file; then the statistics stage, whose capability comparison must not call the tool-less
cell "worse" on a trajectory it could not have.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from datagouv_eval_pipeline.pipeline.warehouse import connect, load_experiment
from datagouv_eval_pipeline.pipeline.warehouse.error_bars import compute_statistics
from tests.warehouse.warehouse_factories import cell_load, cells, trace_for

NONE = "offline~baseline-oneshot__none__data_gouv_context"
CODE = "offline~baseline-oneshot__code__data_gouv_context"
REASON = "not applicable: no tool available (capability set none)"


def test_a_tool_less_cell_is_not_applicable_and_never_worse(tmp_path: Path) -> None:
    none, code = cells()[NONE], cells()[CODE]
    tool_less = [
        trace_for(none, "task_0002_code.json", repeat=r, tool_calls=[], turns=[]) for r in range(3)
    ]
    with_code = [trace_for(code, "task_0002_code.json", repeat=r) for r in range(3)]
    conn = connect(tmp_path / "w.duckdb")
    load_experiment(conn, [cell_load(none, tool_less), cell_load(code, with_code)])
    metrics = conn.execute(
        "SELECT DISTINCT metric, value, reason FROM eval.metrics WHERE cell_key = ? AND metric IN "
        "('action_recall', 'action_f1', 'action_precision', 'trajectory_adherence', "
        "'judged_action_recall', 'judged_action_f1') ORDER BY metric",
        [NONE],
    ).fetchall()
    assert metrics == [
        ("action_f1", None, REASON),
        ("action_precision", None, REASON),
        ("action_recall", None, REASON),
        ("judged_action_f1", None, REASON),
        ("judged_action_recall", None, REASON),
        ("trajectory_adherence", None, REASON),
    ]
    # TOOL_OMISSION: not applicable in every run and tier (3 runs x 2 tiers), never present.
    omission = conn.execute(
        "SELECT status, present, reason, count(*) FROM eval.failure_modes "
        "WHERE cell_key = ? AND mode = 'TOOL_OMISSION' GROUP BY ALL",
        [NONE],
    ).fetchall()
    assert omission == [("not_applicable", None, REASON, 6)]
    verdicts = conn.execute(
        "SELECT kind, status, value, count(*) FROM eval.verdicts "
        "WHERE cell_key = ? AND kind = 'trajectory' GROUP BY ALL",
        [NONE],
    ).fetchall()
    assert verdicts == [("trajectory", "not_applicable", None, 6)]
    # The code cell is scored as before: it acted, its trajectory is a number.
    (code_trajectory,) = conn.execute(
        "SELECT DISTINCT value FROM eval.metrics WHERE cell_key = ? AND tier = 'minimal' "
        "AND metric = 'trajectory_adherence'",
        [CODE],
    ).fetchall()
    assert code_trajectory[0] is not None
    # none vs code: nothing to pair on usage or trajectory, so no verdict (was "worse").
    compute_statistics(conn)
    compared = conn.execute(
        "SELECT DISTINCT metric, pairs, verdict FROM eval.comparisons "
        "WHERE dimension = 'capability_set' AND metric IN ('trajectory_adherence', 'action_f1', "
        "'action_recall') ORDER BY metric",
    ).fetchall()
    assert compared == [
        ("action_f1", 0, None),
        ("action_recall", 0, None),
        ("trajectory_adherence", 0, None),
    ]


def test_dbt_builds_on_a_tool_less_cell(tmp_path: Path) -> None:
    # `./dev run` failed at dbt: failure_mode_counts_add_up counted present + absent + unscored
    # against runs, and TOOL_OMISSION's not-applicable runs are none of the three.
    from tests.dbt.dbt_helpers import rows, run_dbt, warehouse_env

    none, code = cells()[NONE], cells()[CODE]
    tool_less = [
        trace_for(none, "task_0002_code.json", repeat=r, tool_calls=[], turns=[]) for r in range(3)
    ]
    with_code = [trace_for(code, "task_0002_code.json", repeat=r) for r in range(3)]
    db = tmp_path / "w.duckdb"
    conn = connect(db)
    try:
        load_experiment(conn, [cell_load(none, tool_less), cell_load(code, with_code)])
        compute_statistics(conn)
    finally:
        conn.close()
    with warehouse_env(db):
        result = run_dbt(["build"], tmp_path)
    assert result.exception is None
    nodes: Any = result.result
    failed = [r.node.name for r in nodes or [] if str(r.status) not in ("pass", "success")]
    assert result.success, failed
    counts = rows(
        db,
        "SELECT tier, runs, present, absent, unscored, not_applicable "
        "FROM main.failure_mode_counts WHERE cell_key = ? AND mode = 'TOOL_OMISSION' "
        "ORDER BY tier",
        [NONE],
    )
    assert counts == [("minimal", 3, 0, 0, 0, 3), ("optimal", 3, 0, 0, 0, 3)]
