"""The history section after two recorded runs: each cell's trend and the run-over-run change.

The warehouse holds two experiments loaded and gated as the pipeline does it (real DuckDB, real
dbt): model-a answers 10 of 10 tasks right, then 0 of 10; model-b 10 of 10 twice; model-c is new.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from datagouv_eval_pipeline.pipeline.report import BuiltReport, build_report
from tests.report.report_helpers import build_history_warehouse

A, B, C = (f"hand~model-{m}__none__p" for m in "abc")


@pytest.fixture(scope="module")
def history_report(tmp_path_factory: pytest.TempPathFactory) -> BuiltReport:
    root = tmp_path_factory.mktemp("history")
    db = build_history_warehouse(root)
    return build_report(db, root / "report")


def test_each_cell_has_its_trend_over_the_two_runs(history_report: BuiltReport) -> None:
    history = history_report.view.history
    assert history is not None
    assert [e["experiment_id"] for e in history.experiments] == ["e1", "e2"]
    labels = history_report.view.labels
    trend = {
        label: [(p.experiment_id, p.mean, p.scored) for p in points]
        for label, points in history.series["accuracy"]
    }
    assert trend == {
        labels[A]: [("e1", 1.0, 10), ("e2", 0.0, 10)],
        labels[B]: [("e1", 1.0, 10), ("e2", 1.0, 10)],
        labels[C]: [("e2", 1.0, 10)],
    }
    # Every point has its interval: Wilson on 10 tasks at 0 and at 1 (worked out: 1 - 0.722).
    (_, a_points) = next(line for line in history.series["accuracy"] if line[0] == labels[A])
    assert a_points[0].ci_high == pytest.approx(1.0)
    assert a_points[0].ci_low == pytest.approx(0.7225, abs=1e-3)
    assert a_points[1].ci_low == pytest.approx(0.0, abs=1e-12)
    assert history.task_notes == []  # the same 10 tasks at every point
    assert history_report.figures.trend_accuracy is not None
    assert history_report.figures.trend_action_f1 is not None


def test_the_run_over_run_change_and_the_gate_decision(history_report: BuiltReport) -> None:
    history = history_report.view.history
    assert history is not None
    assert history.decision is not None
    assert history.decision.startswith("gate FAILED for experiment e2 against each cell's")
    assert [e["experiment_id"] for e in history.previous] == ["e1"]
    assert history.first_run == [C]
    (worse,) = [c for c in history.worse if c.metric == "accuracy"]
    assert (worse.cell_key, worse.previous, worse.current, worse.difference) == (A, 1.0, 0.0, -1.0)
    assert (worse.verdict, worse.pairs) == ("worse", 10)
    same = [c for c in history.changes if c.cell_key == B and c.metric == "accuracy"]
    assert [(c.difference, c.verdict, c.failed) for c in same] == [
        (0.0, "no detectable difference", False)
    ]
    assert history.setup == []  # the same code, configuration and judge


def test_the_page_and_the_markdown_show_the_history(history_report: BuiltReport) -> None:
    page = (history_report.out_dir / "index.html").read_text(encoding="utf-8")
    assert '<h2 id="history">' in page
    assert "gate FAILED for experiment e2" in page
    assert 'alt="Mean accuracy per cell over the recorded experiments"' in page
    assert "Every cell's points rest on the same tasks." in page
    markdown = history_report.markdown
    assert "## History" in markdown
    labels = history_report.view.labels
    assert f"- {labels[A]}: 1.00 → 0.00" in markdown
    assert f"- {labels[B]}: 1.00 → 1.00" in markdown
    assert f"Run for the first time (nothing to compare): {labels[C]}." in markdown
    assert "| accuracy | minimal | 1.00 | 0.00 | -1.00 |" in markdown


def test_a_warehouse_without_history_says_so(built_report: BuiltReport) -> None:
    # The shared fixture loads without an experiment record.
    assert built_report.view.history is None
    page = (built_report.out_dir / "index.html").read_text(encoding="utf-8")
    assert "there is no earlier run to compare with" in page


def test_one_recorded_run_says_the_trend_starts_with_the_next(tmp_path: Path) -> None:
    from datagouv_eval_pipeline.pipeline.warehouse import connect, load_experiment
    from datagouv_eval_pipeline.pipeline.warehouse.gate import evaluate_gate, write_gate_results
    from tests.report.report_helpers import dbt_run
    from tests.warehouse.test_warehouse_statistics import GOOD, experiment, graded_cell

    db = tmp_path / "warehouse.duckdb"
    conn = connect(db)
    load_experiment(conn, [graded_cell("model-a", GOOD)], experiment=experiment("e1", 0))
    write_gate_results(conn, evaluate_gate(conn))
    conn.close()
    dbt_run(db, tmp_path)
    built = build_report(db, tmp_path / "report")
    assert built.view.history is not None
    assert built.view.history.decision == (
        "gate: nothing to compare for experiment e1: each of its 1 cell(s) runs for the first time"
    )
    assert built.figures.trend_accuracy is None
    page = (built.out_dir / "index.html").read_text(encoding="utf-8")
    assert "One experiment recorded: the trend plots start with the next run." in page
