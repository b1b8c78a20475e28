"""Agent runs and judge calls of one provider draw on one tokens-per-minute budget.

A real agent run (the twin, the OpenAI client) and a real LLM-judge question both go to one
:class:`ScriptedServer` on 127.0.0.1 as the same provider, through one :class:`RateLimiters`
object on a fake clock. Each request reserves its estimate and settles what the server billed,
so the bucket ends lower by exactly the tokens both spent.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pydantic_ai.models
import pytest

from datagouv_eval_pipeline.core.benchmark.cells import expand_cells
from datagouv_eval_pipeline.core.benchmark.loader import load_benchmark_config
from datagouv_eval_pipeline.core.judges.config import resolve_model
from datagouv_eval_pipeline.core.judges.llm import LLMJudge
from datagouv_eval_pipeline.core.judges.protocol import CriterionInput, tool_evidence
from datagouv_eval_pipeline.core.judges.verdict import outcome
from datagouv_eval_pipeline.core.providers.limits import RateLimit, RateLimiters
from datagouv_eval_pipeline.core.tasks.spec import TaskSpec
from datagouv_eval_pipeline.pipeline.agents.runner import run_cell
from datagouv_eval_pipeline.world.api.server import TwinServer
from tests.benchmark.benchmark_fixtures import write_config
from tests.judges.judge_server import COMPLETION_TOKENS, PROMPT_TOKENS, grading
from tests.providers.scripted_server import Reply, ScriptedServer, SearchThenAnswer

from .helpers import FakeClock

TOKENS_PER_MINUTE = 60_000  # 1,000 a second
AGENT = SearchThenAnswer(prompt_tokens=10, completion_tokens=5)


def _answer(body: dict[str, Any]) -> Reply:
    """The agent's questions offer ``final_answer``; the judge's offer its verdict's tool."""
    tools = {tool["function"]["name"] for tool in body.get("tools") or []}
    return AGENT(body) if "final_answer" in tools else grading(body)


@pytest.fixture(autouse=True)
def allow_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)


def test_a_judge_call_and_an_agent_run_draw_on_one_token_budget(
    tmp_path: Path, twin: TwinServer, tasks: dict[str, TaskSpec]
) -> None:
    clock = FakeClock()
    limiters = RateLimiters({"albert": RateLimit(tokens_per_minute=TOKENS_PER_MINUTE)}, clock=clock)
    with ScriptedServer(_answer) as server:
        config_dir = write_config(tmp_path / "benchmark")
        models = config_dir / "models.yml"
        text = models.read_text(encoding="utf-8")
        models.write_text(text.replace("https://albert.example/v1", server.base_url, 1), "utf-8")
        config = load_benchmark_config(config_dir)
        cell = next(
            c
            for c in expand_cells(config)
            if c.model.provider == "albert" and c.capabilities == ("mcp",)
        )
        task = tasks["task_0003"]
        (trace,) = run_cell(
            cell,
            [task],
            twin_urls=twin.urls,
            environ={"ALBERT_API_KEY": "sk-local-test"},
            rate_limiters=limiters,
            clock=clock,
        )
        judge = LLMJudge(
            {
                "default": resolve_model(
                    "albert/openai/gpt-oss-120b", config.models, base_url=server.base_url
                )
            },
            limiters=limiters,
        )
        assert judge.limiter_of("default") is limiters.get("albert")
        verdict = asyncio.run(
            judge.criterion(
                CriterionInput(
                    task.prompt, trace.answer, task.criteria("minimal")[0], tool_evidence(trace)
                )
            )
        )
        asyncio.run(judge.aclose())
    assert trace.status == "ok", trace.status_reason
    assert outcome(verdict) == "pass"
    # Two agent requests of 10 + 5 tokens, one judge request of 200 + 20: 250 in all.
    assert trace.usage.total_tokens == 30
    assert judge.model_requests == 1
    spent = trace.usage.total_tokens + PROMPT_TOKENS + COMPLETION_TOKENS
    assert spent == 250
    assert clock.slept == []  # the bucket never ran dry: it refilled nothing meanwhile
    # The bucket holds 60,000 - 250: taking exactly that empties it without a wait, and 1,000
    # more is one second of refill away. (Had the judge not settled, 220 would be left.)
    limiter = limiters.get("albert")
    assert limiter.reserve(TOKENS_PER_MINUTE - spent) == 0.0
    assert limiter.reserve(1000) == pytest.approx(1.0)
