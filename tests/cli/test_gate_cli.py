"""``datagouv-eval gate``: the verdict on stdout, exit 1 on a regression (for CI)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from datagouv_eval_pipeline.cli import main
from tests.warehouse.test_warehouse_statistics import A_KEY, DECIDED, GOOD, _judged_runs, _two_runs


def _warehouse(tmp_path: Path, second_a: list[float | None]) -> Path:
    conn = _two_runs(tmp_path, second_a)
    conn.close()
    return tmp_path / "w.duckdb"


def test_identical_runs_pass_and_exit_zero(tmp_path: Path) -> None:
    db = _warehouse(tmp_path, list(GOOD))
    result = CliRunner().invoke(main, ["gate", "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("gate PASSED for experiment e2")
    assert "0 of 2 cell(s) worse" in result.output


def test_a_worse_cell_fails_naming_it_and_exits_one(tmp_path: Path) -> None:
    db = _warehouse(tmp_path, [0.0] * 10)
    result = CliRunner().invoke(main, ["gate", "--db", str(db), "--metric", "accuracy"])
    assert result.exit_code == 1
    assert "gate FAILED" in result.output and "1 of 2 cell(s) worse" in result.output
    assert f"{A_KEY} minimal accuracy [all]: 1.000 -> 0.000" in result.output
    # --against the run itself: nothing changed.
    same = CliRunner().invoke(
        main, ["gate", "--db", str(db), "--experiment", "e1", "--against", "e1"]
    )
    assert same.exit_code == 0, same.output
    report = json.loads(
        CliRunner().invoke(main, ["gate", "--db", str(db), "--json", "--min-drop", "1.5"]).output
    )
    assert report["passed"] is True and report["experiment_id"] == "e2"


def test_clear_errors_without_a_warehouse_or_with_an_unknown_run(tmp_path: Path) -> None:
    missing = CliRunner().invoke(main, ["gate", "--db", str(tmp_path / "none.duckdb")])
    assert missing.exit_code == 1 and "no warehouse yet" in missing.output
    db = _warehouse(tmp_path, list(GOOD))
    unknown = CliRunner().invoke(main, ["gate", "--db", str(db), "--against", "nope"])
    assert unknown.exit_code == 1 and "unknown experiment 'nope'" in unknown.output
    assert "Traceback" not in unknown.output


def test_a_judge_outage_exits_three_not_comparable_and_a_regression_still_exits_one(
    tmp_path: Path,
) -> None:
    # Same agents twice; the second time the judge's model answered garbage: one rule-decided
    # criterion per task, failed (accuracy 1 -> 0, coverage 1 -> 0.5).
    outage = tmp_path / "outage"
    outage.mkdir()
    _judged_runs(outage, [[False, None]] * 10, [[None, None]] * 10).close()
    result = CliRunner().invoke(main, ["gate", "--db", str(outage / "w.duckdb")])
    assert result.exit_code == 3, result.output
    assert result.output.startswith("gate NOT COMPARABLE for experiment e2")
    assert f"{A_KEY} minimal accuracy [all]: not comparable: coverage fell from 1.00 to 0.50" in (
        result.output
    )
    report = json.loads(
        CliRunner().invoke(main, ["gate", "--db", str(outage / "w.duckdb"), "--json"]).output
    )
    assert (report["outcome"], report["failed_cells"]) == ("not comparable", [])
    # With a tolerance that covers the fall, the comparison is made, and it fails.
    lenient = CliRunner().invoke(
        main, ["gate", "--db", str(outage / "w.duckdb"), "--coverage-tolerance", "0.5"]
    )
    assert lenient.exit_code == 1 and "gate FAILED" in lenient.output
    # Same judge, every criterion decided: an agent made worse fails the gate.
    worse = tmp_path / "worse"
    worse.mkdir()
    _judged_runs(worse, [[False, False]] * 10, DECIDED).close()
    failed = CliRunner().invoke(main, ["gate", "--db", str(worse / "w.duckdb")])
    assert failed.exit_code == 1 and "1 of 2 cell(s) worse, 0 not comparable" in failed.output
