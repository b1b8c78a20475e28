"""``datagouv-eval experiment --judge``: checked before any run, then passed to the launchpad."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from datagouv_eval_pipeline.cli import experiment

RUN = ["--tasks", "task_0002", "--evaluation-type", "data_contamination"]


def invoke(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *args: str
) -> tuple[int, str, dict[str, Any]]:
    seen: dict[str, Any] = {}

    def fake_execute(settings: dict[str, Any], **options: Any) -> Any:
        seen.update(options)
        raise SystemExit(0)  # the run itself is the pipeline tests' business

    monkeypatch.setattr(experiment, "_execute", fake_execute)
    monkeypatch.setenv("DAGSTER_HOME", "")
    # Its own run store and warehouse: the defaults may be locked by another test's run.
    monkeypatch.setenv("DATAGOUV_EVAL_RUN_STORE", str(tmp_path / "run_store"))
    monkeypatch.setenv("DATAGOUV_EVAL_DUCKDB", str(tmp_path / "warehouse.duckdb"))
    result = CliRunner().invoke(experiment.command, [*RUN, *args])
    return result.exit_code, result.output, seen


@pytest.mark.parametrize(
    ("choice", "message"),
    [
        ("oracle", "expected KIND[:PROVIDER/MODEL] with KIND one of deterministic, llm, hybrid"),
        ("llm", "kind 'llm' needs a model"),
        ("hybrid:nobody/none", "unknown judge model 'nobody/none'"),
        ("hybrid:offline/baseline-oneshot", "is an offline baseline policy, not an LLM"),
    ],
)
def test_a_bad_judge_is_a_usage_error_before_any_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, choice: str, message: str
) -> None:
    code, output, seen = invoke(monkeypatch, tmp_path, "--judge", choice)
    assert code == 2
    assert message in output
    assert "Traceback" not in output and not seen


def test_a_missing_key_names_its_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("MISTRAL_API_KEY", raising=False)
    code, output, _ = invoke(monkeypatch, tmp_path, "--judge", "hybrid:mistral/mistral-small-2603")
    assert code == 2 and "$MISTRAL_API_KEY" in output


def test_the_judge_choice_reaches_the_judge_resource(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    code, output, seen = invoke(
        monkeypatch,
        tmp_path,
        "--judge",
        "hybrid:mistral/mistral-small-2603",
        "--judge-base-url",
        "http://127.0.0.1:9/v1",
    )
    assert code == 0, output
    assert seen["judge"] == {
        "kind": "hybrid",
        "model": "mistral/mistral-small-2603",
        "base_url": "http://127.0.0.1:9/v1",
    }
    code, output, seen = invoke(monkeypatch, tmp_path)
    assert code == 0, output
    assert seen["judge"] == {"kind": "deterministic", "model": ""}  # judge.yml's default
