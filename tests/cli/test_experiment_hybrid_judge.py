"""``datagouv-eval experiment --judge hybrid:PROVIDER/MODEL`` end to end, in a real process.

The judge is a real OpenAI-compatible server on 127.0.0.1 answering valid verdicts
(``hybrid_judge_runs``); a failing server is in ``test_experiment_hybrid_judge_failures.py``
(the files run side by side under pytest-xdist).
"""

from __future__ import annotations

from pathlib import Path

from tests.cli.hybrid_judge_runs import (
    MODEL,
    RULES,
    criteria,
    experiment,
    hybrid_env,
    report_coverage,
    rows,
)
from tests.judges.judge_server import grading
from tests.providers.scripted_server import ScriptedServer


def test_hybrid_judge_decides_every_criterion_and_a_rerun_asks_nothing(tmp_path: Path) -> None:
    env = hybrid_env(tmp_path)
    db = tmp_path / "warehouse.duckdb"
    with ScriptedServer(grading) as server:
        experiment(env, server)
        first = server.requests
        verdicts = criteria(db)
        assert verdicts and first > 0
        # Coverage 1.0: every criterion decided, by the rules where they can, else the LLM.
        assert {row[3] for row in verdicts} == {"ok"}
        deciders = {row[5] for row in verdicts}
        assert deciders == {RULES, f"llm:{MODEL}"}
        assert all(row[6] for row in verdicts if row[5] != RULES)  # the LLM's rows: a prompt hash
        runs = rows(db, "SELECT DISTINCT judge_id FROM eval.runs WHERE judged")
        assert runs == [(f"hybrid:{MODEL}",)]
        (questions, requests) = rows(
            db, "SELECT sum(judge_questions), sum(judge_requests) FROM eval.runs"
        )[0]
        assert requests == first  # every request the server saw
        assert questions == first  # one request per question: nothing was retried
        # Criterion coverage per cell, in the warehouse and in the report.
        coverage = rows(
            db,
            "SELECT DISTINCT criterion_coverage FROM main.experiment_summary WHERE runs_ok > 0",
        )
        assert coverage == [(1.0,)]
        decided = report_coverage(tmp_path / "experiment_report.md")
        assert decided and set(decided) == {"1.00"}

        # The same command again: every answer comes from the judge cache.
        experiment(env, server)
        assert server.requests == first
        assert rows(
            db, "SELECT DISTINCT judge_questions, judge_requests FROM eval.runs WHERE judged"
        ) == [(0, 0)]
        assert criteria(db) == verdicts
