"""pass@k and pass^k: how often an agent succeeds in k attempts, from n repeats of a task.

With ``n`` runs of one task in one cell, ``c`` of them passing, the unbiased estimators are
(Chen et al., 2021, for pass@k; the tau-bench paper for pass^k):

* ``pass@k = 1 - C(n - c, k) / C(n, k)``: the chance that at least one of k runs drawn without
  replacement passes;
* ``pass^k = C(c, k) / C(n, k)``: the chance that all k of them pass (reliability).

Both are undefined when ``k > n`` (k distinct runs cannot be drawn) or ``k < 1``.
"""

from __future__ import annotations

from math import comb

from datagouv_eval_pipeline.core.metrics.values import MetricValue, undefined


def _check(n: int, c: int, k: int) -> MetricValue | None:
    if n < 0 or c < 0 or c > n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if k < 1:
        return undefined(f"k must be at least 1 (got {k})")
    if k > n:
        return undefined(f"k={k} is more than the {n} runs")
    return None


def pass_at_k(n: int, c: int, k: int) -> MetricValue:
    """The probability that at least one of k of the n runs passes (c of n passed)."""
    invalid = _check(n, c, k)
    if invalid is not None:
        return invalid
    return MetricValue(1.0 - comb(n - c, k) / comb(n, k))


def pass_hat_k(n: int, c: int, k: int) -> MetricValue:
    """The probability that all k of the n runs pass (pass^k; c of n passed)."""
    invalid = _check(n, c, k)
    if invalid is not None:
        return invalid
    return MetricValue(comb(c, k) / comb(n, k))
