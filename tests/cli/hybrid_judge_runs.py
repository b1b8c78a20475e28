"""Shared by the ``test_experiment_hybrid_judge*`` files: the real command and its warehouse.

The judge is a real OpenAI-compatible server on 127.0.0.1 (valid verdicts, or failures),
reached through the real client by the command's ``--judge-base-url``; the agents are the
offline baselines against the twin (the MCP-version cells, one task). Each test has its own
Dagster instance, run store and warehouse.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import duckdb

from datagouv_eval_pipeline.core.judges.deterministic import JUDGE_ID
from tests.cli.command_env import CLI, experiment_env
from tests.providers.scripted_server import ScriptedServer

# OpenAI's quota (500 requests a minute, models.yml) spaces the judge's requests 0.12 s apart;
# Mistral's 60 made each of the tens of requests to the local server wait a second.
MODEL = "openai/gpt-5.4-nano-2026-03-17"
RULES = JUDGE_ID  # the deterministic judge decides the rules


def hybrid_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return experiment_env(tmp_path, OPENAI_API_KEY="test-key-for-a-local-server", **extra)


def experiment(env: dict[str, str], server: ScriptedServer) -> str:
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


def rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(db), read_only=True) as conn:
        return conn.execute(sql).fetchall()


def criteria(db: Path) -> list[tuple[Any, ...]]:
    return rows(
        db,
        "SELECT cell_key, tier, name, status, passed, judge_id, prompt_hash, error "
        "FROM eval.verdicts WHERE kind = 'criterion' ORDER BY ALL",
    )


def report_coverage(path: Path) -> list[str]:
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
