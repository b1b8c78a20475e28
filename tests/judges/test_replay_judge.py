"""The LLM judge through the real OpenAI-compatible client: record a cassette, then replay it."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pydantic_ai.models
import pytest

from datagouv_eval_pipeline.core.benchmark.loader import load_benchmark_config
from datagouv_eval_pipeline.core.judges.config import resolve_model
from datagouv_eval_pipeline.core.judges.llm import LLMJudge
from datagouv_eval_pipeline.core.judges.protocol import CriterionInput, tool_evidence
from datagouv_eval_pipeline.core.judges.verdict import Verdict, outcome
from datagouv_eval_pipeline.core.providers.retry import RetryPolicy
from datagouv_eval_pipeline.world.replay import (
    ReplayConfig,
    ReplayServer,
    load_cassette,
    tool_call_completion,
)
from tests.judges.judges_factories import example_trace, real_tasks

MODEL = "mistral/mistral-small-2603"


class GraderScript:
    """A scripted provider: passes the criterion when the answer block contains 2066."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> Mapping[str, Any]:
        self.bodies.append(body)
        prompt = body["messages"][-1]["content"]
        answer = prompt.split("<answer>")[1].split("</answer>")[0]
        passed = "2\u202f066" in answer or "2066" in answer
        output_tool = body["tools"][0]["function"]["name"]
        arguments = {"passed": passed, "grounded": passed, "reason": "read from the answer"}
        return tool_call_completion(
            str(body["model"]), [(output_tool, arguments)], prompt_tokens=321, completion_tokens=9
        )


@pytest.fixture
def allow_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    # Restored after the test: a leaked False would refuse every later test's model requests.
    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)


def ask(base_url: str) -> Verdict:
    models = load_benchmark_config().models
    judge = LLMJudge(
        {"default": resolve_model(MODEL, models, base_url=base_url)}, retry=RetryPolicy(retries=0)
    )
    task = real_tasks()["task_0002"]
    trace = example_trace("task_0002_mcp.json")
    return asyncio.run(
        judge.criterion(
            CriterionInput(
                task.prompt, trace.answer, task.criteria("minimal")[0], tool_evidence(trace)
            )
        )
    )


def test_the_llm_judge_records_and_replays_a_cassette(
    tmp_path: Path, allow_requests: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MISTRAL_API_KEY", raising=False)
    script = GraderScript()
    cassettes = tmp_path / "cassettes"
    with ReplayServer(ReplayConfig(mode="scripted", responder=script)) as upstream:
        record = ReplayConfig(
            mode="record", cassettes_dir=cassettes, upstream_url=upstream.base_url
        )
        with ReplayServer(record) as recorder:
            recorded = ask(recorder.cassette_url("judge-criterion"))
    assert outcome(recorded) == "pass"
    assert (recorded.input_tokens, recorded.output_tokens) == (321, 9)
    (body,) = script.bodies
    assert body["model"] == "mistral-small-2603"
    assert body["temperature"] == 0
    assert "Total rows (Tabular API): 2066" in body["messages"][-1]["content"]
    assert len(load_cassette(cassettes / "judge-criterion.json").interactions) == 1

    with ReplayServer(ReplayConfig(mode="replay", cassettes_dir=cassettes)) as replay:
        replayed = ask(replay.cassette_url("judge-criterion"))
        replay.raise_for_misses()
    assert len(script.bodies) == 1  # the provider was not asked again
    assert replayed.model_dump(exclude={"cached"}) == recorded.model_dump(exclude={"cached"})
    assert replayed.judge_id == f"llm:{MODEL}"
