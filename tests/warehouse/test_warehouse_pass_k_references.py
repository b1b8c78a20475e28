"""eval.pass_k (tasks run more than once) and eval.references (the number each value check used)."""

from __future__ import annotations

from pathlib import Path

import pytest

from datagouv_eval_pipeline.core.metrics.score_record import ScoreRecord
from datagouv_eval_pipeline.pipeline.warehouse import CellLoad, RunLoad, connect, load_cell
from tests.warehouse.warehouse_factories import hand_judgement, hand_record, hand_score, hand_trace


def test_pass_k_per_task_from_the_repeats(tmp_path: Path) -> None:
    # task_0001 run 4 times: criteria [T, T] (accuracy 1, all decided: a pass), [T, F]
    # (accuracy 0.5), [T, None] (accuracy 1 over the one decided criterion: not a pass) and
    # [None, None] (accuracy undecided: out of n) -> runs=4, n=3, c=1.
    #   pass@1 = 1/3, pass@2 = 1 - C(2,2)/C(3,2) = 2/3, pass@3 = 1, pass@4 NULL (k > n)
    #   pass^1 = 1/3, pass^2 = C(1,2)/C(3,2) = 0, pass^3 = 0
    # task_0002 run once: no pass_k rows.
    criteria: list[list[bool | None]] = [[True, True], [True, False], [True, None], [None, None]]
    criteria.append([True])
    traces = [hand_trace("task_0001", repeat=r) for r in range(4)] + [hand_trace("task_0002")]
    runs = [
        RunLoad(t, score=hand_score(t.task_id, 1.0, 1), judgement=hand_judgement(t.task_id, c))
        for t, c in zip(traces, criteria, strict=True)
    ]
    conn = connect(tmp_path / "w.duckdb")
    load_cell(conn, CellLoad(hand_record(), runs))
    rows = conn.execute(
        "SELECT task_id, k, runs, n, c, pass_at_k, pass_hat_k, reason FROM eval.pass_k "
        "WHERE tier = 'minimal' ORDER BY task_id, k"
    ).fetchall()
    assert [r[:5] for r in rows] == [("task_0001", k, 4, 3, 1) for k in (1, 2, 3, 4)]
    assert [r[5] for r in rows] == pytest.approx([1 / 3, 2 / 3, 1.0, None])
    assert [r[6] for r in rows] == pytest.approx([1 / 3, 0.0, 0.0, None])
    note = "1 run(s) with accuracy 1 had undecided criteria: not counted as passed"
    assert [r[7] for r in rows] == [note, note, note, f"k=4 is more than the 3 runs; {note}"]


def test_references_rows_say_which_number_was_compared(tmp_path: Path) -> None:
    score = hand_score("task_0001", 1.0, 1).model_dump(mode="json")
    score["checks"]["value"]["details"] = {
        "expected": {
            "gers": {
                "value": 1031,
                "tolerance": 0.0,
                "spec_value": 1023,
                "source": "twin twin-x (Tabular API http://127.0.0.1/tabular/api/)",
                "reference_error": None,
            },
            "autre": {"value": 12, "tolerance": 1.0},
        },
        "found": {"gers": "1 031", "autre": None},
    }
    conn = connect(tmp_path / "w.duckdb")
    run = RunLoad(hand_trace("task_0001"), score=ScoreRecord.model_validate(score))
    load_cell(conn, CellLoad(hand_record(), [run]))
    rows = conn.execute(
        "SELECT name, value, spec_value, recomputed, changed, found, source "
        "FROM eval.references ORDER BY name"
    ).fetchall()
    assert rows == [
        ("autre", 12.0, 12.0, False, False, None, "task spec"),
        (
            "gers",
            1031.0,
            1023.0,
            True,
            True,
            "1 031",
            "twin twin-x (Tabular API http://127.0.0.1/tabular/api/)",
        ),
    ]
