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
  signed-rank test on per-task mean differences otherwise (scipy's ``wilcoxon`` with its
  defaults); Holm-Bonferroni adjusts p-values within a family of comparisons; the minimum
  detectable effect of the test used (exact binomial power for McNemar, a seeded simulation for
  Wilcoxon) says what difference those pairs could have shown.

NULL (None) values are unscored runs: they are left out of means and counted in coverage.
scipy provides the distributions and the tests.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from datagouv_eval_pipeline.core.metrics import registry

CONFIDENCE = 0.95
"""Confidence level of every interval."""

ALPHA = 0.05
"""Significance level of the paired tests (after adjustment)."""

POWER = 0.8
"""Power at which the minimum detectable effect is given."""

LOWER_IS_BETTER: frozenset[str] = registry.LOWER_IS_BETTER
"""Metrics where a smaller value is the better one (``Metric.lower_is_better``)."""

Verdict = Literal["better", "worse", "no detectable difference"]
"""How cell b compares with cell a on one metric, after adjustment."""

BETTER: Verdict = "better"
WORSE: Verdict = "worse"
NO_DIFFERENCE: Verdict = "no detectable difference"

IntervalMethod = Literal["wilson", "t"]
PairedTest = Literal["mcnemar_exact", "wilcoxon_signed_rank"]
MdeMethod = Literal["mcnemar_exact", "wilcoxon_simulation"]


@functools.cache
def _t_quantile(q: float, df: int) -> float:
    # scipy is imported where it is used (about 1 s): the code location imports this module.
    from scipy import stats as scipy_stats  # type: ignore[import-untyped]

    return float(scipy_stats.t.ppf(q, df))


@functools.cache
def _z_quantile(q: float) -> float:
    from scipy import stats as scipy_stats

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
        mde: Minimum detectable effect at :data:`POWER` of the test used (``mde_method``);
            None when it cannot be computed (see ``reason``).
        reason: Why something is missing; None when complete.
        runs: (task, repeat) pairs offered (scored on either side or neither).
        scored_a: Of those, the runs a scored.
        scored_b: Of those, the runs b scored.
        mde_method: ``mcnemar_exact`` (:func:`mcnemar_mde`) or ``wilcoxon_simulation``
            (:func:`wilcoxon_mde`); None without an MDE.
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
    runs: int = 0
    scored_a: int = 0
    scored_b: int = 0
    mde_method: MdeMethod | None = None


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
    from scipy import stats as scipy_stats

    total = discordant_a + discordant_b
    if total == 0:
        return 1.0
    return float(scipy_stats.binomtest(discordant_b, total, 0.5).pvalue)


PERMUTATION_MAX_N = 13
"""scipy's ``wilcoxon(method="auto")`` enumerates every sign pattern up to this many differences
(zeros included) when some are zero or tied: 2^13 patterns fit its 9,999 resamples."""

EXACT_MAX_N = 50
"""Beyond this many differences (zeros included) scipy's ``method="auto"`` is the normal
approximation even without zeros or ties."""


def _has_ties(nonzero: np.ndarray[Any, Any]) -> bool:
    return len(np.unique(np.abs(nonzero))) < len(nonzero)


def wilcoxon_signed_rank(differences: Sequence[float]) -> float:
    """Two-sided Wilcoxon signed-rank p-value: ``scipy.stats.wilcoxon(differences).pvalue``.

    scipy's defaults: ``zero_method="wilcox"`` (zero differences are dropped from the ranks,
    but still count in the choice of method) and ``method="auto"``, which is: the normal
    approximation (with tie correction, without continuity correction) beyond
    :data:`EXACT_MAX_N` differences; otherwise the exact distribution when no difference is
    zero and no two magnitudes tie; otherwise, up to :data:`PERMUTATION_MAX_N` differences
    (zeros counted), the permutation test over every sign pattern; beyond, the normal
    approximation. scipy computes the exact and normal branches here; the permutation branch
    is :func:`wilcoxon_signed_rank_rows`, the same sign-pattern distribution built by
    convolution of the ranks (scipy's wilcoxon enumerates the 2^n patterns calling its
    statistic once per pattern, about 0.5 s a test; a vectorized ``permutation_test`` still
    took 3 ms a test, a minute over the feature comparisons); tests check it equals scipy's.

    Returns:
        The p-value; 1 when every difference is zero (or there is none), where scipy gives 1
        up to 13 differences and NaN beyond.
    """
    d = np.asarray(differences, dtype=float)
    nonzero = d[d != 0.0]
    if len(nonzero) == 0:
        return 1.0
    if len(d) <= PERMUTATION_MAX_N and (len(nonzero) < len(d) or _has_ties(nonzero)):
        return float(wilcoxon_signed_rank_rows(d[None, :])[0])
    from scipy import stats as scipy_stats

    return float(scipy_stats.wilcoxon(d).pvalue)


@functools.cache
def _no_tie_cdf(n: int) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """:func:`_rank_sum_cdf` of the ranks 1..n (no zero, no tie): the exact distribution."""
    return _rank_sum_cdf(tuple(range(2, 2 * n + 1, 2)))


def _rank_sum_cdf(
    doubled_ranks: tuple[int, ...],
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """P(S <= k) and P(S >= k), k = 0 .. sum, of twice the sum of positive ranks under H0.

    Each rank is positive with probability 1/2 independently: the distribution is the product
    of the polynomials ``(1 + x^r) / 2`` over the (doubled, so integral) ranks.
    """
    counts = np.zeros(sum(doubled_ranks) + 1)
    counts[0] = 1.0
    for rank in doubled_ranks:
        if rank:
            counts[rank:] = counts[rank:] + counts[:-rank].copy()
        else:
            counts = counts * 2
    pmf = counts / counts.sum()
    return np.cumsum(pmf), np.cumsum(pmf[::-1])[::-1]


def wilcoxon_signed_rank_rows(samples: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """:func:`wilcoxon_signed_rank` of every row of an (S, n) array, vectorized.

    See :func:`wilcoxon_signed_rank_counts`, to which each row is handed as counts.
    """
    x = np.asarray(samples, dtype=float)
    values = np.unique(x)
    counts = (x[:, :, None] == values[None, None, :]).sum(axis=1)
    return wilcoxon_signed_rank_counts(values, counts)


def wilcoxon_signed_rank_counts(
    values: np.ndarray[Any, Any], counts: np.ndarray[Any, Any]
) -> np.ndarray[Any, Any]:
    """:func:`wilcoxon_signed_rank` of samples given as counts of each of a few values.

    The same choice of method as scipy's ``method="auto"``, made sample by sample; the exact
    and permutation distributions are computed by convolution over the (doubled, integral)
    ranks rather than by enumerating sign patterns, which gives the same probabilities; the
    normal approximation is scipy's (tie correction, no continuity correction). Samples drawn
    from a few values (the power simulation of :func:`wilcoxon_mde`) are ranked through their
    values' magnitudes, not one by one.

    Args:
        values: The K distinct values the samples are made of.
        counts: An (S, K) array: how many times each sample holds each value (every row sums
            to the sample size n).

    Returns:
        The S two-sided p-values.
    """
    v = np.asarray(values, dtype=float)
    c = np.asarray(counts, dtype=int)
    n = int(c[0].sum()) if len(c) else 0
    nonzero = v != 0.0
    magnitudes = np.abs(v[nonzero])
    levels, level = np.unique(magnitudes, return_inverse=True)
    if len(levels) == 0:
        return np.ones(len(c))
    # counts per magnitude level (summing the columns of the values sharing one), increasing
    order = np.argsort(level.ravel(), kind="stable")
    starts = np.searchsorted(level.ravel()[order], np.arange(len(levels)))
    held = c[:, nonzero][:, order]
    sizes = np.add.reduceat(held, starts, axis=1)  # (S, L): differences sharing a magnitude
    positives = np.add.reduceat(held * (v[nonzero][order] > 0.0), starts, axis=1)
    count = sizes.sum(axis=1)
    below = np.cumsum(sizes, axis=1) - sizes
    average_rank = below + (sizes + 1) / 2
    r_plus = np.sum(positives * average_rank, axis=1)
    tie_term = np.sum(sizes**3 - sizes, axis=1)
    ties = (sizes > 1).any(axis=1)
    p = np.ones(len(c))
    exact = ~ties & (count == n) & (n <= EXACT_MAX_N)
    permutation = ~exact & (n <= PERMUTATION_MAX_N) & (count > 0)
    asymptotic = ~exact & ~permutation & (count > 0)
    observed = np.rint(2 * r_plus).astype(int)
    if exact.any():
        # no zero, no tie: the ranks are 1..n in every such sample
        cdf, sf = _no_tie_cdf(n)
        k = observed[exact]
        p[exact] = np.minimum(1.0, 2 * np.minimum(cdf[k], sf[k]))
    if permutation.any():
        p[permutation] = _permutation_p(sizes[permutation], observed[permutation], n)
    if asymptotic.any():
        from scipy import special as scipy_special

        m = count[asymptotic].astype(float)
        mean = m * (m + 1) / 4
        se = np.sqrt((m * (m + 1) * (2 * m + 1) - tie_term[asymptotic] / 2) / 24)
        z = (r_plus[asymptotic] - mean) / se
        p[asymptotic] = np.minimum(1.0, 2 * scipy_special.ndtr(-np.abs(z)))
    return p


def _permutation_p(
    sizes: np.ndarray[Any, Any], observed: np.ndarray[Any, Any], n: int
) -> np.ndarray[Any, Any]:
    """Two-sided p of the sign-pattern distribution of each sample's ranks.

    Each row of ``sizes`` gives how many differences share each magnitude, in increasing order
    (the other differences are zeros); ``observed`` is twice the sum of the positive ranks.
    Samples with the same tie structure share one distribution (:class:`_TieTables`).
    """
    # the tie structure: the non-zero group sizes, left-justified in n columns
    compact = np.zeros((len(sizes), n), dtype=np.int64)
    order = np.argsort(sizes == 0, axis=1, kind="stable")
    width = min(n, sizes.shape[1])
    compact[:, :width] = np.take_along_axis(sizes, order, axis=1)[:, :width]
    tables = _tie_tables(n)
    rows = tables.rows(compact)
    at_most = tables.cdf[rows, observed]
    at_least = tables.sf[rows, observed]
    return np.asarray(np.minimum(1.0, 2 * np.minimum(at_most, at_least)))


class _TieTables:
    """P(S <= k) and P(S >= k) of the doubled positive-rank sum, one row per tie structure.

    For samples of ``n`` differences; filled as structures are met (there are fewer than
    2^n), so a power simulation computes each distribution once.
    """

    def __init__(self, n: int) -> None:
        self.width = n * (n + 1) + 1
        self.index: dict[bytes, int] = {}
        self.cdf = np.ones((0, self.width))
        self.sf = np.zeros((0, self.width))

    def rows(self, structures: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """The table row of each structure (rows of group sizes, zero-padded), added if new."""
        keys, inverse = np.unique(structures, axis=0, return_inverse=True)
        found = []
        added_cdf, added_sf = [], []
        for key in keys:
            code = key.tobytes()
            if code not in self.index:
                self.index[code] = len(self.index)
                cdf, sf = _rank_sum_cdf(_doubled_ranks(key[key > 0].tolist()))
                added_cdf.append(np.pad(cdf, (0, self.width - len(cdf)), constant_values=1.0))
                added_sf.append(np.pad(sf, (0, self.width - len(sf))))
            found.append(self.index[code])
        if added_cdf:
            self.cdf = np.vstack([self.cdf, *added_cdf])
            self.sf = np.vstack([self.sf, *added_sf])
        return np.asarray(found, dtype=np.int64)[inverse.ravel()]


@functools.cache
def _tie_tables(n: int) -> _TieTables:
    return _TieTables(n)


def _doubled_ranks(sizes: list[int]) -> tuple[int, ...]:
    """Twice the average ranks of tie groups of these sizes, in increasing magnitude."""
    doubled: list[int] = []
    below = 0
    for size in sizes:
        doubled += [2 * below + size + 1] * size
        below += size
    return tuple(doubled)


MDE_RESAMPLES = 400
"""Simulated samples per shift in the Wilcoxon power simulation (power known to about ±0.02)."""

MDE_PRECISION = 0.01
"""The bisection of the Wilcoxon MDE stops within this share of its value."""

MDE_FLOOR = 1e-3
"""A Wilcoxon MDE below this share of the differences' spread is not reported (see the code)."""

MDE_SEED = 20_250_601
"""Seed of the Wilcoxon power simulation: the same differences always give the same MDE."""


def mcnemar_mde(
    discordant: int, pairs: int, *, alpha: float = ALPHA, power: float = POWER
) -> float | None:
    """Smallest pass-rate difference the exact McNemar test detects with ``power``.

    Conditional on the observed number ``m`` of discordant pairs: the exact two-sided binomial
    test of the ``m`` pairs at ``alpha`` rejects when b's share is ``k >= k*`` or
    ``<= m - k*``; its power when each discordant pair goes to b with probability ``q`` is
    ``P(X >= k*) + P(X <= m - k*)``, X ~ Binomial(m, q), increasing in q above 1/2. The q
    where it reaches ``power`` (solved to 1e-12) gives the difference of pass rates
    ``m / pairs * (2q - 1)``.

    Args:
        discordant: Discordant pairs observed (either way).
        pairs: Paired runs compared.
        alpha: Two-sided significance level (unadjusted).
        power: Required power.

    Returns:
        The difference, or None without discordant pairs or when even ``m`` pairs all one
        way would not reach p < ``alpha`` (``m`` <= 5 at 0.05).
    """
    from scipy import optimize as scipy_optimize
    from scipy import stats as scipy_stats

    m = discordant
    if m <= 0 or pairs <= 0:
        return None
    critical = next(
        (
            k
            for k in range((m + 1) // 2, m + 1)
            if 2 * k != m and scipy_stats.binomtest(k, m, 0.5).pvalue < alpha
        ),
        None,
    )
    if critical is None:
        return None

    def rejection(q: float) -> float:
        return float(
            scipy_stats.binom.sf(critical - 1, m, q) + scipy_stats.binom.cdf(m - critical, m, q)
        )

    q = float(scipy_optimize.brentq(lambda q: rejection(q) - power, 0.5, 1.0, xtol=1e-12))
    return m / pairs * (2 * q - 1)


def wilcoxon_mde(
    differences: Sequence[float],
    *,
    alpha: float = ALPHA,
    power: float = POWER,
    resamples: int = MDE_RESAMPLES,
    seed: int = MDE_SEED,
) -> float | None:
    """Smallest shift of the per-task differences the signed-rank test detects with ``power``.

    By simulation, seeded: the observed per-task differences, centred on their Hodges-Lehmann
    estimate (the centre the signed-rank test measures: centred on the mean, a skewed sample
    would be rejected with no shift at all), are resampled with replacement (``resamples``
    samples of the same size, the same samples for every shift); a shift ``delta`` is added and
    each sample is tested with :func:`wilcoxon_signed_rank_rows` (the test actually used); the
    power is the share of samples with p < ``alpha``. The smallest ``delta`` reaching ``power``
    is found by bisection to :data:`MDE_PRECISION` of its size, from a bracket started at three
    standard errors.
    The shift moves every task's mean difference, hence the mean difference, by ``delta``.

    Returns:
        The shift, or None with fewer than 2 tasks, when the differences do not vary, when no
        shift reaches the power (too few tasks for the test to reach ``alpha``: 5 or fewer at
        0.05), or when the centred samples are rejected with no shift, or with a shift below
        :data:`MDE_FLOOR` of their spread (ties at zero: a uniform shift turns them all
        positive), shapes the simulation cannot size a shift for.
    """
    key = tuple(float(x) for x in differences)
    return _wilcoxon_mde(key, alpha, power, resamples, seed)


@functools.lru_cache(maxsize=4096)
def _wilcoxon_mde(
    key: tuple[float, ...], alpha: float, power: float, resamples: int, seed: int
) -> float | None:
    # Cached: a question's pair is often also a one-dimension pair of eval.comparisons, and the
    # gate compares the same differences again.
    d = np.asarray(key, dtype=float)
    if len(d) < 2:
        return None
    if len(d) <= PERMUTATION_MAX_N and 2.0 / 2 ** len(d) >= alpha:
        return None  # even every difference positive gives p = 2 / 2^n
    walsh = (d[:, None] + d[None, :]) / 2
    residuals = d - float(np.median(walsh[np.triu_indices(len(d))]))
    spread = float(np.max(np.abs(residuals)))
    if spread == 0.0:
        return None
    values, codes = np.unique(residuals, return_inverse=True)
    rng = np.random.default_rng(seed)
    drawn = codes.ravel()[rng.integers(0, len(d), size=(resamples, len(d)))]
    counts = np.zeros((resamples, len(values)), dtype=int)
    np.add.at(counts, (np.arange(resamples)[:, None], drawn), 1)

    def reaches(delta: float) -> bool:
        p = wilcoxon_signed_rank_counts(values + delta, counts)
        return float(np.mean(p < alpha)) >= power

    # Bracket from the t-test figure (about 3 standard errors), doubling up to a shift past
    # every difference (all positive: the most the test can say), then bisect.
    if reaches(0.0):
        return None
    ceiling = 2 * spread + 1.0
    high = min(ceiling, 3 * float(np.std(d, ddof=1)) / math.sqrt(len(d)))
    low = 0.0
    while not reaches(high):
        if high >= ceiling:
            return None
        low, high = high, min(ceiling, 2 * high)
    # Ties at zero make the power jump at a shift of 0+ (every tied difference turns positive):
    # a shift found below this floor says nothing about the data, so there is no MDE.
    floor = MDE_FLOOR * spread
    while high - low > MDE_PRECISION * high:
        if high < floor:
            return None
        middle = (low + high) / 2
        if reaches(middle):
            high = middle
        else:
            low = middle
    return high


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
        alpha: Significance level for the minimum detectable effect (unadjusted).
        power: Power for the minimum detectable effect.

    Returns:
        The comparison; the test is exact McNemar when both sides are 0/1 with one run per
        task, else Wilcoxon signed-rank on the per-task mean differences; the minimum
        detectable effect is that of the same test (:func:`mcnemar_mde`,
        :func:`wilcoxon_mde`).
    """
    labels: Sequence[Hashable] = list(range(len(a))) if clusters is None else clusters
    if not len(a) == len(b) == len(labels):
        raise ValueError(f"paired inputs differ in length: {len(a)}, {len(b)}, {len(labels)}")
    runs = len(a)
    scored_a = sum(1 for x in a if x is not None)
    scored_b = sum(1 for y in b if y is not None)
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
            runs=runs,
            scored_a=scored_a,
            scored_b=scored_b,
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
    mde: float | None
    mde_method: MdeMethod
    if binary and tasks == n:
        discordant_a = sum(1 for x, y in zip(xs, ys, strict=True) if x > y)
        discordant_b = sum(1 for x, y in zip(xs, ys, strict=True) if y > x)
        test, p = "mcnemar_exact", mcnemar_exact(discordant_a, discordant_b)
        discordant = discordant_a + discordant_b
        mde_method = "mcnemar_exact"
        mde = mcnemar_mde(discordant, n, alpha=alpha, power=power)
        mde_reason = (
            "no discordant pair: no power figure"
            if discordant == 0
            else f"{discordant} discordant pairs: the exact test cannot reach p < {alpha:g}"
        )
    else:
        per_task = [math.fsum(g) / len(g) for g in _groups(ds, cs)]
        test, p = "wilcoxon_signed_rank", wilcoxon_signed_rank(per_task)
        mde_method = "wilcoxon_simulation"
        mde = wilcoxon_mde(per_task, alpha=alpha, power=power)
        mde_reason = (
            "no difference varies between tasks: no power figure"
            if len(set(per_task)) < 2
            else f"{tasks} tasks: the signed-rank test cannot reach p < {alpha:g}"
        )
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
            runs=runs,
            scored_a=scored_a,
            scored_b=scored_b,
        )
    low, high = t_interval(mean_d, se, tasks - 1, confidence)
    if bounded:
        low, high = max(-1.0, low), min(1.0, high)
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
        None if mde is not None else mde_reason,
        runs=runs,
        scored_a=scored_a,
        scored_b=scored_b,
        mde_method=mde_method if mde is not None else None,
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


def verdict_note(
    p_value: float | None,
    p_adjusted: float | None,
    ci_low: float | None,
    ci_high: float | None,
    family_size: int,
    verdict_value: Verdict | None,
    *,
    test: PairedTest | None = None,
    alpha: float = ALPHA,
) -> str | None:
    """Why a comparison reads "no detectable difference" although a raw figure says otherwise.

    Two cases: the unadjusted p-value is below ``alpha`` but the Holm-adjusted one is not
    (the other comparisons of the family raise it); or the t interval of the difference
    excludes 0 but the paired test (McNemar or Wilcoxon, which the verdict follows) does not
    reject.

    Returns:
        The explanation, or None when the verdict needs none.
    """
    if verdict_value != NO_DIFFERENCE or p_value is None or p_adjusted is None:
        return None
    if p_value < alpha <= p_adjusted:
        return (
            f"significant before adjustment (p={p_value:.3g}), not after Holm over "
            f"{family_size} comparisons (p={p_adjusted:.3g})"
        )
    if ci_low is not None and ci_high is not None and (ci_low > 0 or ci_high < 0):
        name = {"mcnemar_exact": "exact McNemar", "wilcoxon_signed_rank": "Wilcoxon"}.get(
            test or "", "paired"
        )
        return (
            f"the t interval excludes 0 but the {name} test does not reject (p={p_value:.3g}); "
            "the verdict follows the test"
        )
    return None


COVERAGE_TOLERANCE = 0.05
"""Largest gap between two sides' coverages (runs scored, criteria decided) read as equal."""


def coverage_note(
    coverage_a: float | None,
    coverage_b: float | None,
    criterion_coverage_a: float | None = None,
    criterion_coverage_b: float | None = None,
    *,
    tolerance: float = COVERAGE_TOLERANCE,
) -> str | None:
    """What differs between the two sides' coverage by more than ``tolerance``, or None.

    Args:
        coverage_a: Share of the paired runs a scored.
        coverage_b: Share of the same runs b scored.
        criterion_coverage_a: Mean share of criteria decided in a's compared runs (accuracy).
        criterion_coverage_b: The same for b.
        tolerance: The largest gap read as equal.
    """
    notes = []
    for what, x, y in (
        ("runs scored", coverage_a, coverage_b),
        ("criteria decided", criterion_coverage_a, criterion_coverage_b),
    ):
        if x is not None and y is not None and abs(x - y) > tolerance + 1e-12:
            notes.append(f"{what} {x:.0%} in a, {y:.0%} in b")
    if not notes:
        return None
    return f"coverage differs by more than {tolerance:.0%}: " + "; ".join(notes)
