"""``datagouv-eval experiment --judge``: checked before any run, then passed to the launchpad."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner

from datagouv_eval_pipeline.cli import experiment

RUN = ["--tasks", "task_0002", "--evaluation-type", "data_contamination"]


def invoke(monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, str, dict[str, Any]]:
    seen: dict[str, Any] = {}

    def fake_execute(settings: dict[str, Any], **options: Any) -> Any:
        seen.update(options)
        raise SystemExit(0)  # the run itself is the pipeline tests' business

    monkeypatch.setattr(experiment, "_execute", fake_execute)
    monkeypatch.setenv("DAGSTER_HOME", "")
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
    monkeypatch: pytest.MonkeyPatch, choice: str, message: str
) -> None:
    code, output, seen = invoke(monkeypatch, "--judge", choice)
    assert code == 2
    assert message in output
    assert "Traceback" not in output and not seen


def test_a_missing_key_names_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MISTRAL_API_KEY", raising=False)
    code, output, _ = invoke(monkeypatch, "--judge", "hybrid:mistral/mistral-small-2603")
    assert code == 2 and "$MISTRAL_API_KEY" in output


def test_the_judge_choice_reaches_the_judge_resource(monkeypatch: pytest.MonkeyPatch) -> None:
    code, _, seen = invoke(
        monkeypatch,
        "--judge",
        "hybrid:mistral/mistral-small-2603",
        "--judge-base-url",
        "http://127.0.0.1:9/v1",
    )
    assert code == 0
    assert seen["judge"] == {
        "kind": "hybrid",
        "model": "mistral/mistral-small-2603",
        "base_url": "http://127.0.0.1:9/v1",
    }
    code, _, seen = invoke(monkeypatch)
    assert seen["judge"] == {"kind": "deterministic", "model": ""}  # judge.yml's default
