"""``datagouv-eval experiment --judge hybrid:PROVIDER/MODEL`` end to end, in a real process.

The judge is a real OpenAI-compatible server on 127.0.0.1 (valid verdicts, or 500s), reached
through the real client by the command's ``--judge-base-url``; the agents are the offline
baselines against the twin (the MCP-version cells, one task). Each test has its own Dagster
instance, run store and warehouse.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from datagouv_eval_pipeline.cli.dagster_home import DEFAULT_HOME
from datagouv_eval_pipeline.core.judges.deterministic import JUDGE_ID
from tests.judges.judge_server import garbage, grading
from tests.providers.scripted_server import Script, ScriptedServer, always

CLI = str(Path(sys.executable).parent / "datagouv-eval")
MODEL = "mistral/mistral-small-2603"
RULES = JUDGE_ID  # the deterministic judge decides the rules


def _env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(DEFAULT_HOME / "dagster.yaml", home / "dagster.yaml")
    return {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "DATAGOUV_EVAL_RUN_STORE": str(tmp_path / "run_store"),
        "DATAGOUV_EVAL_DUCKDB": str(tmp_path / "warehouse.duckdb"),
        "MISTRAL_API_KEY": "test-key-for-a-local-server",
    }


def _experiment(env: dict[str, str], server: ScriptedServer) -> str:
    done = subprocess.run(
        [
            CLI,
            "experiment",
            "--evaluation-type",
            "mcp_versions",
            "--tasks",
            # Not task_0002, whose criteria the rules now decide alone: task_0010 keeps two that
            # only a reader can judge, so the LLM has questions to answer.
            "task_0010",
            "--judge",
            f"hybrid:{MODEL}",
            "--judge-base-url",
            server.base_url,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "Traceback" not in output
    return output


def _rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(db), read_only=True) as conn:
        return conn.execute(sql).fetchall()


def _criteria(db: Path) -> list[tuple[Any, ...]]:
    return _rows(
        db,
        "SELECT cell_key, tier, name, status, passed, judge_id, prompt_hash, error "
        "FROM eval.verdicts WHERE kind = 'criterion' ORDER BY ALL",
    )


def _report_coverage(path: Path) -> list[str]:
    """The 'criteria decided' column of the report's per-cell table, one value per row."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if "| criteria decided |" in line)
    header = [cell.strip() for cell in lines[start].strip("|").split("|")]
    column = header.index("criteria decided")
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return [row[column] for row in rows if row[header.index("ok")] != "0"]


def test_hybrid_judge_decides_every_criterion_and_a_rerun_asks_nothing(tmp_path: Path) -> None:
    env = _env(tmp_path)
    db = tmp_path / "warehouse.duckdb"
    with ScriptedServer(grading) as server:
        _experiment(env, server)
        first = server.requests
        rows = _criteria(db)
        assert rows and first > 0
        # Coverage 1.0: every criterion decided, by the rules where they can, else the LLM.
        assert {row[3] for row in rows} == {"ok"}
        deciders = {row[5] for row in rows}
        assert deciders == {RULES, f"llm:{MODEL}"}
        assert all(row[6] for row in rows if row[5] != RULES)  # the LLM's rows: a prompt hash
        runs = _rows(db, "SELECT DISTINCT judge_id FROM eval.runs WHERE judged")
        assert runs == [(f"hybrid:{MODEL}",)]
        (questions, requests) = _rows(
            db, "SELECT sum(judge_questions), sum(judge_requests) FROM eval.runs"
        )[0]
        assert requests == first  # every request the server saw
        assert questions == first  # one request per question: nothing was retried
        # Criterion coverage per cell, in the warehouse and in the report.
        coverage = _rows(
            db,
            "SELECT DISTINCT criterion_coverage FROM main.experiment_summary WHERE runs_ok > 0",
        )
        assert coverage == [(1.0,)]
        decided = _report_coverage(tmp_path / "experiment_report.md")
        assert decided and set(decided) == {"1.00"}

        # The same command again: every answer comes from the judge cache.
        _experiment(env, server)
        assert server.requests == first
        assert _rows(
            db, "SELECT DISTINCT judge_questions, judge_requests FROM eval.runs WHERE judged"
        ) == [(0, 0)]
        assert _criteria(db) == rows


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
    env = _env(tmp_path)
    db = tmp_path / "warehouse.duckdb"
    with ScriptedServer(failing) as server:
        _experiment(env, server)
    rows = _criteria(db)
    ruled = [row for row in rows if row[5] == RULES]
    left = [row for row in rows if row[5] != RULES]
    assert ruled and left and server.requests > 0
    assert {row[3] for row in ruled} == {"ok"}  # the rules' decisions stand
    for row in left:
        assert row[3] == "unscored" and row[4] is None, row
        assert row[7].startswith(error), row
    # Garbage is not retried; a 500 is, 1 + 2 retries (judge.yml), the SDK's own retries off.
    assert server.requests % attempts == 0
    coverage = _rows(
        db, "SELECT DISTINCT criterion_coverage FROM main.experiment_summary WHERE runs_ok > 0"
    )
    # Counted, never NULL: below 1 in every judged cell (0 where the rules decided nothing).
    values = [value for (value,) in coverage]
    assert all(value is not None and value < 1 for value in values), values
    assert any(value > 0 for value in values), values
    # Unscored criteria never count as failures: the runs' accuracy averages decided ones only.
    assert _rows(db, "SELECT count(*) FROM eval.runs WHERE status = 'ok' AND NOT scored") == [(0,)]
