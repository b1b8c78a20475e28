"""Judge benchmarks: throughput under a provider rate limit, and re-scoring with a warm cache.

1. **Throughput.** An LLM judge backed by a local ``FunctionModel`` that answers after a fixed
   latency judges N criteria concurrently through the provider's ``RateLimiter`` (requests per
   minute) and the judge's concurrency bound. Reported: achieved requests per minute against
   the limit (goal: >= 90 %).
2. **Warm cache.** 1,000 distinct traces are judged once to fill the cache (with an instant stand-in
   for the model, so the setup does not take minutes), then judged again by a fresh judge whose
   model counts its calls. Reported: model calls (goal: 0) and wall time (goal: < 10 s).

Run: ``python3 -m uv run python bench/bench_judges.py [--traces 1000] [--seconds 10]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from datagouv_eval_pipeline.core.judges.cache import JudgeCache
from datagouv_eval_pipeline.core.judges.config import Role, RoleModel
from datagouv_eval_pipeline.core.judges.llm import LLMJudge
from datagouv_eval_pipeline.core.judges.prompts import (
    ArgumentsOutput,
    ClassificationOutput,
    CriterionOutput,
    FailureModesOutput,
    JudgePrompt,
    TrajectoryOutput,
)
from datagouv_eval_pipeline.core.judges.protocol import CriterionInput, tool_evidence
from datagouv_eval_pipeline.core.judges.runner import judge_trace
from datagouv_eval_pipeline.core.providers.limits import RateLimit, RateLimiters
from datagouv_eval_pipeline.core.tasks.loader import TASK_SPECS_DIR, load_task_specs
from datagouv_eval_pipeline.core.traces import Trace, load_trace

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "docs" / "examples" / "traces"
MODEL_ID = "bench/fixed-latency"
THROUGHPUT_GOAL = 0.90
WARM_GOAL_S = 10.0


# --- 1. throughput under a rate limit ----------------------------------------------------------


class FixedLatencyModel:
    """A local judge model answering after a fixed latency; records when each request started."""

    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s
        self.starts: list[float] = []
        self.ends: list[float] = []

    async def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.starts.append(time.perf_counter())
        await asyncio.sleep(self.latency_s)
        self.ends.append(time.perf_counter())
        arguments = {"passed": True, "grounded": True, "reason": "stated"}
        return ModelResponse(
            parts=[ToolCallPart(info.output_tools[0].name, arguments)],
            usage=RequestUsage(input_tokens=1500, output_tokens=40),
        )


async def throughput(
    rpm: float, latency_s: float, concurrency: int, seconds: float
) -> dict[str, Any]:
    """Judge ``rpm / 60 * seconds`` criteria at once through a limiter of ``rpm``.

    ``steady_share`` is the request start rate between the first and the last request over the
    limit: what the limiter sustains. ``wall_share`` divides all requests by the whole wall time,
    which also counts pydantic-ai's start-up of every run (they are all launched at once, and the
    first request waits until every run has been set up) and the last request's latency.
    """
    tasks = {task.task_id: task for task in load_task_specs([TASK_SPECS_DIR])}
    task = tasks["task_0002"]
    trace = load_trace(EXAMPLES / "task_0002_mcp.json")
    evidence = tool_evidence(trace)
    limiters = RateLimiters({"bench": RateLimit(requests_per_minute=rpm)})
    model = FixedLatencyModel(latency_s)
    judge = LLMJudge(
        {
            "default": RoleModel(
                FunctionModel(model, model_name=MODEL_ID), MODEL_ID, limiter_key="bench"
            )
        },
        limiters=limiters,
        max_concurrency=concurrency,
        timeout_s=30.0,
    )
    n = max(2, int(rpm / 60 * seconds))
    criterion = task.criteria("minimal")[0]
    started = time.perf_counter()
    verdicts = await asyncio.gather(
        *(
            judge.criterion(
                CriterionInput(task.prompt, f"{trace.answer}\n(variant {i})", criterion, evidence)
            )
            for i in range(n)
        )
    )
    elapsed = time.perf_counter() - started
    starts = sorted(model.starts)
    steady_rpm = (len(starts) - 1) / (starts[-1] - starts[0]) * 60
    wall_rpm = n / elapsed * 60
    return {
        "limit_rpm": rpm,
        "latency_s": latency_s,
        "concurrency": concurrency,
        "requests": n,
        "model_requests": judge.model_requests,
        "ok_verdicts": sum(1 for v in verdicts if v.scored),
        "first_request_after_s": round(starts[0] - started, 2),
        "elapsed_s": round(elapsed, 2),
        "steady_rpm": round(steady_rpm, 1),
        "steady_share": round(steady_rpm / rpm, 4),
        "wall_rpm": round(wall_rpm, 1),
        "wall_share": round(wall_rpm / rpm, 4),
    }


# --- 2. warm cache -----------------------------------------------------------------------------


def _canned(prompt: JudgePrompt, message: str) -> BaseModel:
    kind = prompt.output_type
    if kind is CriterionOutput:
        return CriterionOutput(passed=True, grounded=True, reason="stated")
    if kind is TrajectoryOutput:
        return TrajectoryOutput(score=0.8, reason="close to the chain")
    if kind is FailureModesOutput:
        absent = {"present": False, "reason": "not seen"}
        return FailureModesOutput.model_validate(
            {name: absent for name in FailureModesOutput.model_fields}
        )
    if kind is ArgumentsOutput:
        block = message[message.index("<candidates>") : message.index("</candidates>")]
        numbers = [int(n) for n in re.findall(r"^(\d+)\. ", block, re.MULTILINE)]
        return ArgumentsOutput.model_validate(
            {"matches": [{"candidate": n, "correct": True, "reason": "ok"} for n in numbers]}
        )
    return ClassificationOutput(actions=[], reason="local computation")


class _InstantJudge(LLMJudge):
    """Fills the cache without paying pydantic-ai's per-run overhead (setup only)."""

    async def _call_model(
        self, role: Role, prompt: JudgePrompt, message: str
    ) -> tuple[BaseModel | None, str | None, int, int]:
        return _canned(prompt, message), None, 1500, 40


def _unexpected_call(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    raise AssertionError("the warm pass must not call the model")


def make_traces(count: int) -> list[Trace]:
    sources = [load_trace(path) for path in sorted(EXAMPLES.glob("*.json"))]
    traces = []
    for i in range(count):
        base = sources[i % len(sources)]
        traces.append(base.model_copy(update={"answer": f"{base.answer}\n\n(run {i})"}))
    return traces


async def judge_all(judge: LLMJudge, traces: list[Trace], tasks: dict[str, Any]) -> list[Any]:
    results: list[Any] = []
    for start in range(0, len(traces), 100):
        chunk = traces[start : start + 100]
        results += await asyncio.gather(*(judge_trace(judge, tasks[t.task_id], t) for t in chunk))
    return results


async def warm_cache(count: int, cache_dir: Path) -> dict[str, Any]:
    tasks = {task.task_id: task for task in load_task_specs([TASK_SPECS_DIR])}
    traces = make_traces(count)
    role = RoleModel(FunctionModel(_unexpected_call, model_name=MODEL_ID), MODEL_ID)
    cold = _InstantJudge({"default": role}, cache=JudgeCache(cache_dir))
    started = time.perf_counter()
    await judge_all(cold, traces, tasks)
    cold_s = time.perf_counter() - started
    entries = JudgeCache(cache_dir).count()

    warm = LLMJudge({"default": role}, cache=JudgeCache(cache_dir))
    started, cpu_started = time.perf_counter(), time.process_time()
    judged = await judge_all(warm, traces, tasks)
    warm_s = time.perf_counter() - started
    warm_cpu_s = time.process_time() - cpu_started
    verdicts = [v for j in judged for v in j.verdicts()]
    llm_verdicts = [v for v in verdicts if v.judge_id.startswith("llm:")]
    return {
        "traces": count,
        "cache_entries": entries,
        "cold_fill_s": round(cold_s, 2),
        "warm_s": round(warm_s, 2),
        "warm_cpu_s": round(warm_cpu_s, 2),
        "warm_ms_per_trace": round(warm_s / count * 1000, 2),
        "model_requests": warm.model_requests,
        "llm_verdicts": len(llm_verdicts),
        "cache_hits": sum(1 for v in llm_verdicts if v.cached),
        "judge_calls_spent": sum(j.judge_spend.questions for j in judged),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=10.0, help="per throughput config")
    args = parser.parse_args()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs, "
        f"load average {load:.1f}"
    )
    configs = [(1200.0, 0.25, 8), (600.0, 1.0, 16), (1800.0, 0.5, 24)]
    results: dict[str, Any] = {"throughput": []}
    print("\nthroughput under a rate limit (goal: steady rate >= 90 % of the limit)")
    header = ("limit rpm", "latency", "conc.", "requests", "steady rpm", "share", "wall share")
    print("{:>10}{:>9}{:>7}{:>10}{:>12}{:>8}{:>12}".format(*header))
    for rpm, latency, concurrency in configs:
        row = asyncio.run(throughput(rpm, latency, concurrency, args.seconds))
        results["throughput"].append(row)
        mark = "ok" if row["steady_share"] >= THROUGHPUT_GOAL else "BELOW GOAL"
        print(
            f"{rpm:>10.0f}{latency:>9.2f}{concurrency:>7}{row['requests']:>10}"
            f"{row['steady_rpm']:>12.1f}{row['steady_share']:>8.1%}{row['wall_share']:>12.1%}"
            f"  {mark}"
        )
    with tempfile.TemporaryDirectory() as tmp:
        warm = asyncio.run(warm_cache(args.traces, Path(tmp)))
    results["warm_cache"] = warm
    print(
        f"\nre-scoring {warm['traces']} unchanged traces with a warm cache (goal: 0 calls, < 10 s)"
    )
    print(
        f"  cache entries {warm['cache_entries']}, cold fill {warm['cold_fill_s']} s; warm pass "
        f"{warm['warm_s']} s wall, {warm['warm_cpu_s']} s CPU ({warm['warm_ms_per_trace']} "
        "ms/trace), model requests "
        f"{warm['model_requests']}, cache hits {warm['cache_hits']}/{warm['llm_verdicts']}"
    )
    ok = warm["model_requests"] == 0 and warm["warm_s"] < WARM_GOAL_S
    print("  " + ("ok" if ok else "BELOW GOAL"))
    print("\n" + json.dumps(results, indent=2))
    if not ok or any(r["steady_share"] < THROUGHPUT_GOAL for r in results["throughput"]):
        sys.exit(1)


if __name__ == "__main__":
    main()
