"""The LLM judge's retries through the real OpenAI client against a local HTTP server."""

from __future__ import annotations

import asyncio
import time
from itertools import pairwise

import pydantic_ai.models
import pytest

from datagouv_eval_pipeline.core.benchmark.loader import load_benchmark_config
from datagouv_eval_pipeline.core.judges.config import resolve_model
from datagouv_eval_pipeline.core.judges.llm import LLMJudge
from datagouv_eval_pipeline.core.judges.protocol import CriterionInput, tool_evidence
from datagouv_eval_pipeline.core.judges.verdict import Verdict, judge_spend, outcome
from datagouv_eval_pipeline.core.providers.limits import RateLimit, RateLimiters
from datagouv_eval_pipeline.core.providers.retry import RetryPolicy
from tests.judges.judge_server import grading
from tests.judges.judges_factories import example_trace, real_tasks
from tests.providers.scripted_server import Reply, ScriptedServer, always

MODEL = "mistral/mistral-small-2603"


@pytest.fixture(autouse=True)
def allow_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    # Restored after the test: a leaked False would refuse every later test's model requests.
    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)


def ask(base_url: str, retry: RetryPolicy) -> tuple[Verdict, LLMJudge]:
    models = load_benchmark_config().models
    judge = LLMJudge(
        {"default": resolve_model(MODEL, models, base_url=base_url)},
        retry=retry,
        limiters=RateLimiters(default=RateLimit()),  # unpaced: only retry waits
    )
    task = real_tasks()["task_0002"]
    trace = example_trace("task_0002_mcp.json")
    criterion = task.criteria("minimal")[0]
    verdict = asyncio.run(
        judge.criterion(CriterionInput(task.prompt, trace.answer, criterion, tool_evidence(trace)))
    )
    return verdict, judge


def test_a_server_that_always_answers_503_sees_one_plus_the_retries() -> None:
    # The counter-example: 9 requests for one question (the SDK's 2 retries inside the
    # judge's own 3 attempts). Now exactly 1 + 2.
    with ScriptedServer(always(503)) as server:
        verdict, judge = ask(
            server.base_url, RetryPolicy(retries=2, min_delay_s=0.01, base_delay_s=0.01, jitter_s=0)
        )
    assert server.requests == 3
    assert judge.model_requests == 3
    assert outcome(verdict) == "unscored"
    assert (verdict.error or "").startswith("judge provider error: ")
    assert "status_code: 503" in (verdict.error or "")
    # Two waits of 0.01 s, then 0.02 s (exponential), recorded.
    assert [round(w.seconds, 3) for w in judge.waits] == [0.01, 0.02]


def test_retry_after_zero_waits_the_floor_and_then_succeeds() -> None:
    answers = iter([always(429, **{"retry-after": "0"})] * 2)

    def script(body: dict[str, object]) -> Reply:
        return next(answers, grading)(body)

    policy = RetryPolicy(retries=2, min_delay_s=0.2, jitter_s=0)
    started = time.monotonic()
    with ScriptedServer(script) as server:
        verdict, judge = ask(server.base_url, policy)
        arrivals = server.arrivals
    assert outcome(verdict) == "pass"
    assert server.requests == 3
    assert min(b - a for a, b in pairwise(arrivals)) >= 0.2  # never hammered
    assert [(w.status, w.advised, w.seconds) for w in judge.waits] == [
        (429, 0.0, 0.2),
        (429, 0.0, 0.2),
    ]
    assert time.monotonic() - started >= 0.4


def test_one_judge_serves_several_event_loops() -> None:
    # The pipeline judges each cell in its own asyncio.run: the second cell once failed with
    # "Event loop is closed" (the HTTP client's connections belonged to the first loop).
    models = load_benchmark_config().models
    task = real_tasks()["task_0002"]
    trace = example_trace("task_0002_mcp.json")
    with ScriptedServer(grading) as server:
        judge = LLMJudge({"default": resolve_model(MODEL, models, base_url=server.base_url)})
        verdicts = [
            asyncio.run(
                judge.criterion(
                    CriterionInput(
                        task.prompt, f"{trace.answer} ({i})", task.criteria("minimal")[0], ()
                    )
                )
            )
            for i in range(3)
        ]
    assert [outcome(v) for v in verdicts] == ["pass"] * 3
    assert server.requests == 3


def test_each_verdict_counts_the_http_requests_it_sent_retries_included() -> None:
    # The counter-example: eval.runs.judge_calls said 0 in a run that sent 657 requests (it
    # counted questions that reported tokens). Three questions at once; the server refuses the
    # first two requests it sees with a 503, so two questions need a retry (or one needs two).
    refusals = iter([always(503)] * 2)

    def script(body: dict[str, object]) -> Reply:
        return next(refusals, grading)(body)

    models = load_benchmark_config().models
    task = real_tasks()["task_0002"]
    trace = example_trace("task_0002_mcp.json")
    with ScriptedServer(script) as server:
        judge = LLMJudge(
            {"default": resolve_model(MODEL, models, base_url=server.base_url)},
            retry=RetryPolicy(retries=3, min_delay_s=0.01, base_delay_s=0.01, jitter_s=0),
            limiters=RateLimiters(default=RateLimit()),
        )

        async def three() -> list[Verdict]:
            criterion = task.criteria("minimal")[0]
            return list(
                await asyncio.gather(
                    *(
                        judge.criterion(
                            CriterionInput(task.prompt, f"{trace.answer} ({i})", criterion, ())
                        )
                        for i in range(3)
                    )
                )
            )

        verdicts = asyncio.run(three())
    assert server.requests == 5  # 3 questions + 2 refused attempts
    assert [outcome(v) for v in verdicts] == ["pass"] * 3
    # Each verdict names its own requests; together they are every request the server saw.
    assert sorted(v.requests for v in verdicts)[0] == 1
    assert sum(v.requests for v in verdicts) == 5
    spend = judge_spend(verdicts)
    assert (spend.questions, spend.requests) == (3, 5)


def test_a_question_whose_every_attempt_fails_still_counts_its_requests() -> None:
    with ScriptedServer(always(503)) as server:
        verdict, _ = ask(
            server.base_url, RetryPolicy(retries=2, min_delay_s=0.01, base_delay_s=0.01, jitter_s=0)
        )
    assert outcome(verdict) == "unscored"
    assert verdict.total_tokens == 0  # no usage came back: the old count said 0 calls
    assert verdict.requests == server.requests == 3
    spend = judge_spend([verdict])
    assert (spend.questions, spend.requests) == (1, 3)
