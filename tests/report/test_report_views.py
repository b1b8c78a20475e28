"""The report's sections on the fixture warehouse: values worked out by hand from the fixture."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import duckdb
import pytest

from datagouv_eval_pipeline.pipeline.report import BuiltReport, build_report
from datagouv_eval_pipeline.pipeline.report.figures import CostPoint, pareto_front
from datagouv_eval_pipeline.pipeline.report.markdown import (
    power_sentence,
    render_markdown,
    tasks_needed,
    version_power_lines,
)
from datagouv_eval_pipeline.pipeline.report.views import (
    LATENCY_AXIS,
    NO_VERSION,
    Comparison,
    accuracy_power,
    cell_label,
)
from tests.report.report_helpers import FAILED_STAGE, QUARANTINED, FixtureWarehouse
from tests.warehouse.warehouse_factories import CODE, HAND, HAND_B, MCP_19, MCP_26


def test_pareto_front_keeps_only_undominated_points() -> None:
    points = [
        CostPoint("a", 1.0, 0.5),
        CostPoint("b", 2.0, 0.8),
        CostPoint("c", 2.0, 0.6),  # same cost as b, less accurate
        CostPoint("d", 3.0, 0.8),  # as accurate as b, dearer
        CostPoint("e", 0.5, 0.2),  # cheapest
    ]
    assert [p.label for p in pareto_front(points)] == ["e", "a", "b"]
    assert pareto_front([]) == []


def test_cell_labels_name_model_and_versioned_capabilities() -> None:
    row = {
        "model_name": "m",
        "capability_set": "mcp+skills",
        "mcp_version": "0.2.26",
        "skills_version": "0.0.1",
    }
    assert cell_label(row) == "m · mcp 0.2.26 + skills 0.0.1"
    assert cell_label({**row, "capability_set": "none", "mcp_version": None}) == "m · none"


def test_pivot_shows_mean_n_and_coverage_per_version(built_report: BuiltReport) -> None:
    pivot = built_report.view.pivots[0]
    assert pivot.metric == "accuracy"
    assert pivot.versions == ["0.2.19", "0.2.26", NO_VERSION]
    rows = {(r.model, r.capability_set): r.slots for r in pivot.rows}
    # hand cell: accuracies 1.0 and 0.5 scored, one unscored run, one errored run
    (hand,) = rows[("model-a", "none")][2]
    assert (hand.cell_key, hand.mean, hand.scored, hand.runs, hand.coverage) == (
        HAND,
        0.75,
        2,
        4,
        0.5,
    )
    # t interval of (1.0, 0.5): 0.75 ± t(0.975, 1) · 0.25 = 0.75 ± 3.18, clipped to [0, 1]
    assert (hand.low, hand.high) == (0.0, 1.0)
    assert rows[("model-a", "none")][0] == [] == rows[("model-a", "none")][1]
    (unjudged,) = rows[("model-b", "none")][2]
    assert (unjudged.mean, unjudged.scored, unjudged.runs) == (None, 0, 2)
    mcp = rows[("baseline-oneshot", "mcp")]
    assert [e.cell_key for e in mcp[0]] == [MCP_19]
    assert [e.cell_key for e in mcp[1]] == [MCP_26]
    assert (mcp[1][0].scored, mcp[1][0].runs) == (3, 4)  # the failed run is not scored
    # accuracies (1, 0, 1) are 0/1 outcomes: Wilson interval of 2/3 with n = 3,
    # centre (p + z²/2n) / (1 + z²/n), half-width z·sqrt(p(1-p)/n + z²/4n²) / (1 + z²/n)
    z, n, p = 1.959964, 3, 2 / 3
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * (p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5 / (1 + z * z / n)
    assert (mcp[1][0].low, mcp[1][0].high) == pytest.approx((centre - half, centre + half))
    assert (mcp[1][0].low, mcp[1][0].high) == pytest.approx((0.2077, 0.9385), abs=1e-4)
    (single,) = rows[("baseline-oneshot", "code")][2]
    assert (single.low, single.note) == (None, "fewer than 2 tasks scored")


def test_pivot_means_match_a_recomputation_from_eval_metrics(built_report: BuiltReport) -> None:
    db = built_report.view.data.db_path
    with duckdb.connect(str(db), read_only=True) as conn:
        expected = dict(
            conn.execute(
                "SELECT cell_key, avg(value) FROM eval.metrics WHERE metric = 'accuracy' "
                "AND tier = 'minimal' AND value IS NOT NULL GROUP BY cell_key"
            ).fetchall()
        )
    shown = {
        e.cell_key: e.mean
        for row in built_report.view.pivots[0].rows
        for slot in row.slots
        for e in slot
        if e.mean is not None
    }
    assert shown == pytest.approx(expected)


def test_comparisons_pair_cells_differing_in_one_dimension(built_report: BuiltReport) -> None:
    found = {(c.dimension, c.metric, c.cell_a, c.cell_b): c for c in built_report.view.comparisons}
    assert built_report.view.statistics
    versions = found[("mcp_version", "accuracy", MCP_19, MCP_26)]
    assert (versions.value_a, versions.value_b) == ("0.2.19", "0.2.26")
    # task_0002 (two repeats) and task_0011; task_0003 failed in 0.2.26
    assert (versions.paired_tasks, versions.pairs) == (2, 3)
    # the same answers in both versions: no difference, not significant
    assert (versions.paired_delta, versions.low, versions.high) == (0.0, 0.0, 0.0)
    assert versions.verdict == "no detectable difference"
    assert versions.p_adjusted == 1.0
    assert (MCP_26, MCP_19) not in {(c.cell_a, c.cell_b) for c in built_report.view.comparisons}
    models = found[("model", "accuracy", HAND, HAND_B)]
    assert (models.paired_tasks, models.verdict, models.note) == (
        0,
        None,
        "no run scored in both cells",
    )
    # Both hand cells ran task_0001 and task_0002: A scored accuracy on both, B (no judge)
    # on neither; the gap is said, not hidden behind "no run scored in both cells".
    assert (models.coverage_a, models.coverage_b) == (1.0, 0.0)
    assert models.coverage_note == (
        "coverage differs by more than 5%: runs scored 100% in a, 0% in b"
    )
    # The two MCP versions gave the same answers: the same coverage, nothing flagged.
    assert (versions.coverage_a, versions.coverage_b, versions.coverage_note) == (1.0, 1.0, None)
    assert versions.criterion_coverage_a == versions.criterion_coverage_b is not None
    # pairs that can be compared come first
    tasks = [c.paired_tasks for c in built_report.view.comparisons]
    assert tasks == sorted(tasks, key=lambda n: n == 0)


def test_cost_view_counts_correct_runs_and_falls_back_to_latency(
    built_report: BuiltReport,
) -> None:
    view = built_report.view
    assert view.cost_axis == LATENCY_AXIS  # no fixture model has a price
    rows = {row.cell_key: row for row in view.costs}
    hand = rows[HAND]
    assert (hand.runs, hand.priced_runs, hand.total_cost, hand.cost_per_correct) == (
        4,
        0,
        None,
        None,
    )
    assert hand.correct == 1  # only task_0001 passed every criterion
    assert hand.mean_latency_ms == 1000.0
    # model-a (1000 ms, 0.75) is faster and more accurate than every other scored cell
    assert [row.cell_key for row in view.costs if row.on_front] == [HAND]
    assert rows[HAND_B].mean_accuracy is None and not rows[HAND_B].on_front


def test_problems_list_quarantine_failed_runs_and_stages(built_report: BuiltReport) -> None:
    problems = {(p.kind, p.subject): p for p in built_report.view.problems}
    task_id, why = QUARANTINED
    assert problems[("quarantined", task_id)].reason == why
    assert problems[("error", HAND)].reason == "boom"
    assert problems[("error", MCP_26)].reason == "provider returned HTTP 500 three times"
    cell_key, stage, reason = FAILED_STAGE
    assert problems[(f"failed {stage}", cell_key)].reason.startswith(reason)
    assert ("error", MCP_19) not in problems and ("error", CODE) not in problems


def test_failure_heat_map_shares_are_of_scored_runs(built_report: BuiltReport) -> None:
    view = built_report.view
    db = view.data.db_path
    with duckdb.connect(str(db), read_only=True) as conn:
        present, scored = conn.execute(
            "SELECT count(*) FILTER (WHERE present), count(present) FROM eval.failure_modes "
            "WHERE cell_key = ? AND tier = 'minimal' AND mode = ?",
            [MCP_26, view.failure_modes[0]],
        ).fetchone() or (0, 0)
    row = view.failure_cells.index(MCP_26)
    assert scored > 0
    assert view.failure_shares[row][0] == pytest.approx(present / scored)


def test_calibration_is_reported_absent(built_report: BuiltReport) -> None:
    assert built_report.view.calibration is None
    assert "Absent: the warehouse holds no judge calibration results" in built_report.markdown


def test_without_statistics_the_report_says_so_and_shows_dbt_deltas(
    fixture_warehouse: FixtureWarehouse, tmp_path: Path
) -> None:
    db = tmp_path / "warehouse.duckdb"
    shutil.copy(fixture_warehouse.db, db)
    with duckdb.connect(str(db)) as conn:
        conn.execute("DELETE FROM eval.metric_estimates")
        conn.execute("DELETE FROM eval.comparisons")
    built = build_report(db, tmp_path / "out")
    assert not built.view.statistics
    (hand,) = next(r for r in built.view.pivots[0].rows if r.model == "model-a").slots[2]
    assert (hand.mean, hand.scored, hand.runs, hand.low) == (0.75, 2, 4, None)  # from dbt
    versions = next(c for c in built.view.comparisons if c.dimension == "mcp_version")
    assert (versions.paired_tasks, versions.paired_delta, versions.verdict) == (2, 0.0, None)
    assert "No statistics tables in the warehouse yet" in built.markdown
    page = built.page.read_text(encoding="utf-8")
    assert "no statistics tables yet" in page.replace("\n", " ")
    assert "<th>p (Holm)</th>" not in page


def _comparison(
    a: str, b: str, tasks: int, mde: float | None, metric: str = "accuracy"
) -> Comparison:
    return Comparison("mcp_version", metric, a, b, "x", "y", 0.0, 0.0, tasks, 0.0, mde=mde)


def test_the_power_summary_reads_the_stored_mdes_once_per_pair() -> None:
    comparisons = [
        _comparison("a", "b", 14, 0.38),
        _comparison("b", "a", 14, 0.38),  # the mirrored order counts once
        _comparison("a", "c", 12, 0.12),
        _comparison("b", "c", 11, 0.50),
        _comparison("a", "d", 14, None),  # identical outcomes: no MDE, still a pair
        _comparison("c", "d", 0, None),  # no paired task: not a comparison of power
        _comparison("a", "e", 14, 0.05, metric="action_f1"),  # another metric
    ]
    power = accuracy_power(comparisons)
    # Pairs with paired tasks: ab, ac, bc, ad = 4; MDEs 0.38, 0.12, 0.50 -> median 0.38.
    assert (power.comparisons, power.with_mde) == (4, 3)
    assert power.median == pytest.approx(0.38)
    assert power.low == pytest.approx(0.12) and power.high == pytest.approx(0.50)
    assert power.median_tasks == 12  # tasks of the pairs with an MDE: 14, 12, 11
    assert power.within_target == 1  # 0.12 <= 0.15
    sentence = power_sentence(power)
    assert "median **0.38** (from 0.12 to 0.50) over 3 of 4 pairs" in sentence
    assert "on a median of 12 paired tasks; 1 at or below the target 0.15" in sentence
    assert "The other 1 pairs" in sentence
    assert "none has outcomes" in power_sentence(accuracy_power([comparisons[4]]))


def test_tasks_needed_scales_the_mde_as_one_over_root_n() -> None:
    # MDE 0.20 on 49 tasks, observed 0.10: (0.20 / 0.10)² = 4 times the tasks = 196.
    assert tasks_needed(0.10, 0.20, 49) == 196
    # Negative differences count by size; 49 · (0.2 / 0.194)² = 52.08… → 53.
    assert tasks_needed(-0.194, 0.20, 49) == 53
    assert tasks_needed(0.0, 0.20, 49) is None
    assert tasks_needed(0.1, 0.2, 0) is None


def test_version_comparisons_without_a_difference_say_why(built_report: BuiltReport) -> None:
    def compared(
        delta: float, mde: float | None, verdict: str, dimension: str = "mcp_version"
    ) -> Comparison:
        return Comparison(
            dimension,
            "accuracy",
            MCP_19,
            MCP_26,
            "0.2.19",
            "0.2.26",
            0.1,
            0.2,
            49,
            delta,
            p_adjusted=0.057,
            verdict=verdict,
            mde=mde,
        )

    view = dataclasses.replace(
        built_report.view,
        comparisons=[
            compared(0.10, 0.20, "no detectable difference"),
            compared(0.25, 0.20, "no detectable difference"),
            compared(0.0, 0.20, "no detectable difference"),
            compared(0.30, 0.20, "better"),  # significant: nothing to explain
            compared(0.10, None, "no detectable difference"),  # no MDE: no figure to give
            compared(0.10, 0.20, "no detectable difference", dimension="skills_version"),
        ],
    )
    pair = f"{view.labels[MCP_19]} vs {view.labels[MCP_26]}"
    assert version_power_lines(view) == [
        f"{pair}: observed Δ +0.100 on 49 paired tasks, MDE 0.200 at 80 % power; a difference "
        "of this size needs about 196 paired tasks to be detected at the unadjusted 5 % level, "
        "more under Holm's adjustment (the MDE shrinks as 1/√tasks).",
        f"{pair}: observed Δ +0.250 on 49 paired tasks, MDE 0.200 at 80 % power; the "
        "difference exceeds the MDE but not the Holm-adjusted threshold (p 0.057): the other "
        "comparisons of the family raise it.",
        f"{pair}: observed Δ +0.000 on 49 paired tasks, MDE 0.200 at 80 % power; no "
        "difference observed, so no task count would show one.",
    ]
    markdown = render_markdown(view)
    assert "Why some MCP version pairs show no detectable difference:" in markdown
    assert "needs about 196 paired tasks" in markdown


def test_problems_count_unscored_ok_runs_and_undecided_criteria(built_report: BuiltReport) -> None:
    view = built_report.view
    unscored = {(p.subject, p.reason): p.count for p in view.problems if p.kind == "unscored run"}
    # hand-a's task_0002 ended ok with every verdict unscored; hand-b's two ok runs were never
    # judged: ok runs without an accuracy, which the old table left out.
    assert unscored == {(HAND, "all verdicts are unscored"): 1, (HAND_B, "not judged"): 2}
    undecided = [p for p in view.problems if p.kind.startswith("undecided ")]
    with duckdb.connect(str(view.data.db_path), read_only=True) as conn:
        (total,) = conn.execute(
            "SELECT count(*) FROM eval.verdicts WHERE tier = 'minimal' AND value IS NULL"
        ).fetchone() or (0,)
    assert sum(p.count for p in undecided) == total == 48
    criterion = [p for p in undecided if p.kind == "undecided criterion"]
    assert [(p.subject, p.count, p.reason) for p in criterion] == [
        ("1 cell(s)", 3, "unscored: hand")
    ]
    page = built_report.out_dir / "index.html"
    text = page.read_text(encoding="utf-8")
    assert "<strong>3</strong> unscored run" in text


def test_the_version_plot_uses_the_paired_runs_and_agrees_with_the_paired_test(
    fixture_warehouse: FixtureWarehouse, tmp_path: Path
) -> None:
    from datagouv_eval_pipeline.pipeline.report.data import load_report_data
    from datagouv_eval_pipeline.pipeline.report.views import build_view
    from datagouv_eval_pipeline.pipeline.warehouse.error_bars import compute_statistics

    db = tmp_path / "warehouse.duckdb"
    shutil.copy(fixture_warehouse.db, db)
    # 0.2.19 loses its task_0011 run (accuracy 1): it is scored on task_0002 only (1, 0), 0.2.26
    # on task_0002 (1, 0) and task_0011 (1). Own means 0.50 → 0.67 would read as a gain; on the
    # two paired runs both are 0.50, as the paired test says (Δ 0).
    with duckdb.connect(str(db)) as conn:
        (run_id,) = conn.execute(
            "SELECT run_id FROM eval.runs WHERE cell_key = ? AND task_id = 'task_0011'", [MCP_19]
        ).fetchone() or ("",)
        for table in ("metrics", "verdicts", "tool_calls", "failure_modes", "runs"):
            conn.execute(f"DELETE FROM eval.{table} WHERE run_id = ?", [run_id])
        compute_statistics(conn)
    view = build_view(load_report_data(db))
    own = [view.data.estimate(cell, "accuracy") or {} for cell in (MCP_19, MCP_26)]
    assert [e.get("mean") for e in own] == [pytest.approx(0.5), pytest.approx(2 / 3)]
    (line,) = view.version_lines
    assert [(p.version, p.mean) for p in line.points] == [("0.2.19", 0.5), ("0.2.26", 0.5)]
    older, newer = (p.mean or 0.0 for p in line.points)
    assert (line.paired, line.scored) == (2, {"0.2.19": 2, "0.2.26": 3})
    (test,) = [
        t
        for t in view.data.tests
        if (t["dimension"], t["metric"], t["tier"], t["cell_a"]) == (
            "mcp_version", "accuracy", "minimal", MCP_19,
        )
    ]  # fmt: skip
    assert test["mean_difference"] == pytest.approx(newer - older)
    assert line.caption == (
        "baseline-oneshot · mcp: 2 runs (task × repeat) scored at every version "
        "(scored runs per version: 0.2.19: 2, 0.2.26: 3)"
    )
