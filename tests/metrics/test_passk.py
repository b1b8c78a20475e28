from __future__ import annotations

import pytest

from datagouv_eval_pipeline.core.metrics.passk import pass_at_k, pass_hat_k


def test_pass_at_k_worked_by_hand() -> None:
    # n=5, c=2, k=2: C(3,2)/C(5,2) = 3/10 of the pairs have no pass -> 7/10.
    assert pass_at_k(5, 2, 2).value == pytest.approx(0.7)
    # k=1 is the plain success rate c/n.
    assert pass_at_k(5, 2, 1).value == pytest.approx(0.4)
    # n - c < k: every draw of 4 of 5 holds a pass when 2 pass.
    assert pass_at_k(5, 2, 4).value == 1.0
    assert pass_at_k(3, 0, 2).value == 0.0


def test_pass_hat_k_worked_by_hand() -> None:
    # n=5, c=3, k=2: C(3,2)/C(5,2) = 3/10.
    assert pass_hat_k(5, 3, 2).value == pytest.approx(0.3)
    assert pass_hat_k(5, 3, 1).value == pytest.approx(0.6)
    # Fewer passes than k: no draw is all passes.
    assert pass_hat_k(5, 1, 2).value == 0.0
    assert pass_hat_k(4, 4, 4).value == 1.0


def test_undefined_when_k_does_not_fit() -> None:
    assert pass_at_k(2, 1, 3).value is None
    assert pass_at_k(2, 1, 3).reason == "k=3 is more than the 2 runs"
    assert pass_hat_k(2, 1, 0).value is None
    with pytest.raises(ValueError):
        pass_at_k(2, 3, 1)
