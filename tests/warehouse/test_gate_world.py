"""The gate does not compare two runs of a cell that met another world (snapshot or twin code).

Hand-built runs on a real DuckDB file: the same agent, made worse, against the same world fails
the gate; against another catalog snapshot or other twin/toolset code it is "not comparable:
the world changed", in the report, its summary lines and ``eval.gate_results``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb

from datagouv_eval_pipeline.pipeline.report.changes import history_view
from datagouv_eval_pipeline.pipeline.report.data import ReportData
from datagouv_eval_pipeline.pipeline.warehouse import CellLoad, connect, load_experiment
from datagouv_eval_pipeline.pipeline.warehouse.gate import (
    NOT_COMPARABLE,
    PASSED,
    WORLD_CHANGED,
    WORSE,
    GateSettings,
    evaluate_gate,
    read_gate_results,
    summary_lines,
    write_gate_results,
)
from tests.warehouse.test_warehouse_statistics import A_KEY, B_KEY, GOOD, experiment, graded_cell

WORSE_A = [0.0] * 8 + [1.0, 1.0]
"""8 of 10 tasks lost: a significant drop (McNemar p = 2 / 2^8, Holm x 3 = 0.0234)."""
TWIN_1, TWIN_2 = "1" * 64, "2" * 64
SETTINGS = GateSettings(metrics=("accuracy",))


def rows_of(conn: duckdb.DuckDBPyConnection, sql: str) -> list[dict[str, Any]]:
    cursor = conn.execute(sql)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def world_cell(
    model: str, accuracy: Sequence[float | None], snapshot: str | None, toolsets: str | None
) -> CellLoad:
    """A graded cell whose runs met ``snapshot`` and twin/toolset code ``toolsets``."""
    load = graded_cell(model, accuracy)
    world = {"snapshot_id": snapshot, "toolset_version": toolsets}
    runs = [
        dataclasses.replace(
            run,
            trace=run.trace.model_copy(
                update={"provenance": run.trace.provenance.model_copy(update=world)}
            ),
        )
        for run in load.runs
    ]
    return dataclasses.replace(load, runs=runs)


def _runs(
    tmp_path: Path,
    second: tuple[str | None, str | None],
    first: tuple[str | None, str | None] = ("snap-1", TWIN_1),
) -> duckdb.DuckDBPyConnection:
    """e1: both cells good; e2: model-a made worse in world ``second``, model-b as in e1."""
    conn = connect(tmp_path / "w.duckdb")
    load_experiment(
        conn,
        [world_cell("model-a", GOOD, *first), world_cell("model-b", GOOD, *first)],
        experiment=experiment("e1", 0),
    )
    load_experiment(
        conn,
        [world_cell("model-a", WORSE_A, *second), world_cell("model-b", GOOD, *first)],
        experiment=experiment("e2", 5),
    )
    return conn


def test_a_worse_agent_in_the_same_world_still_fails(tmp_path: Path) -> None:
    report = evaluate_gate(_runs(tmp_path, ("snap-1", TWIN_1)), settings=SETTINGS)
    assert report.failed_cells == [A_KEY] and report.world_changed_cells == []
    assert report.cell_outcome(A_KEY) == WORSE and report.cell_outcome(B_KEY) == PASSED


def test_other_twin_code_under_the_same_cell_key_is_not_comparable(tmp_path: Path) -> None:
    conn = _runs(tmp_path, ("snap-1", TWIN_2))
    report = evaluate_gate(conn, settings=SETTINGS)
    assert report.passed and report.failed_cells == []
    assert report.outcome == NOT_COMPARABLE
    assert report.world_changed_cells == [A_KEY]
    assert report.cell_outcome(A_KEY) == WORLD_CHANGED
    assert report.cell_outcome(B_KEY) == PASSED
    mine = [c for c in report.comparisons if c.cell_key == A_KEY]
    # Every comparison of the cell, the share of runs scored too: no verdict, no Holm p.
    assert {(c.tier, c.metric) for c in mine} == {
        ("minimal", "accuracy"),
        ("optimal", "accuracy"),
        ("all", "scored"),
    }
    assert all(c.world_changed and not c.comparable and not c.failed for c in mine)
    assert {(c.verdict, c.p_adjusted) for c in mine} == {(None, None)}
    reason = "not comparable: the world changed: twin/toolset code 111111111111 → 222222222222"
    assert {c.reason for c in mine} == {reason}
    # The figures stay, for whoever wants to see what moved: 1.0 -> 0.2 on 10 pairs.
    accuracy = next(c for c in mine if c.tier == "minimal")
    assert (accuracy.pairs, accuracy.mean_previous, accuracy.mean_current) == (10, 1.0, 0.2)

    lines = summary_lines(report)
    assert lines[0].startswith(
        "gate NOT COMPARABLE for experiment e2 against each cell's previous run: "
        "0 of 2 cell(s) worse, 1 not comparable (1 because the world changed)"
    )
    # One line for the cell, not one per comparison.
    assert lines[1:] == [f"  {A_KEY}: {reason}"]

    write_gate_results(conn, report)
    stored = read_gate_results(conn)
    assert {(r["cell_key"], r["world_changed"]) for r in stored} == {
        (A_KEY, True),
        (B_KEY, False),
    }
    # The report's history section reads the stored rows and names the cell and why.
    experiments = rows_of(conn, "SELECT * FROM eval.experiments ORDER BY recorded_at")
    conn.close()
    empty: dict[str, list[dict[str, Any]]] = {}
    data = ReportData(
        tmp_path / "w.duckdb", {}, {}, [], empty, empty, empty, empty, {}, [], [], {}, [],
        frozenset(), experiments=experiments, gate=stored,
    )  # fmt: skip
    view = history_view(data, {})
    assert view is not None and view.world_changed == [(A_KEY, reason)]
    assert view.decision == lines[0]


def test_another_snapshot_is_not_comparable_and_says_which(tmp_path: Path) -> None:
    report = evaluate_gate(_runs(tmp_path, ("snap-2", TWIN_1)), settings=SETTINGS)
    assert report.failed_cells == [] and report.world_changed_cells == [A_KEY]
    reasons = {c.reason for c in report.comparisons if c.cell_key == A_KEY}
    assert reasons == {"not comparable: the world changed: snapshot snap-1 → snap-2"}
    # A live run (no snapshot) against a twin run is another world too.
    live = evaluate_gate(_runs(tmp_path / "live", (None, TWIN_1)), settings=SETTINGS)
    assert {c.reason for c in live.comparisons if c.cell_key == A_KEY} == {
        "not comparable: the world changed: snapshot snap-1 → live"
    }


def test_runs_recorded_before_the_toolset_version_compare_on_the_snapshot(
    tmp_path: Path,
) -> None:
    # Unknown twin code on one side: nothing says the world changed, so the drop fails.
    report = evaluate_gate(
        _runs(tmp_path, ("snap-1", TWIN_2), first=("snap-1", None)), settings=SETTINGS
    )
    assert report.failed_cells == [A_KEY] and report.world_changed_cells == []
