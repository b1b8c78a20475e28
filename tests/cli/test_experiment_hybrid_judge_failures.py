"""``datagouv-eval experiment --judge hybrid:…`` against a judge server that fails (real process).

The server answers garbage (not retried) or 500 (retried, 1 + 2 times, with the backoff that
``DATAGOUV_EVAL_JUDGE_RETRY_DELAY_S`` shortens, as a user could); the rules' decisions stand and
every other criterion stays unscored with its reason (``hybrid_judge_runs``). A server that
answers is in ``test_experiment_hybrid_judge.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.hybrid_judge_runs import RULES, criteria, experiment, hybrid_env, rows
from tests.judges.judge_server import garbage
from tests.providers.scripted_server import Script, ScriptedServer, always

# The judge's backoff before the first retry (2 s by default, then 4 s, plus jitter): real waits,
# short, so the 500 case costs seconds rather than minutes.
SHORT_BACKOFF = "0.05"


@pytest.mark.parametrize(
    ("failing", "error", "attempts"),
    [
        (garbage, "judge provider error: ModelAPIError: Failed to decode", 1),
        (always(500), "judge provider error: ", 3),
    ],
    ids=["garbage", "500"],
)
def test_a_failing_judge_server_leaves_the_rest_unscored_with_reasons(
    tmp_path: Path, failing: Script, error: str, attempts: int
) -> None:
    env = hybrid_env(tmp_path, DATAGOUV_EVAL_JUDGE_RETRY_DELAY_S=SHORT_BACKOFF)
    db = tmp_path / "warehouse.duckdb"
    with ScriptedServer(failing) as server:
        experiment(env, server)
    verdicts = criteria(db)
    ruled = [row for row in verdicts if row[5] == RULES]
    left = [row for row in verdicts if row[5] != RULES]
    assert ruled and left and server.requests > 0
    assert {row[3] for row in ruled} == {"ok"}  # the rules' decisions stand
    for row in left:
        assert row[3] == "unscored" and row[4] is None, row
        assert row[7].startswith(error), row
    # Garbage is not retried; a 500 is, 1 + 2 retries (judge.yml), the SDK's own retries off.
    assert server.requests % attempts == 0
    coverage = rows(
        db, "SELECT DISTINCT criterion_coverage FROM main.experiment_summary WHERE runs_ok > 0"
    )
    # Counted, never NULL: below 1 in every judged cell (0 where the rules decided nothing).
    values = [value for (value,) in coverage]
    assert all(value is not None and value < 1 for value in values), values
    assert any(value > 0 for value in values), values
    # Unscored criteria never count as failures: the runs' accuracy averages decided ones only.
    assert rows(db, "SELECT count(*) FROM eval.runs WHERE status = 'ok' AND NOT scored") == [(0,)]
