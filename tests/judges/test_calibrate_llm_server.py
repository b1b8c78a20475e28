"""``datagouv-eval judge calibrate --judge llm:PROVIDER/MODEL --judge-base-url URL`` against a real
OpenAI-compatible HTTP server on 127.0.0.1, through the real client path (``resolve_model``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pydantic_ai.models
import pytest
import yaml
from click.testing import CliRunner

from datagouv_eval_pipeline.cli import main
from datagouv_eval_pipeline.core.judges.calibration import criterion_sha, target_sha
from tests.judges.judge_server import grading
from tests.judges.judges_factories import real_tasks
from tests.providers.scripted_server import Reply, ScriptedServer

MARK = "VALIDÉ-PAR-LE-SERVEUR"


@pytest.fixture(autouse=True)
def _requests_to_the_local_server(monkeypatch: pytest.MonkeyPatch) -> None:
    # Model requests are allowed here: they can only reach the server on 127.0.0.1.
    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)


def script(body: dict[str, Any]) -> Reply:
    """Criteria pass only when the answer carries MARK; every other question as ``grading``."""
    reply = grading(body)
    tool = body["tools"][0]["function"]
    if "passed" in tool["parameters"]["properties"]:
        prompt = str(body["messages"][-1]["content"])
        call = reply.body["choices"][0]["message"]["tool_calls"][0]["function"]
        arguments = json.loads(call["arguments"])
        arguments["passed"] = MARK in prompt
        call["arguments"] = json.dumps(arguments)
    return reply


def calibration_file(path: Path) -> None:
    task = real_tasks()["task_0002"]
    sha = criterion_sha(task.criteria("minimal")[0].criteria)
    samples = [
        {
            "id": f"s{i}",
            "task_id": "task_0002",
            "answer": f"Il y en avait 2076. {MARK if i < 2 else ''}",
            "instances": [{"action": "search.datasets", "args": {"query": "catalogue"}}],
        }
        for i in range(4)
    ]

    def item(i: int, human: str, **fields: Any) -> dict[str, Any]:
        return {
            "id": f"i{len(items)}",
            "task_id": "task_0002",
            "sample": f"s{i}",
            "human": human,
            "kind": human,
            "note": "hand label",
            **fields,
        }

    items: list[dict[str, Any]] = []
    for i, human in enumerate(["pass", "fail", "fail", "fail"]):
        items.append(item(i, human, verdict_kind="criterion", criterion=0, criterion_sha=sha))
    items.append(
        item(
            0,
            "fail",
            verdict_kind="trajectory",
            tier="minimal",
            target_sha=target_sha(task, "minimal"),
        )
    )
    items.append(
        item(
            0,
            "pass",
            verdict_kind="arguments",
            tier="minimal",
            required_index=0,
            candidate=0,
            target_sha=target_sha(task, "minimal", 0),
        )
    )
    items.append(item(0, "pass", verdict_kind="failure_mode", tier="minimal", mode="HALLUCINATION"))
    path.write_text(
        yaml.safe_dump({"version": 2, "samples": samples, "items": items}, allow_unicode=True),
        encoding="utf-8",
    )


def test_an_llm_judge_is_calibrated_against_a_local_openai_compatible_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MISTRAL_API_KEY", "test-key-sent-to-127.0.0.1-only")
    labels = tmp_path / "labels.yml"
    calibration_file(labels)
    db = tmp_path / "w.duckdb"
    with ScriptedServer(script) as server:
        args = [
            "judge",
            "calibrate",
            "--judge",
            "llm:mistral/mistral-small-2603",
            "--judge-base-url",
            server.base_url,
            "--set",
            str(labels),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--warehouse",
            str(db),
        ]
        result = CliRunner().invoke(main, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        # 4 criteria + 1 trajectory + 1 arguments + the failure-mode item (told this judge's own
        # verdicts on the 2 minimal criteria of its sample): 9 questions, one request each.
        assert server.requests == 9
        again = CliRunner().invoke(main, args, catch_exceptions=False)
        assert again.exit_code == 0
        assert server.requests == 9  # every answer from the judge cache
    assert "judge: llm:mistral/mistral-small-2603" in result.output
    # The spend counts every question asked, the 2 criteria behind the failure-mode item too.
    assert "judge spend: 9 questions in 9 HTTP requests, 0 cache hits" in result.output
    with duckdb.connect(str(db), read_only=True) as conn:
        rows = {
            kind: (items, scored, kappa, prompt_hash, reason, accuracy)
            for kind, items, scored, kappa, prompt_hash, reason, accuracy in conn.execute(
                "SELECT verdict_kind, items, scored, kappa, prompt_hash, reason, accuracy "
                "FROM eval.judge_calibration WHERE judge_id = 'llm:mistral/mistral-small-2603'"
            ).fetchall()
        }
    # criterion: (pass, pass), (fail, pass), (fail, fail), (fail, fail): 3 of 4 agree; on 4
    # items no kappa is given, the reason instead.
    assert rows["criterion"][:3] == (4, 4, None)
    assert rows["criterion"][4] == "fewer than 30 labelled items (n=4)"
    assert rows["criterion"][5] == pytest.approx(3 / 4)
    assert rows["criterion"][3] and rows["criterion"][3] != rows["trajectory"][3]
    # One item each: the server decided it (n = 1), no kappa, and the reason says why.
    for kind in ("trajectory", "arguments", "failure_mode"):
        items, scored, kappa, _, reason, _ = rows[kind]
        assert (items, scored, kappa) == (1, 1, None)
        assert reason == "fewer than 30 labelled items (n=1)"
    assert rows["all"][:3] == (7, 7, None)
