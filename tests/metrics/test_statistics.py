"""Statistics: hand-worked values first, then the same figures from scipy's own routines."""

from __future__ import annotations

import math

import pytest
from scipy import stats as scipy_stats  # type: ignore[import-untyped]

from datagouv_eval_pipeline.metrics.statistics import (
    BETTER,
    NO_DIFFERENCE,
    WORSE,
    clustered_std_error,
    estimate,
    higher_is_better,
    holm_adjust,
    mcnemar_exact,
    minimum_detectable_effect,
    mirrored,
    paired_comparison,
    verdict,
    wilcoxon_signed_rank,
    wilson_interval,
)

Z = 1.959964  # normal 97.5 % quantile
T4_975 = 2.776445  # Student t, 4 degrees of freedom, 97.5 % quantile (printed tables)
T4_80 = 0.940965  # Student t, 4 degrees of freedom, 80 % quantile


def test_std_error_without_repeats_is_s_over_root_n() -> None:
    # [1, 0, 1, 1]: mean 0.75; squared deviations 3 x 0.0625 + 0.5625 = 0.75; s^2 = 0.25,
    # s / sqrt(4) = 0.25.
    assert clustered_std_error([1, 0, 1, 1], ["a", "b", "c", "d"]) == pytest.approx(0.25)
    assert clustered_std_error([1, 0, 1, 1], ["a", "b", "c", "d"]) == pytest.approx(
        float(scipy_stats.sem([1, 0, 1, 1]))
    )


def test_std_error_clusters_runs_of_one_task() -> None:
    # Two tasks, two repeats each: [1, 1 | 0, 0]. Mean 0.5; per-task sums of deviations +1, -1;
    # sqrt(2 / 1 * (1 + 1)) / 4 = 0.5, twice the naive s / sqrt(n) = 0.577 / 2 = 0.289.
    assert clustered_std_error([1, 1, 0, 0], ["t1", "t1", "t2", "t2"]) == pytest.approx(0.5)
    assert clustered_std_error([1, 1], ["t1", "t1"]) is None


def test_wilson_interval_by_hand_and_scipy() -> None:
    # p = 3/4, n = 4: centre = (0.75 + z^2/8) / (1 + z^2/4) = 1.230182 / 1.960365 = 0.627524,
    # half = z / 1.960365 * sqrt(0.1875/4 + z^2/64) = 0.326885.
    low, high = wilson_interval(0.75, 4)
    assert (low, high) == pytest.approx((0.300639, 0.954409), abs=1e-5)
    ci = scipy_stats.binomtest(3, 4).proportion_ci(confidence_level=0.95, method="wilson")
    assert (low, high) == pytest.approx((ci.low, ci.high), abs=1e-9)
    with pytest.raises(ValueError, match="n > 0"):
        wilson_interval(0.5, 0)


def test_estimate_of_a_bounded_score_is_a_t_interval() -> None:
    # [0.2 .. 1.0]: mean 0.6, s^2 = 0.4 / 4 = 0.1, se = 0.141421; half = 2.776445 x 0.141421.
    values = [0.2, 0.4, 0.6, 0.8, 1.0]
    result = estimate(values, bounded=True)
    assert (result.n, result.tasks, result.method) == (5, 5, "t")
    assert result.mean == pytest.approx(0.6)
    assert result.std_error == pytest.approx(math.sqrt(0.1) / math.sqrt(5))
    half = T4_975 * 0.1414214
    assert (result.ci_low, result.ci_high) == pytest.approx((0.6 - half, 0.6 + half), abs=1e-5)
    low, high = scipy_stats.t.interval(0.95, 4, loc=0.6, scale=scipy_stats.sem(values))
    assert (result.ci_low, result.ci_high) == pytest.approx((low, high))


def test_estimate_clips_bounded_intervals_but_not_unbounded_ones() -> None:
    bounded = estimate([1.0, 0.9, 1.0, 0.95], bounded=True)
    assert bounded.ci_high == 1.0 and bounded.method == "t"
    latency = estimate([100.0, 300.0], bounded=False)
    # mean 200, se = 100; t(1) 97.5 % = 12.706205: the interval goes below zero, unclipped.
    assert latency.ci_low == pytest.approx(200 - 12.706205 * 100, abs=1e-3)


def test_estimate_of_pass_fail_outcomes_is_wilson_with_coverage() -> None:
    result = estimate([1, 0, 1, 1, None], ["a", "b", "c", "d", "e"], bounded=True)
    assert (result.runs, result.n, result.coverage, result.mean) == (5, 4, 0.8, 0.75)
    assert result.method == "wilson" and result.binary and not result.clustered
    assert (result.ci_low, result.ci_high) == pytest.approx((0.300639, 0.954409), abs=1e-5)


def test_wilson_with_repeats_uses_the_effective_sample_size() -> None:
    # [1, 1 | 0, 0 | 1, 0]: mean 0.5, clustered se = sqrt(3/2 x 2) / 6 = 0.288675; the
    # independent variance s^2 = 1.5 / 5 = 0.3, so n_eff = 0.3 / 0.083333 = 3.6 (not 6):
    # z^2 / 3.6 = 1.067072, half = z / 2.067072 x sqrt(0.25/3.6 + z^2/51.84) = 0.359244.
    result = estimate([1, 1, 0, 0, 1, 0], ["a", "a", "b", "b", "c", "c"], bounded=True)
    assert result.clustered and result.tasks == 3
    assert result.std_error == pytest.approx(math.sqrt(3) / 6)
    assert (result.ci_low, result.ci_high) == pytest.approx((0.140756, 0.859244), abs=1e-5)


def test_estimate_without_enough_tasks_says_why() -> None:
    assert estimate([None, None], bounded=True).reason == "no scored run"
    one = estimate([0.5, None], bounded=True)
    assert (one.mean, one.ci_low, one.reason) == (0.5, None, "fewer than 2 tasks scored")
    assert one.coverage == 0.5


def test_exact_mcnemar_by_hand_and_scipy() -> None:
    # 6 pairs a-only, 1 pair b-only: 2 x P(X <= 1 | 7, 1/2) = 2 x (1 + 7) / 128 = 0.125.
    assert mcnemar_exact(6, 1) == pytest.approx(0.125)
    assert mcnemar_exact(6, 1) == pytest.approx(scipy_stats.binomtest(1, 7, 0.5).pvalue)
    assert mcnemar_exact(0, 0) == 1.0
    # 0 vs 6: 2 x (1/2)^6 = 0.03125.
    assert mcnemar_exact(0, 6) == pytest.approx(0.03125)


def test_wilcoxon_signed_rank_by_hand_and_scipy() -> None:
    # Ranks of |d| are 1..5; the negative one has rank 3, so W = 3. Of the 32 sign patterns,
    # 5 have a rank sum <= 3 ({}, {1}, {2}, {3}, {1,2}): p = 2 x 5 / 32 = 0.3125.
    differences = [0.1, 0.2, -0.3, 0.4, 0.5]
    assert wilcoxon_signed_rank(differences) == pytest.approx(0.3125)
    assert wilcoxon_signed_rank([0.0, *differences]) == pytest.approx(
        scipy_stats.wilcoxon(differences).pvalue
    )
    assert wilcoxon_signed_rank([0.0, 0.0]) == 1.0


def test_wilcoxon_with_ties_enumerates_every_sign_pattern_like_scipy() -> None:
    # |d| = 0.5, 0.5, 1.0: midranks 1.5, 1.5, 3; W+ = 1.5 + 3 = 4.5. Of the 8 sign patterns the
    # sums are 0, 1.5, 1.5, 3, 3, 4.5, 4.5, 6: P(W+ >= 4.5) = 3/8, so p = 2 x 3/8 = 0.75.
    assert wilcoxon_signed_rank([0.5, -0.5, 1.0]) == pytest.approx(0.75)
    rng = [0.2, -0.2, 0.4, 0.4, -0.1, 0.3, 0.3, 0.2, -0.4, 0.1, 0.2, 0.5]
    for sample in (rng, rng[:7], [0.5] * 5 + [-0.5], [0.1, 0.1, -0.2, 0.3, 0.3] * 3):
        assert wilcoxon_signed_rank(sample) == pytest.approx(scipy_stats.wilcoxon(sample).pvalue)


def test_paired_comparison_of_pass_fail_outcomes() -> None:
    a = [1, 1, 1, 1, 1, 1, 0, 0, None]
    b = [0, 0, 0, 0, 0, 0, 0, 1, 1]
    result = paired_comparison(a, b, bounded=True)
    # The unscored pair is left out: 8 pairs, b - a = six -1, one 0, one +1 -> -5/8.
    assert (result.pairs, result.tasks, result.test) == (8, 8, "mcnemar_exact")
    assert (result.discordant_a, result.discordant_b) == (6, 1)
    assert result.mean_difference == pytest.approx(-0.625)
    assert result.p_value == pytest.approx(0.125)
    se = float(scipy_stats.sem([-1, -1, -1, -1, -1, -1, 0, 1]))
    assert result.std_error == pytest.approx(se)
    low, high = scipy_stats.t.interval(0.95, 7, loc=-0.625, scale=se)
    assert result.ci_low == pytest.approx(max(-1.0, low))
    assert result.ci_high == pytest.approx(high)
    assert result.mde == pytest.approx(
        (scipy_stats.t.ppf(0.975, 7) + scipy_stats.t.ppf(0.8, 7)) * se
    )


def test_paired_comparison_with_repeats_tests_per_task_means() -> None:
    # Two repeats per task: per-task mean differences 0.1, 0.2, -0.3, 0.4, 0.5 -> p = 0.3125.
    tasks = [t for t in "abcde" for _ in range(2)]
    a = [0.4] * 10
    b = [0.4 + d + e for d in (0.1, 0.2, -0.3, 0.4, 0.5) for e in (-0.05, 0.05)]
    result = paired_comparison(a, b, tasks, bounded=True)
    assert (result.pairs, result.tasks, result.test) == (10, 5, "wilcoxon_signed_rank")
    assert result.p_value == pytest.approx(0.3125)
    assert result.mean_difference == pytest.approx(0.18)


def test_identical_cells_show_no_difference_and_no_power_figure() -> None:
    result = paired_comparison([1, 0, 1], [1, 0, 1], bounded=True)
    assert (result.mean_difference, result.p_value, result.std_error) == (0.0, 1.0, 0.0)
    assert result.mde is None and result.reason is not None
    empty = paired_comparison([None], [1], bounded=True)
    assert empty.pairs == 0 and empty.p_value is None and empty.reason


def test_minimum_detectable_effect_by_hand() -> None:
    # (t(0.975, 4) + t(0.8, 4)) x 0.1 = (2.776445 + 0.940965) x 0.1.
    assert minimum_detectable_effect(0.1, 4) == pytest.approx((T4_975 + T4_80) * 0.1, abs=1e-6)


def test_holm_adjustment_by_hand() -> None:
    # Sorted 0.01, 0.03, 0.04 with m = 3: 3 x 0.01 = 0.03; 2 x 0.03 = 0.06; max(0.06, 0.04).
    assert holm_adjust([0.01, 0.04, 0.03, None]) == pytest.approx([0.03, 0.06, 0.06, None])
    assert holm_adjust([0.5, 0.9]) == [1.0, 1.0]
    assert holm_adjust([]) == []


def test_verdicts_follow_the_metric_direction() -> None:
    assert verdict(0.2, 0.01) == BETTER
    assert verdict(-0.2, 0.01) == WORSE
    assert verdict(-0.2, 0.2) == NO_DIFFERENCE
    assert verdict(-50.0, 0.01, higher_is_better=higher_is_better("latency_ms")) == BETTER
    assert verdict(None, None) is None
    assert (mirrored(BETTER), mirrored(WORSE), mirrored(NO_DIFFERENCE)) == (
        WORSE,
        BETTER,
        NO_DIFFERENCE,
    )
