"""History, error bars, paired comparisons and the gate, on a real DuckDB file."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest
from scipy import stats as scipy_stats  # type: ignore[import-untyped]

from datagouv_eval_pipeline.core.judges.judgement_record import JudgementRecord
from datagouv_eval_pipeline.core.tasks.spec import TaskSpec
from datagouv_eval_pipeline.pipeline.warehouse import CellLoad, connect, load_experiment
from datagouv_eval_pipeline.pipeline.warehouse.error_bars import compute_statistics
from datagouv_eval_pipeline.pipeline.warehouse.gate import (
    NOT_COMPARABLE,
    SCORED,
    WORSE,
    GateError,
    GateSettings,
    evaluate_gate,
    read_gate_results,
    summary_lines,
    write_gate_results,
)
from datagouv_eval_pipeline.pipeline.warehouse.history import (
    ExperimentRecord,
    config_hash,
    previous_runs_of_cells,
)
from tests.warehouse.warehouse_factories import hand_record, hand_run, hand_trace

T0 = datetime(2026, 11, 30, 10, tzinfo=UTC)


def graded_cell(
    model: str, accuracy: Sequence[float | None], recall: Sequence[float | None] | None = None
) -> CellLoad:
    """One cell of a hand model: task i has the given accuracy (one criterion) and recall."""
    key = f"hand~{model}__none__p"
    tasks = [f"task_{i + 1:04d}" for i in range(len(accuracy))]
    recalls = recall if recall is not None else [1.0] * len(tasks)
    return CellLoad(
        hand_record(key, model),
        [
            hand_run(task, [None if a is None else a == 1.0], recall=r)
            for task, a, r in zip(tasks, accuracy, recalls, strict=True)
        ],
    )


def experiment(name: str, minutes: int) -> ExperimentRecord:
    return ExperimentRecord(
        experiment_id=name,
        config_hash=config_hash([{"key": "c"}], {"task_0001": "h"}),
        dagster_run_id=name,
        recorded_at=T0 + timedelta(minutes=minutes),
        git_sha="abc1234",
        git_dirty=False,
        code_version="0.1.0",
    )


def rows(conn: duckdb.DuckDBPyConnection, sql: str, *params: object) -> list[tuple[object, ...]]:
    return conn.execute(sql, list(params)).fetchall()


GOOD = [1.0] * 10
A_KEY = "hand~model-a__none__p"
B_KEY = "hand~model-b__none__p"


def test_each_load_is_an_experiment_and_earlier_rows_are_kept(tmp_path: Path) -> None:
    conn = connect(tmp_path / "w.duckdb")
    load_experiment(conn, [graded_cell("model-a", GOOD)], experiment=experiment("e1", 0))
    load_experiment(conn, [graded_cell("model-a", [0.0] * 10)], experiment=experiment("e2", 5))
    # The latest rows: one run per task, accuracy 0 now.
    assert rows(conn, "SELECT count(*) FROM eval.runs") == [(10,)]
    assert rows(
        conn, "SELECT avg(value) FROM eval.metrics WHERE metric = 'accuracy' AND tier = 'minimal'"
    ) == [(0.0,)]
    # Earlier runs stay queryable by experiment.
    assert rows(
        conn,
        "SELECT experiment_id, count(*), avg(value) FROM eval.metrics_history "
        "WHERE metric = 'accuracy' AND tier = 'minimal' GROUP BY ALL ORDER BY ALL",
    ) == [("e1", 10, 1.0), ("e2", 10, 0.0)]
    assert rows(
        conn,
        "SELECT experiment_id, dagster_run_id, git_sha, git_dirty, judge_ids, cells_loaded, "
        "cells_failed, runs FROM eval.experiments ORDER BY recorded_at",
    ) == [
        ("e1", "e1", "abc1234", False, "hand@1", 1, 0, 10),
        ("e2", "e2", "abc1234", False, "hand@1", 1, 0, 10),
    ]
    assert previous_runs_of_cells(conn, "e2") == {A_KEY: "e1"}
    assert previous_runs_of_cells(conn, "e1") == {A_KEY: None}
    # Re-loading within one experiment replaces its history rows, never duplicates them.
    load_experiment(conn, [graded_cell("model-a", [0.0] * 10)], experiment=experiment("e2", 5))
    assert rows(conn, "SELECT count(*) FROM eval.runs_history") == [(20,)]


def test_estimates_carry_n_coverage_and_a_wilson_interval(tmp_path: Path) -> None:
    conn = connect(tmp_path / "w.duckdb")
    load_experiment(conn, [graded_cell("model-a", [1, 0, 1, 1, None])])
    result = compute_statistics(conn)
    assert result.estimates > 0
    found = rows(
        conn,
        "SELECT runs, n, tasks, coverage, mean, interval_method, ci_low, ci_high "
        "FROM eval.metric_estimates WHERE scope = 'cell' AND cell_key = ? "
        "AND tier = 'minimal' AND metric = 'accuracy'",
        A_KEY,
    )
    # 3 of 4 scored runs pass, the fifth is unscored: Wilson(0.75, 4) as worked out in
    # tests/metrics/test_statistics.py.
    (runs, n, tasks, coverage, mean, method, low, high) = found[0]
    assert (runs, n, tasks, coverage, mean, method) == (5, 4, 4, 0.8, 0.75, "wilson")
    assert (low, high) == pytest.approx((0.300639, 0.954409), abs=1e-5)
    # Every averaged metric has its estimate per scope; the language of unknown tasks is kept.
    scopes = rows(conn, "SELECT DISTINCT scope, language FROM eval.metric_estimates ORDER BY ALL")
    assert scopes == [
        ("capability_set", "all"),
        ("cell", "all"),
        ("cell_language", "unknown"),
        ("language", "unknown"),
    ]


def test_comparisons_pair_by_task_with_mcnemar_and_a_mirrored_verdict(tmp_path: Path) -> None:
    conn = connect(tmp_path / "w.duckdb")
    a = graded_cell("model-a", [1, 1, 1, 1, 1, 1, 0, 0, 1])
    b = graded_cell("model-b", [0, 0, 0, 0, 0, 0, 0, 1, None])
    load_experiment(conn, [a, b])
    compute_statistics(conn)
    found = rows(
        conn,
        "SELECT cell_a, dimension, value_a, value_b, pairs, mean_difference, test, p_value, "
        "family_size, p_adjusted, verdict FROM eval.comparisons "
        "WHERE tier = 'minimal' AND metric = 'accuracy' ORDER BY cell_a",
    )
    # Task 9 is unscored in b: 8 pairs; 6 a-only passes, 1 b-only: p = 2 x 8 / 128 = 0.125.
    assert found == [
        (A_KEY, "model", "hand/model-a", "hand/model-b", 8, pytest.approx(-0.625),
         "mcnemar_exact", pytest.approx(0.125), 1, pytest.approx(0.125),
         "no detectable difference"),
        (B_KEY, "model", "hand/model-b", "hand/model-a", 8, pytest.approx(0.625),
         "mcnemar_exact", pytest.approx(0.125), 1, pytest.approx(0.125),
         "no detectable difference"),
    ]  # fmt: skip


def criteria_cell(model: str, criteria: Sequence[Sequence[bool | None]]) -> CellLoad:
    """One cell of a hand model: task i has the given criterion verdicts (None: undecided)."""
    key = f"hand~{model}__none__p"
    tasks = [f"task_{i + 1:04d}" for i in range(len(criteria))]
    return CellLoad(
        hand_record(key, model),
        [hand_run(task, list(c)) for task, c in zip(tasks, criteria, strict=True)],
    )


def test_comparisons_carry_each_sides_coverage_and_flag_a_gap(tmp_path: Path) -> None:
    conn = connect(tmp_path / "w.duckdb")
    # a decides one criterion of three on every task (coverage 1/3, accuracy 1); b decides all
    # three on tasks 1-5 (accuracy 2/3) and none on task 6 (accuracy not scored).
    a = criteria_cell("model-a", [[True, None, None]] * 6)
    b = criteria_cell("model-b", [[True, False, True]] * 5 + [[None, None, None]])
    load_experiment(conn, [a, b])
    compute_statistics(conn)
    found = rows(
        conn,
        "SELECT cell_a, runs, pairs, coverage_a, coverage_b, criterion_coverage_a, "
        "criterion_coverage_b, coverage_differs, coverage_note FROM eval.comparisons "
        "WHERE tier = 'minimal' AND metric = 'accuracy' ORDER BY cell_a",
    )
    # 6 runs in both cells; b scored 5 of them; over the 5 compared runs a decided 1/3 of its
    # criteria, b all of them.
    assert found == [
        (A_KEY, 6, 5, 1.0, pytest.approx(5 / 6), pytest.approx(1 / 3), 1.0, True,
         "coverage differs by more than 5%: runs scored 100% in a, 83% in b; "
         "criteria decided 33% in a, 100% in b"),
        (B_KEY, 6, 5, pytest.approx(5 / 6), 1.0, 1.0, pytest.approx(1 / 3), True,
         "coverage differs by more than 5%: runs scored 83% in a, 100% in b; "
         "criteria decided 100% in a, 33% in b"),
    ]  # fmt: skip
    # A metric both sides scored on every run, without criteria: nothing to flag.
    assert rows(
        conn,
        "SELECT DISTINCT runs, coverage_a, coverage_b, criterion_coverage_a, coverage_differs, "
        "coverage_note FROM eval.comparisons WHERE tier = 'minimal' AND metric = 'action_recall'",
    ) == [(6, 1.0, 1.0, None, False, None)]


def test_a_raw_difference_lost_to_holm_is_explained(tmp_path: Path) -> None:
    conn = connect(tmp_path / "w.duckdb")
    # a passes 6 of 10 tasks, b and c none: a vs b and a vs c have 6 discordant pairs all one
    # way, p = 2 / 64 = 0.03125 each; b vs c, p = 1. Holm over the 3: 3 x 0.03125 = 0.09375.
    load_experiment(
        conn,
        [
            graded_cell("model-a", [1.0] * 6 + [0.0] * 4),
            graded_cell("model-b", [0.0] * 10),
            graded_cell("model-c", [0.0] * 10),
        ],
    )
    compute_statistics(conn)
    found = rows(
        conn,
        "SELECT cell_b, p_value, p_adjusted, verdict, verdict_note, mde, mde_method "
        "FROM eval.comparisons WHERE tier = 'minimal' AND metric = 'accuracy' AND cell_a = ? "
        "ORDER BY cell_b",
        A_KEY,
    )
    note = "significant before adjustment (p=0.0312), not after Holm over 3 comparisons (p=0.0938)"
    # MDE: 6 discordant of 10 runs, q^6 + (1 - q)^6 = 0.8: 0.6 x (2 x 0.8^(1/6) - 1).
    mde = pytest.approx(0.6 * (2 * 0.8 ** (1 / 6) - 1), abs=1e-8)
    assert found == [
        (B_KEY, pytest.approx(0.03125), pytest.approx(0.09375), "no detectable difference", note,
         mde, "mcnemar_exact"),
        ("hand~model-c__none__p", pytest.approx(0.03125), pytest.approx(0.09375),
         "no detectable difference", note, mde, "mcnemar_exact"),
    ]  # fmt: skip
    # b and c are identical: no note, no discordant pair, no MDE and why.
    assert rows(
        conn,
        "SELECT verdict, verdict_note, mde, mde_method, reason FROM eval.comparisons "
        "WHERE tier = 'minimal' AND metric = 'accuracy' AND cell_a = ? AND cell_b = ?",
        "hand~model-c__none__p",
        B_KEY,
    ) == [("no detectable difference", None, None, None, "no discordant pair: no power figure")]


def test_scipy_recomputation_from_eval_metrics_gives_the_same_figures(tmp_path: Path) -> None:
    rng = random.Random(13)
    tasks = 12
    models = ["model-a", "model-b", "model-c"]
    loads = [
        graded_cell(
            m,
            [float(rng.random() < 0.3 + 0.3 * i) for _ in range(tasks)],
            [round(rng.random(), 2) for _ in range(tasks)],
        )
        for i, m in enumerate(models)
    ]
    conn = connect(tmp_path / "w.duckdb")
    load_experiment(conn, loads)
    compute_statistics(conn)
    checked = 0
    for metric in ("accuracy", "action_recall"):
        stored = rows(
            conn,
            "SELECT cell_a, cell_b, mean_difference, ci_low, ci_high, test, p_value, p_adjusted "
            "FROM eval.comparisons WHERE tier = 'minimal' AND metric = ? AND cell_a < cell_b "
            "ORDER BY p_value",
            metric,
        )
        assert len(stored) == 3  # three models: three pairs, one family
        raw_p: list[float] = []
        for cell_a, cell_b, diff, low, high, test, p, _ in stored:
            pairs = rows(
                conn,
                "SELECT a.value, b.value FROM eval.metrics a JOIN eval.metrics b "
                "USING (task_id, repeat_index, tier, metric) WHERE a.cell_key = ? "
                "AND b.cell_key = ? AND tier = 'minimal' AND metric = ? "
                "AND a.value IS NOT NULL AND b.value IS NOT NULL",
                cell_a,
                cell_b,
                metric,
            )
            d = [float(y) - float(x) for x, y in pairs]  # type: ignore[arg-type]
            assert diff == pytest.approx(sum(d) / len(d))
            interval = scipy_stats.t.interval(
                0.95, len(d) - 1, loc=sum(d) / len(d), scale=scipy_stats.sem(d)
            )
            assert (low, high) == pytest.approx((max(-1.0, interval[0]), min(1.0, interval[1])))
            if metric == "accuracy":
                assert test == "mcnemar_exact"
                only_b = sum(1 for x in d if x > 0)
                only_a = sum(1 for x in d if x < 0)
                expected = (
                    scipy_stats.binomtest(only_b, only_a + only_b).pvalue if only_a + only_b else 1
                )
            else:
                assert test == "wilcoxon_signed_rank"
                # scipy's defaults on the differences, zeros included (they count in the
                # choice between exact, permutation and normal approximation).
                expected = scipy_stats.wilcoxon(d).pvalue if any(d) else 1.0
            assert p == pytest.approx(expected)
            raw_p.append(float(p))  # type: ignore[arg-type]
            checked += 1
        # Holm over the family of three, by hand from the sorted raw p-values.
        holm = [min(1.0, 3 * raw_p[0])]
        holm.append(max(holm[0], min(1.0, 2 * raw_p[1])))
        holm.append(max(holm[1], min(1.0, raw_p[2])))
        assert [r[7] for r in stored] == pytest.approx(holm)
    assert checked == 6


def _two_runs(tmp_path: Path, second_a: Sequence[float | None]) -> duckdb.DuckDBPyConnection:
    conn = connect(tmp_path / "w.duckdb")
    load_experiment(
        conn,
        [graded_cell("model-a", GOOD), graded_cell("model-b", GOOD)],
        experiment=experiment("e1", 0),
    )
    load_experiment(
        conn,
        [graded_cell("model-a", second_a), graded_cell("model-b", GOOD)],
        experiment=experiment("e2", 5),
    )
    return conn


def test_identical_runs_pass_the_gate(tmp_path: Path) -> None:
    conn = _two_runs(tmp_path, GOOD)
    report = evaluate_gate(conn)
    assert report.experiment_id == "e2" and report.passed
    assert report.cells == [A_KEY, B_KEY]
    compared = [c for c in report.comparisons if c.pairs]
    assert {(c.metric, c.verdict) for c in compared} == {
        ("accuracy", "no detectable difference"),
        ("scored", "no detectable difference"),
    }
    # The hand scores have no action F1 or trajectory: nothing paired, no verdict, a reason.
    assert {c.reason for c in report.comparisons if not c.pairs} == {"no run scored in both cells"}
    assert {c.previous_experiment_id for c in report.comparisons} == {"e1"}


def test_one_cell_made_worse_fails_the_gate_for_that_cell_only(tmp_path: Path) -> None:
    conn = _two_runs(tmp_path, [0.0] * 8 + [1.0, 1.0])
    report = evaluate_gate(conn, settings=GateSettings(metrics=("accuracy",)))
    assert not report.passed
    assert report.failed_cells == [A_KEY]
    failed = [c for c in report.comparisons if c.failed]
    # Both tiers: 8 of 10 tasks lost, McNemar p = 2 / 2^8 = 0.0078125; Holm over the cell's
    # three tests (two tiers and the share of runs scored, p = 1): 3 x 0.0078125.
    assert [(c.tier, c.pairs) for c in failed] == [("minimal", 10), ("optimal", 10)]
    assert [c.mean_difference for c in failed] == pytest.approx([-0.8, -0.8])
    assert [c.p_value for c in failed] == pytest.approx([0.0078125, 0.0078125])
    assert [c.p_adjusted for c in failed] == pytest.approx([0.0234375, 0.0234375])
    assert "gate FAILED" in summary_lines(report)[0]
    # A minimum drop larger than the observed one lets the same figures pass.
    lenient = evaluate_gate(conn, settings=GateSettings(metrics=("accuracy",), min_drop=0.9))
    assert lenient.passed
    assert write_gate_results(conn, report) == len(report.comparisons)
    stored = read_gate_results(conn)
    assert {r["cell_key"] for r in stored if r["failed"]} == {A_KEY}


def test_a_cell_whose_runs_all_fail_now_fails_the_gate_on_runs_scored(tmp_path: Path) -> None:
    conn = _two_runs(tmp_path, GOOD)
    broken = graded_cell("model-a", GOOD)
    erred = [replace(run, trace=hand_trace(run.trace.task_id, "error")) for run in broken.runs]
    broken = replace(broken, runs=erred)
    load_experiment(conn, [broken, graded_cell("model-b", GOOD)], experiment=experiment("e3", 9))
    report = evaluate_gate(conn)
    # Failed runs have NULL scores: no accuracy pair is left, but 10 of 10 runs lost their
    # scores: McNemar p = 2 / 2^10, the only test of the cell with a p-value.
    assert report.failed_cells == [A_KEY]
    (failed,) = [c for c in report.comparisons if c.failed]
    assert (failed.tier, failed.metric, failed.pairs) == ("all", "scored", 10)
    assert failed.p_adjusted == pytest.approx(2 / 2**10)


def test_the_gate_against_a_named_run_and_its_errors(tmp_path: Path) -> None:
    conn = _two_runs(tmp_path, [0.0] * 10)
    # e1 against itself: nothing changed.
    assert evaluate_gate(conn, "e1", against="e1").passed
    first = evaluate_gate(conn, "e1")
    assert first.passed
    assert {c.reason for c in first.comparisons} == {
        "first run of this cell: nothing to compare with"
    }
    # The first run's summary says nothing was compared, not that a comparison passed.
    assert summary_lines(first) == [
        "gate: nothing to compare for experiment e1: each of its 2 cell(s) runs for the first time"
    ]
    assert "PASSED" in summary_lines(evaluate_gate(conn, "e1", against="e1"))[0]
    assert not evaluate_gate(conn, "e2", against="e1").passed
    with pytest.raises(GateError, match="unknown experiment 'nope'"):
        evaluate_gate(conn, against="nope")
    empty = connect(tmp_path / "empty.duckdb")
    with pytest.raises(GateError, match="no experiment recorded"):
        evaluate_gate(empty)


def _language_task(task_id: str, language: str) -> TaskSpec:
    return TaskSpec.model_validate(
        {
            "task_id": task_id,
            "version": 1,
            "task_name": task_id,
            "meta": {"status": "active", "source": "synthetic", "language": language},
            "prompt": "question",
            "evaluation_criteria": {"minimal": [{"criteria": "c"}]},
            "action_chain": {"minimal": {"chain": "search.datasets"}},
        }
    )


def test_the_gate_compares_each_language_and_catches_a_drop_the_total_hides(
    tmp_path: Path,
) -> None:
    # Tasks 1-10 are French, 11-20 English. In e2, model-a gains the ten French tasks and loses
    # the ten English ones: over all 20 tasks the paired difference is 0 (McNemar with 10
    # discordant pairs each way: p = 1), but in English it lost 10 of 10.
    tasks = [_language_task(f"task_{i:04d}", "fr" if i <= 10 else "en") for i in range(1, 21)]
    conn = connect(tmp_path / "w.duckdb")
    first_a = [0.0] * 10 + [1.0] * 10
    second_a = [1.0] * 10 + [0.0] * 10
    for name, minutes, values in (("e1", 0, first_a), ("e2", 5, second_a)):
        load_experiment(
            conn,
            [graded_cell("model-a", values), graded_cell("model-b", [1.0] * 20)],
            tasks=tasks,
            experiment=experiment(name, minutes),
        )
    report = evaluate_gate(conn, settings=GateSettings(metrics=("accuracy",)))
    by = {(c.cell_key, c.tier, c.metric, c.language): c for c in report.comparisons}
    # Each measure is compared over all tasks and per language.
    assert {c.language for c in report.comparisons} == {"all", "fr", "en"}
    total = by[(A_KEY, "minimal", "accuracy", "all")]
    assert (total.pairs, total.mean_difference, total.p_value) == (20, 0.0, 1.0)
    assert total.verdict == "no detectable difference"
    english = by[(A_KEY, "minimal", "accuracy", "en")]
    french = by[(A_KEY, "minimal", "accuracy", "fr")]
    assert (english.pairs, english.mean_difference) == (10, -1.0)
    assert (french.pairs, french.mean_difference) == (10, 1.0)
    # McNemar, 10 discordant pairs all one way: p = 2 / 2^10. Holm over model-a's nine tests
    # (2 tiers x 3 languages + runs scored x 3 languages); the four smallest are equal, so the
    # largest multiplier wins: 9 x 2 / 2^10.
    assert english.p_value == pytest.approx(2 / 2**10)
    assert english.p_adjusted == pytest.approx(9 * 2 / 2**10)
    assert english.verdict == "worse" and english.failed
    assert french.verdict == "better" and not french.failed
    assert report.failed_cells == [A_KEY]
    assert {(c.tier, c.language) for c in report.comparisons if c.failed} == {
        ("minimal", "en"),
        ("optimal", "en"),
    }
    assert any("[en]" in line for line in summary_lines(report))
    # model-b did the same on every task in both runs: it passes in every language.
    assert all(not c.failed for c in report.comparisons if c.cell_key == B_KEY)


# --- like with like: a judge outage or a judge change is "not comparable", never "worse" -------


def judged_cell(
    model: str, criteria: Sequence[Sequence[bool | None]], judge: str = "hand@1"
) -> CellLoad:
    """One cell of a hand model: task i has the given criterion verdicts (None = unscored)."""
    key = f"hand~{model}__none__p"
    tasks = [f"task_{i + 1:04d}" for i in range(len(criteria))]
    return CellLoad(
        hand_record(key, model),
        [hand_run(task, list(c), judge=judge) for task, c in zip(tasks, criteria, strict=True)],
    )


DECIDED: list[list[bool | None]] = [[True, True]] * 10


def _judged_runs(
    tmp_path: Path,
    second_a: Sequence[Sequence[bool | None]],
    second_b: Sequence[Sequence[bool | None]],
    *,
    judge: str = "hand@1",
) -> duckdb.DuckDBPyConnection:
    conn = connect(tmp_path / "w.duckdb")
    load_experiment(
        conn,
        [judged_cell("model-a", DECIDED), judged_cell("model-b", DECIDED)],
        experiment=experiment("e1", 0),
    )
    load_experiment(
        conn,
        [judged_cell("model-a", second_a, judge), judged_cell("model-b", second_b, judge)],
        experiment=experiment("e2", 5),
    )
    return conn


def test_a_judge_outage_is_not_comparable_and_does_not_fail_the_gate(tmp_path: Path) -> None:
    # e1: every criterion decided and passed (accuracy 1, coverage 1). e2, same agents, the
    # judge's model answers garbage: model-a keeps one rule-decided criterion per task, which
    # fails (accuracy 0 over it, coverage 10/20 = 0.5); model-b has nothing decided (accuracy
    # NULL, coverage 0). On today's figures alone model-a "lost" 10 of 10 tasks.
    conn = _judged_runs(tmp_path, [[False, None]] * 10, [[None, None]] * 10)
    report = evaluate_gate(conn)
    assert report.failed_cells == [] and report.passed
    assert report.outcome == NOT_COMPARABLE
    assert report.not_comparable_cells == [A_KEY, B_KEY]
    by = {(c.cell_key, c.tier, c.metric): c for c in report.comparisons}
    accuracy_a = by[(A_KEY, "minimal", "accuracy")]
    assert (accuracy_a.pairs, accuracy_a.mean_difference) == (10, -1.0)
    assert (accuracy_a.verdict, accuracy_a.failed, accuracy_a.comparable) == (None, False, False)
    assert accuracy_a.p_adjusted is None
    assert (accuracy_a.coverage_previous, accuracy_a.coverage_current) == (1.0, 0.5)
    assert accuracy_a.reason == (
        "not comparable: coverage fell from 1.00 to 0.50 (more than the tolerance 0.10)"
    )
    accuracy_b = by[(B_KEY, "optimal", "accuracy")]
    assert accuracy_b.reason == (
        "not comparable: coverage fell from 1.00 to 0.00 (more than the tolerance 0.10)"
    )
    # What the judge does not decide is still compared: every run was scored both times.
    scored = by[(A_KEY, "all", SCORED)]
    assert scored.comparable and scored.verdict == "no detectable difference"
    lines = summary_lines(report)
    assert lines[0].startswith("gate NOT COMPARABLE for experiment e2")
    assert "0 of 2 cell(s) worse, 2 not comparable" in lines[0]
    assert f"  {A_KEY} minimal accuracy [all]: not comparable: coverage fell from 1.00 to 0.50" in (
        "\n".join(lines)
    )
    write_gate_results(conn, report)
    stored = read_gate_results(conn)
    assert {(r["cell_key"], r["comparable"]) for r in stored if r["metric"] == "accuracy"} == {
        (A_KEY, False),
        (B_KEY, False),
    }
    # A tolerance wide enough to cover the fall compares model-a again, and it fails.
    lenient = evaluate_gate(conn, settings=GateSettings(coverage_tolerance=0.5))
    assert lenient.failed_cells == [A_KEY] and lenient.outcome == WORSE


def test_an_agent_made_worse_under_the_same_judge_still_fails_the_gate(tmp_path: Path) -> None:
    # Same judge, every criterion decided both times (coverage 1 = 1): model-a fails both
    # criteria of 8 of its 10 tasks. McNemar p = 2 / 2^8; Holm over the cell's three tests
    # with a p-value (two tiers of accuracy, runs scored with p = 1): 3 x 2 / 2^8.
    worse: list[Sequence[bool | None]] = [[False, False] for _ in range(8)]
    worse += [[True, True], [True, True]]
    conn = _judged_runs(tmp_path, worse, DECIDED)
    report = evaluate_gate(conn)
    assert report.failed_cells == [A_KEY] and report.outcome == WORSE
    assert report.not_comparable_cells == []
    failed = [c for c in report.comparisons if c.failed]
    assert [(c.tier, c.metric, c.pairs) for c in failed] == [
        ("minimal", "accuracy", 10),
        ("optimal", "accuracy", 10),
    ]
    assert [c.p_adjusted for c in failed] == pytest.approx([3 * 2 / 2**8] * 2)
    assert all(c.comparable and c.coverage_current == 1.0 for c in failed)


def test_a_changed_judge_is_not_comparable_even_when_the_agent_got_worse(tmp_path: Path) -> None:
    worse: list[list[bool | None]] = [[False, False]] * 10
    conn = _judged_runs(tmp_path, worse, DECIDED, judge="hand@2")
    report = evaluate_gate(conn)
    assert report.failed_cells == [] and report.outcome == NOT_COMPARABLE
    reasons = {c.reason for c in report.comparisons if c.metric == "accuracy"}
    assert reasons == {"not comparable: judge changed: hand@1 → hand@2"}


def test_a_changed_judge_prompt_is_not_comparable(tmp_path: Path) -> None:
    # Same judge id, its criterion prompt edited between the runs (hash ph -> ph2).
    conn = connect(tmp_path / "w.duckdb")
    load_experiment(conn, [judged_cell("model-a", DECIDED)], experiment=experiment("e1", 0))
    edited = judged_cell("model-a", [[False, False]] * 10)
    runs = []
    for run in edited.runs:
        assert run.judgement is not None
        judgement = run.judgement.model_dump(mode="json")
        for criterion in judgement["criteria"]:
            criterion["verdict"]["prompt_hash"] = "ph2"
        runs.append(replace(run, judgement=JudgementRecord.model_validate(judgement)))
    edited = replace(edited, runs=runs)
    load_experiment(conn, [edited], experiment=experiment("e2", 5))
    report = evaluate_gate(conn)
    assert report.outcome == NOT_COMPARABLE and report.failed_cells == []
    reasons = {c.reason for c in report.comparisons if c.metric == "accuracy"}
    assert reasons == {"not comparable: judge prompt changed: ph → ph2"}
