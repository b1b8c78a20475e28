"""The hybrid judge against an instant local OpenAI-compatible server, through the real client.

1. **Requests per question.** One criterion question against a server that answers, and one
   that always answers 503: judge calls (what the verdicts' spend counts) and HTTP requests (what
   the server received). Goal: 1 request per call when the server answers, exactly
   ``1 + retries`` when it always fails (the SDK's own retries are off).
2. **Hybrid throughput.** ``--traces`` traces (the four example traces, each answer suffixed so
   no two questions are alike) judged by ``HybridJudge`` with the LLM behind the project's
   record/replay server in scripted mode (no latency, unpaced): traces per second, LLM calls and
   HTTP requests per trace, and the share of verdicts the rules decided.

3. **Classification in the mapping stage.** ``--traces`` traces with one call each that the
   rules leave undecided (a request whose URL static analysis cannot follow, never on the
   wire) mapped by ``map_actions`` with the hybrid judge as classifier: judge calls and HTTP
   requests per undecided call, calls per second; then the same traces mapped again with a
   fresh judge on the same cache directory (goal: 0 requests).

Run: ``python3 -m uv run python bench/bench_judge_server.py [--traces 200]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pydantic_ai.models

from datagouv_eval_pipeline.core.benchmark.cells import expand_cells
from datagouv_eval_pipeline.core.benchmark.loader import load_benchmark_config
from datagouv_eval_pipeline.core.judges.cache import JudgeCache
from datagouv_eval_pipeline.core.judges.config import resolve_model
from datagouv_eval_pipeline.core.judges.hybrid import HybridJudge
from datagouv_eval_pipeline.core.judges.llm import LLMJudge
from datagouv_eval_pipeline.core.judges.protocol import CriterionInput, tool_evidence
from datagouv_eval_pipeline.core.judges.runner import judge_trace
from datagouv_eval_pipeline.core.judges.verdict import judge_spend
from datagouv_eval_pipeline.core.providers.limits import RateLimit, RateLimiters
from datagouv_eval_pipeline.core.providers.retry import RetryPolicy
from datagouv_eval_pipeline.core.tasks.loader import TASK_SPECS_DIR, load_task_specs
from datagouv_eval_pipeline.core.traces import Trace, load_trace
from datagouv_eval_pipeline.pipeline.experiment.documents import AgentRunsDocument
from datagouv_eval_pipeline.pipeline.experiment.stages import map_actions
from datagouv_eval_pipeline.world.replay import (
    ProviderSimulation,
    ReplayConfig,
    ReplayServer,
    tool_call_completion,
)

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "docs" / "examples" / "traces"
MODEL = "mistral/mistral-small-2603"
_CANDIDATE = re.compile(r"^(\d+)\. ", re.MULTILINE)


def grading(body: dict[str, Any]) -> Mapping[str, Any]:
    """A valid structured verdict for whatever question the request asks."""
    tool = body["tools"][0]["function"]
    properties = tool["parameters"]["properties"]
    prompt = str(body["messages"][-1]["content"])
    arguments: dict[str, Any]
    if "passed" in properties:
        arguments = {"passed": True, "grounded": True, "reason": "stated"}
    elif "score" in properties:
        arguments = {"score": 0.5, "reason": "half of the chain"}
    elif "matches" in properties:
        numbers = sorted({int(n) for n in _CANDIDATE.findall(prompt.split("<candidates>")[-1])})
        arguments = {
            "matches": [{"candidate": n, "correct": True, "reason": "ok"} for n in numbers]
        }
    elif "actions" in properties:
        arguments = {"actions": [], "reason": "local computation"}
    else:
        arguments = {mode: {"present": False, "reason": "not seen"} for mode in properties}
    return tool_call_completion(str(body["model"]), [(tool["name"], arguments)])


def llm_judge(
    base_url: str, retry: RetryPolicy, concurrency: int = 8, cache: JudgeCache | None = None
) -> LLMJudge:
    models = load_benchmark_config().models
    return LLMJudge(
        {"default": resolve_model(MODEL, models, base_url=base_url)},
        limiters=RateLimiters(default=RateLimit()),  # unpaced: the judge's own cost is measured
        max_concurrency=concurrency,
        retry=retry,
        cache=cache,
    )


def per_question(simulation: ProviderSimulation, retry: RetryPolicy) -> dict[str, Any]:
    tasks = {task.task_id: task for task in load_task_specs([TASK_SPECS_DIR])}
    task = tasks["task_0002"]
    trace = load_trace(EXAMPLES / "task_0002_mcp.json")
    config = ReplayConfig(mode="scripted", responder=grading, simulation=simulation)
    with ReplayServer(config) as server:
        judge = llm_judge(server.base_url, retry)

        async def ask() -> Any:
            criterion = task.criteria("minimal")[0]
            try:
                return await judge.criterion(
                    CriterionInput(task.prompt, trace.answer, criterion, tool_evidence(trace))
                )
            finally:
                await judge.aclose()

        verdict = asyncio.run(ask())
        stats = server.state.stats()
    return {
        "status": verdict.status.value,
        "questions": 1,
        "judge_calls_with_tokens": judge_spend([verdict]).questions,
        "http_requests": stats["requests"],
        "waits_s": [round(w.seconds, 3) for w in judge.waits],
    }


def make_traces(count: int) -> list[Trace]:
    sources = [load_trace(path) for path in sorted(EXAMPLES.glob("*.json"))]
    return [
        sources[i % len(sources)].model_copy(
            update={"answer": f"{sources[i % len(sources)].answer}\n\n(run {i})"}
        )
        for i in range(count)
    ]


async def _judge_all(judge: HybridJudge, traces: list[Trace], tasks: dict[str, Any]) -> list[Any]:
    try:
        return list(
            await asyncio.gather(*(judge_trace(judge, tasks[t.task_id], t) for t in traces))
        )
    finally:
        await judge.aclose()


def hybrid_throughput(count: int, concurrency: int) -> dict[str, Any]:
    tasks = {task.task_id: task for task in load_task_specs([TASK_SPECS_DIR])}
    traces = make_traces(count)
    config = ReplayConfig(mode="scripted", responder=grading)
    with ReplayServer(config) as server:
        judge = HybridJudge(llm_judge(server.base_url, RetryPolicy(retries=2), concurrency))
        started = time.perf_counter()
        judged = asyncio.run(_judge_all(judge, traces, tasks))
        elapsed = time.perf_counter() - started
        stats = server.state.stats()
    verdicts = [v for j in judged for v in j.verdicts()]
    by_rules = sum(1 for v in verdicts if v.judge_id.startswith("deterministic"))
    calls = sum(j.judge_spend.questions for j in judged)
    criteria = [c.verdict for j in judged for c in j.criteria]
    return {
        "traces": count,
        "concurrency": concurrency,
        "elapsed_s": round(elapsed, 2),
        "traces_per_s": round(count / elapsed, 1),
        "llm_calls_per_s": round(calls / elapsed, 1),
        "llm_calls_per_trace": round(calls / count, 2),
        "http_requests_per_trace": round(stats["requests"] / count, 2),
        "verdicts_per_trace": round(len(verdicts) / count, 2),
        "decided_by_rules": round(by_rules / len(verdicts), 3),
        "criterion_coverage": round(sum(1 for v in criteria if v.scored) / len(criteria), 3),
    }


def _undecided_document(count: int) -> AgentRunsDocument:
    """An ``agent_runs`` document of ``count`` runs, each with one call the rules cannot decide."""
    traces = [
        Trace.model_validate(
            {
                "task_id": "task_0002",
                "repeat": i,
                "answer": "x",
                "tool_calls": [
                    {
                        "id": "c0",
                        "name": "execute_python",
                        "arguments": {
                            "code": "import os, requests\n"
                            f"requests.get(os.environ['BASE'] + 'datasets/' + pick({i}))"
                        },
                        "result": "200",
                    }
                ],
            }
        )
        for i in range(count)
    ]
    cell = next(c for c in expand_cells(load_benchmark_config()) if "code" in c.capabilities)
    return AgentRunsDocument.of(cell.to_record(), traces)


def mapping_classification(count: int, concurrency: int) -> dict[str, Any]:
    document = _undecided_document(count)
    config = ReplayConfig(mode="scripted", responder=grading)
    with tempfile.TemporaryDirectory() as cache_dir, ReplayServer(config) as server:
        retry = RetryPolicy(retries=2)
        cold = HybridJudge(
            llm_judge(server.base_url, retry, concurrency, JudgeCache(Path(cache_dir)))
        )
        started = time.perf_counter()
        mapped = map_actions(document, classifier=cold)
        elapsed = time.perf_counter() - started
        cold_requests = server.state.stats()["requests"]
        warm = HybridJudge(
            llm_judge(server.base_url, retry, concurrency, JudgeCache(Path(cache_dir)))
        )
        started = time.perf_counter()
        again = map_actions(document, classifier=warm)
        warm_elapsed = time.perf_counter() - started
        warm_requests = server.state.stats()["requests"] - cold_requests
    return {
        "traces": count,
        "undecided_calls": mapped.unmapped_calls,
        "classified_calls": mapped.classified_calls,
        "judge_calls": mapped.judge_spend.questions if mapped.judge_spend else 0,
        "http_requests": cold_requests,
        "elapsed_s": round(elapsed, 2),
        "calls_per_s": round(
            (mapped.judge_spend.questions if mapped.judge_spend else 0) / elapsed, 1
        ),
        "rerun_judge_calls": again.judge_spend.questions if again.judge_spend else 0,
        "rerun_http_requests": warm_requests,
        "rerun_elapsed_s": round(warm_elapsed, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    pydantic_ai.models.ALLOW_MODEL_REQUESTS = True
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs, "
        f"load average {load:.1f}"
    )
    fast = RetryPolicy(retries=2, base_delay_s=0.01, min_delay_s=0.01, jitter_s=0)
    results: dict[str, Any] = {
        "answering": per_question(ProviderSimulation(), fast),
        "always_503": per_question(ProviderSimulation(fail_every=1, fail_status=503), fast),
    }
    print("\none criterion question, retries = 2 (goal: 1 request; 1 + 2 when always failing)")
    for name in ("answering", "always_503"):
        row = results[name]
        print(
            f"  {name:<11} {row['status']:<9} 1 question, "
            f"HTTP requests {row['http_requests']}, waits {row['waits_s']}"
        )
    row = hybrid_throughput(args.traces, args.concurrency)
    results["hybrid"] = row
    print(f"\nhybrid judge, instant local server, {row['traces']} traces")
    print(
        f"  {row['traces_per_s']} traces/s ({row['elapsed_s']} s), {row['llm_calls_per_s']} LLM "
        f"calls/s; per trace: {row['llm_calls_per_trace']} LLM calls, "
        f"{row['http_requests_per_trace']} HTTP requests, {row['verdicts_per_trace']} verdicts "
        f"({row['decided_by_rules']:.1%} decided by rules); criterion coverage "
        f"{row['criterion_coverage']}"
    )
    row = mapping_classification(args.traces, args.concurrency)
    results["mapping_classification"] = row
    print(f"\nclassification in the mapping stage, {row['traces']} traces")
    print(
        f"  {row['undecided_calls']} undecided calls -> {row['classified_calls']} classified, "
        f"{row['judge_calls']} judge calls, {row['http_requests']} HTTP requests in "
        f"{row['elapsed_s']} s ({row['calls_per_s']} calls/s); re-run on the same cache: "
        f"{row['rerun_judge_calls']} judge calls, {row['rerun_http_requests']} HTTP requests "
        f"({row['rerun_elapsed_s']} s)"
    )
    print("\n" + json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
