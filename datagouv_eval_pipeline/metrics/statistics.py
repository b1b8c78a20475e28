"""Error bars and paired tests for experiment metrics: pure functions over per-run values.

Every mean carries its uncertainty (Miller, "Adding Error Bars to Evals", 2024):

* the standard error is clustered by task (runs of one task are not independent when a cell
  repeats it), with the small-sample factor G / (G - 1) so that one run per task gives the usual
  ``s / sqrt(n)``;
* 0/1 outcomes get a Wilson interval on the effective sample size (n divided by the design
  effect of the clustering); other scores a Student t interval on G - 1 degrees of freedom,
  clipped to [0, 1] for bounded scores;
* two cells are compared on the (task, repeat) pairs both scored: mean paired difference with a
  t interval, an exact McNemar test for 0/1 outcomes with one run per task, a Wilcoxon
  signed-rank test on per-task mean differences otherwise; Holm-Bonferroni adjusts p-values
  within a family of comparisons; the minimum detectable effect at the given power says what
  difference that many tasks could have shown.

NULL (None) values are unscored runs: they are left out of means and counted in coverage.
scipy provides the distributions and the tests.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats as scipy_stats  # type: ignore[import-untyped]

CONFIDENCE = 0.95
"""Confidence level of every interval."""

ALPHA = 0.05
"""Significance level of the paired tests (after adjustment)."""

POWER = 0.8
"""Power at which the minimum detectable effect is given."""

LOWER_IS_BETTER: frozenset[str] = frozenset({"latency_ms"})
"""Metrics where a smaller value is the better one (every other averaged metric: larger)."""

Verdict = Literal["better", "worse", "no detectable difference"]
"""How cell b compares with cell a on one metric, after adjustment."""

BETTER: Verdict = "better"
WORSE: Verdict = "worse"
NO_DIFFERENCE: Verdict = "no detectable difference"

IntervalMethod = Literal["wilson", "t"]
PairedTest = Literal["mcnemar_exact", "wilcoxon_signed_rank"]


@functools.cache
def _t_quantile(q: float, df: int) -> float:
    return float(scipy_stats.t.ppf(q, df))


@functools.cache
def _z_quantile(q: float) -> float:
    return float(scipy_stats.norm.ppf(q))


def higher_is_better(metric: str) -> bool:
    """Whether a larger value of ``metric`` is the better one."""
    return metric not in LOWER_IS_BETTER


def is_binary(values: Sequence[float]) -> bool:
    """True when every value is exactly 0 or 1 (a pass/fail outcome); False when empty."""
    return bool(values) and all(value in (0.0, 1.0) for value in values)


@dataclass(frozen=True, slots=True)
class Estimate:
    """A mean with its uncertainty.

    Attributes:
        runs: Runs counted (scored or not).
        n: Runs with a value (scored).
        tasks: Distinct tasks (clusters) among the scored runs.
        coverage: n / runs; None without runs.
        mean: Mean of the scored values; None when n = 0.
        std_error: Standard error of the mean (clustered by task); None when tasks < 2.
        ci_low: Lower bound of the interval; None when it cannot be computed.
        ci_high: Upper bound of the interval.
        method: ``wilson`` (0/1 outcomes) or ``t``; None without an interval.
        binary: Whether every value is 0 or 1.
        clustered: Whether some task has more than one scored run (repeats).
        reason: Why the interval (or the mean) is missing; None when present.
    """

    runs: int
    n: int
    tasks: int
    coverage: float | None
    mean: float | None
    std_error: float | None
    ci_low: float | None
    ci_high: float | None
    method: IntervalMethod | None
    binary: bool
    clustered: bool
    reason: str | None


@dataclass(frozen=True, slots=True)
class PairedComparison:
    """Cell b against cell a on the runs both scored (difference = b - a).

    Attributes:
        pairs: (task, repeat) pairs scored in both cells.
        tasks: Distinct tasks among the pairs.
        mean_a: Mean of a over the pairs.
        mean_b: Mean of b over the pairs.
        mean_difference: Mean of b - a over the pairs.
        std_error: Standard error of the mean difference (clustered by task).
        ci_low: Lower bound of the t interval of the difference.
        ci_high: Upper bound.
        test: ``mcnemar_exact`` or ``wilcoxon_signed_rank``; None without a test.
        p_value: Two-sided p-value (unadjusted); None without a test.
        discordant_a: Pairs where a passed and b failed (0/1 outcomes), else None.
        discordant_b: Pairs where b passed and a failed (0/1 outcomes), else None.
        mde: Minimum detectable effect at :data:`POWER` for this many tasks; None when no
            variance was observed or tasks < 2.
        reason: Why something is missing; None when complete.
    """

    pairs: int
    tasks: int
    mean_a: float | None
    mean_b: float | None
    mean_difference: float | None
    std_error: float | None
    ci_low: float | None
    ci_high: float | None
    test: PairedTest | None
    p_value: float | None
    discordant_a: int | None
    discordant_b: int | None
    mde: float | None
    reason: str | None


def _groups(values: Sequence[float], clusters: Sequence[Hashable]) -> list[list[float]]:
    grouped: dict[Hashable, list[float]] = {}
    for value, cluster in zip(values, clusters, strict=True):
        grouped.setdefault(cluster, []).append(value)
    return list(grouped.values())


def clustered_std_error(values: Sequence[float], clusters: Sequence[Hashable]) -> float | None:
    """Standard error of the mean, clustered (CR1).

    ``sqrt(G / (G - 1) * sum_g (sum_i (x_gi - mean))^2) / n`` over G clusters and n values;
    with one value per cluster this is the usual ``s / sqrt(n)`` (sample standard deviation).

    Args:
        values: The scored values.
        clusters: Parallel cluster labels (task ids).

    Returns:
        The standard error, or None with fewer than two clusters.
    """
    groups = _groups(values, clusters)
    g = len(groups)
    if g < 2:
        return None
    n = len(values)
    mean = math.fsum(values) / n
    sums = [math.fsum(x - mean for x in group) for group in groups]
    return math.sqrt(g / (g - 1) * math.fsum(s * s for s in sums)) / n


def wilson_interval(
    proportion: float, n: float, confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """Wilson score interval of a proportion observed on ``n`` (possibly effective) trials.

    Raises:
        ValueError: If ``n`` is not positive or the proportion lies outside [0, 1].
    """
    if n <= 0 or not 0.0 <= proportion <= 1.0:
        raise ValueError(
            f"wilson_interval needs n > 0 and a proportion in [0, 1], got {n}, {proportion}"
        )
    z = _z_quantile(0.5 + confidence / 2)
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (proportion + z2 / (2 * n)) / denominator
    half = z / denominator * math.sqrt(proportion * (1 - proportion) / n + z2 / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def t_interval(
    mean: float,
    std_error: float,
    df: int,
    confidence: float = CONFIDENCE,
    *,
    bounded: bool = False,
) -> tuple[float, float]:
    """``mean ± t(df) * std_error``, clipped to [0, 1] when the score is bounded."""
    half = _t_quantile(0.5 + confidence / 2, df) * std_error
    low, high = mean - half, mean + half
    if bounded:
        low, high = max(0.0, low), min(1.0, high)
    return low, high


def estimate(
    values: Sequence[float | None],
    clusters: Sequence[Hashable] | None = None,
    *,
    bounded: bool,
    confidence: float = CONFIDENCE,
) -> Estimate:
    """Mean, clustered standard error and interval of per-run values.

    Args:
        values: One value per run; None for an unscored run (left out, counted in coverage).
        clusters: Parallel task ids (the clusters); default: every run its own task.
        bounded: Whether the score lies in [0, 1] by definition (t intervals are clipped).
        confidence: Confidence level of the interval.

    Returns:
        The estimate; a missing interval has its reason.
    """
    labels: Sequence[Hashable] = list(range(len(values))) if clusters is None else clusters
    if len(labels) != len(values):
        raise ValueError(f"{len(values)} values but {len(labels)} cluster labels")
    scored = [(float(v), c) for v, c in zip(values, labels, strict=True) if v is not None]
    xs = [v for v, _ in scored]
    cs = [c for _, c in scored]
    runs, n = len(values), len(xs)
    tasks = len(set(cs))
    coverage = n / runs if runs else None
    binary = bounded and is_binary(xs)
    clustered = tasks < n
    if n == 0:
        return Estimate(
            runs, 0, 0, coverage, None, None, None, None, None, False, False, "no scored run"
        )
    mean = math.fsum(xs) / n
    se = clustered_std_error(xs, cs)
    if se is None:
        return Estimate(
            runs,
            n,
            tasks,
            coverage,
            mean,
            None,
            None,
            None,
            None,
            binary,
            clustered,
            "fewer than 2 tasks scored",
        )
    if binary:
        low, high = wilson_interval(mean, _effective_n(xs, mean, se, tasks), confidence)
        method: IntervalMethod = "wilson"
    else:
        low, high = t_interval(mean, se, tasks - 1, confidence, bounded=bounded)
        method = "t"
    return Estimate(runs, n, tasks, coverage, mean, se, low, high, method, binary, clustered, None)


def _effective_n(xs: Sequence[float], mean: float, se: float, tasks: int) -> float:
    """The sample size divided by the design effect of the clustering (n itself without repeats).

    The design effect is the clustered variance over the independent one (s^2 / n). A constant
    outcome has no variance to compare: each task then counts once.
    """
    n = len(xs)
    if tasks == n:
        return float(n)
    if se == 0.0:
        return float(tasks)
    variance = math.fsum((x - mean) ** 2 for x in xs) / (n - 1)
    return min(float(n), variance / (se * se))


def mcnemar_exact(discordant_a: int, discordant_b: int) -> float:
    """Two-sided exact McNemar p-value from the discordant pair counts.

    Under no difference each discordant pair goes either way with probability 1/2: the p-value
    is the two-sided binomial test of ``discordant_b`` successes in the discordant pairs.
    No discordant pair gives 1.
    """
    total = discordant_a + discordant_b
    if total == 0:
        return 1.0
    return float(scipy_stats.binomtest(discordant_b, total, 0.5).pvalue)


EXACT_TIES_MAX_N = 13
"""Up to this many non-zero differences with ties, the p-value enumerates all 2^n sign patterns.

The same rule as scipy's ``wilcoxon(method="auto")`` (exact without ties, a deterministic
permutation test over every sign pattern with ties up to 13, the normal approximation beyond),
but the permutation is vectorized here: scipy's calls the statistic once per pattern, about
0.5 s per test, which made a few thousand comparisons take minutes."""


def wilcoxon_signed_rank(differences: Sequence[float]) -> float:
    """Two-sided Wilcoxon signed-rank p-value; zero differences are dropped (all zero: 1).

    Without ties: scipy's exact distribution. With ties: the exact permutation distribution of
    the sum of positive (mid)ranks over every sign pattern for up to
    :data:`EXACT_TIES_MAX_N` differences, else scipy's normal approximation with its tie
    correction; the p-values scipy's ``method="auto"`` gives.
    """
    nonzero = [d for d in differences if d != 0.0]
    if not nonzero:
        return 1.0
    magnitudes = [abs(d) for d in nonzero]
    if len(set(magnitudes)) == len(magnitudes):
        return float(scipy_stats.wilcoxon(nonzero, method="exact").pvalue)
    if len(nonzero) > EXACT_TIES_MAX_N:
        return float(scipy_stats.wilcoxon(nonzero, method="asymptotic").pvalue)
    ranks = np.asarray(scipy_stats.rankdata(magnitudes), dtype=float)
    observed = float(ranks[np.asarray(nonzero) > 0].sum())
    n = len(nonzero)
    patterns = (np.arange(2**n)[:, None] >> np.arange(n)) & 1
    null = patterns @ ranks
    # scipy's permutation_test compares with a relative tolerance, so equal sums count as ties.
    gamma = abs(observed) * float(np.finfo(float).eps) * 100
    below = float(np.mean(null <= observed + gamma))
    above = float(np.mean(null >= observed - gamma))
    return min(1.0, 2 * min(below, above))


def minimum_detectable_effect(
    std_error: float,
    df: int,
    *,
    alpha: float = ALPHA,
    power: float = POWER,
) -> float:
    """Smallest true difference a two-sided t test at ``alpha`` detects with ``power``.

    ``(t(1 - alpha / 2, df) + t(power, df)) * std_error``.
    """
    t_alpha = _t_quantile(1 - alpha / 2, df)
    t_power = _t_quantile(power, df)
    return (t_alpha + t_power) * std_error


def paired_comparison(
    a: Sequence[float | None],
    b: Sequence[float | None],
    clusters: Sequence[Hashable] | None = None,
    *,
    bounded: bool,
    confidence: float = CONFIDENCE,
    alpha: float = ALPHA,
    power: float = POWER,
) -> PairedComparison:
    """Compare cell b with cell a on the runs both scored.

    Args:
        a: Cell a's value per (task, repeat); None when unscored.
        b: Cell b's value for the same (task, repeat), in the same order.
        clusters: Parallel task ids; default: every pair its own task.
        bounded: Whether the score lies in [0, 1] by definition.
        confidence: Confidence level of the difference's interval.
        alpha: Significance level for the minimum detectable effect.
        power: Power for the minimum detectable effect.

    Returns:
        The comparison; the test is exact McNemar when both sides are 0/1 with one run per
        task, else Wilcoxon signed-rank on the per-task mean differences.
    """
    labels: Sequence[Hashable] = list(range(len(a))) if clusters is None else clusters
    if not len(a) == len(b) == len(labels):
        raise ValueError(f"paired inputs differ in length: {len(a)}, {len(b)}, {len(labels)}")
    pairs = [
        (float(x), float(y), c)
        for x, y, c in zip(a, b, labels, strict=True)
        if x is not None and y is not None
    ]
    if not pairs:
        return PairedComparison(
            0,
            0,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            "no run scored in both cells",
        )
    xs = [x for x, _, _ in pairs]
    ys = [y for _, y, _ in pairs]
    cs = [c for _, _, c in pairs]
    ds = [y - x for x, y in zip(xs, ys, strict=True)]
    n = len(pairs)
    tasks = len(set(cs))
    mean_a, mean_b = math.fsum(xs) / n, math.fsum(ys) / n
    mean_d = math.fsum(ds) / n
    se = clustered_std_error(ds, cs)
    binary = bounded and is_binary(xs) and is_binary(ys)
    discordant_a = discordant_b = None
    test: PairedTest
    if binary and tasks == n:
        discordant_a = sum(1 for x, y in zip(xs, ys, strict=True) if x > y)
        discordant_b = sum(1 for x, y in zip(xs, ys, strict=True) if y > x)
        test, p = "mcnemar_exact", mcnemar_exact(discordant_a, discordant_b)
    else:
        per_task = [math.fsum(g) / len(g) for g in _groups(ds, cs)]
        test, p = "wilcoxon_signed_rank", wilcoxon_signed_rank(per_task)
    if se is None:
        return PairedComparison(
            n,
            tasks,
            mean_a,
            mean_b,
            mean_d,
            None,
            None,
            None,
            test,
            p,
            discordant_a,
            discordant_b,
            None,
            "fewer than 2 tasks scored in both cells",
        )
    low, high = t_interval(mean_d, se, tasks - 1, confidence)
    if bounded:
        low, high = max(-1.0, low), min(1.0, high)
    mde = minimum_detectable_effect(se, tasks - 1, alpha=alpha, power=power) if se > 0 else None
    reason = None if mde is not None else "no difference varies between pairs: no power figure"
    return PairedComparison(
        n,
        tasks,
        mean_a,
        mean_b,
        mean_d,
        se,
        low,
        high,
        test,
        p,
        discordant_a,
        discordant_b,
        mde,
        reason,
    )


def holm_adjust(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm-Bonferroni adjusted p-values, in the input order (None entries stay None).

    With the m non-None p-values sorted ascending, the i-th (1-based) becomes
    ``max over j <= i of min(1, (m - j + 1) * p_j)``.
    """
    present = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(present)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, index) in enumerate(present):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[index] = running
    return adjusted


def verdict(
    mean_difference: float | None,
    adjusted_p: float | None,
    *,
    higher_is_better: bool = True,
    alpha: float = ALPHA,
) -> Verdict | None:
    """``better`` / ``worse`` (b against a) when the adjusted p-value is below ``alpha``.

    Returns:
        None when there is no test (no pair scored in both cells).
    """
    if adjusted_p is None or mean_difference is None:
        return None
    if adjusted_p >= alpha or mean_difference == 0.0:
        return NO_DIFFERENCE
    improved = mean_difference > 0 if higher_is_better else mean_difference < 0
    return BETTER if improved else WORSE


def mirrored(value: Verdict | None) -> Verdict | None:
    """The verdict of a against b given that of b against a."""
    if value == BETTER:
        return WORSE
    if value == WORSE:
        return BETTER
    return value
