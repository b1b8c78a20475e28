"""Agent runs: throughput under a provider rate limit, and the offline baselines' speed.

1. **Rate-limited throughput.** A local OpenAI-compatible server (the replay server in scripted
   mode) answers every chat request after a fixed delay (1 s) and enforces a request limit
   (600 per minute; 429 with ``Retry-After`` beyond it). A cell of ``--runs`` task-runs (50)
   goes through the real ``OpenAIChatModel`` code path against the twin's MCP server; the fake
   model makes three tool calls and then answers, so each run sends four requests. Reported:
   achieved requests per minute as a fraction of the limit (wall time of the whole cell,
   start-up included), the same between the first and the last request sent
   (``steady_fraction``: what the limiter sustains once running), 429 answers, failed runs.
   The provider and the twin run in child processes, as a real provider would be remote.
   Scenarios:

   * ``scheduler only``: no HTTP, no tools: an in-process model that answers after the delay
     (the runner and the limiter alone);

   * ``paced``: the provider counts over a 60 s window; the client limiter is set to the limit;
   * ``tight window``: the same average limit counted over 10 s (100 per 10 s), so any burst
     is refused; the client limiter is set to the limit;
   * ``no client limiter``: the tight-window provider, no client-side limiter: only 429 +
     ``Retry-After`` handling keeps the runs alive.

2. **Offline baselines.** Wall time and CPU time (this process, and the twin's) per task-run
   of the deterministic policies on the twin (no tools; MCP 0.2.26 with and without skills;
   every active task, ``--repeats`` times), with the cell's concurrency cap and one at a time.

Run: ``python3 -m uv run python bench/bench_agents.py [--runs 50] [--latency 1] [--rpm 600]``.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from datagouv_eval_pipeline.core.benchmark.cells import Cell, CellModel, expand_cells
from datagouv_eval_pipeline.core.benchmark.config import ProviderKind
from datagouv_eval_pipeline.core.benchmark.loader import load_benchmark_config
from datagouv_eval_pipeline.core.providers.limits import RateLimit, RateLimiter, RateLimiters
from datagouv_eval_pipeline.core.tasks.loader import TASK_SPECS_DIR, load_task_specs
from datagouv_eval_pipeline.core.tasks.spec import TaskSpec, TaskStatus
from datagouv_eval_pipeline.pipeline.agents.runner import RunSettings, execute_cell
from datagouv_eval_pipeline.world.api.server import TwinServer
from datagouv_eval_pipeline.world.catalogue.urls import TwinUrls
from datagouv_eval_pipeline.world.replay import (
    ProviderSimulation,
    ReplayConfig,
    ReplayServer,
    tool_call_completion,
)

KEY_ENV = "BENCH_PROVIDER_KEY"
BASE_KEY = "offline~baseline-oneshot__mcp@0.2.26__data_gouv_context"


class TimedLimiter(RateLimiter):
    """A limiter that remembers when each request was allowed to go."""

    def __init__(self, limit: RateLimit) -> None:
        super().__init__(limit)
        self.slots: list[float] = []

    def reserve(self, tokens: int = 0) -> float:
        wait = super().reserve(tokens)
        self.slots.append(self.clock.now() + wait)
        return wait


class TimedLimiters(RateLimiters):
    """One :class:`TimedLimiter` per provider."""

    def __init__(self, limits: Mapping[str, RateLimit]) -> None:
        super().__init__(limits)
        self.created: dict[str, TimedLimiter] = {}

    def get(self, provider: str, configured: RateLimit | None = None) -> RateLimiter:
        if provider not in self.created:
            self.created[provider] = TimedLimiter(self.limit_for(provider, configured))
        return self.created[provider]

    def steady_rpm(self, provider: str) -> float | None:
        """Requests per minute between the first and the last request sent."""
        slots = sorted(self.created[provider].slots) if provider in self.created else []
        if len(slots) < 2 or slots[-1] == slots[0]:
            return None
        return (len(slots) - 1) / (slots[-1] - slots[0]) * 60


def respond(body: dict[str, Any]) -> Mapping[str, Any]:
    """The fake model: search, dataset info, resources, then the final answer."""
    model = str(body["model"])
    results = [m for m in body["messages"] if m.get("role") == "tool"]
    if not results:
        return tool_call_completion(model, [("search_datasets", {"query": "transport"})])
    first = str(results[0].get("content") or "")
    dataset_id = first.split("ID: ", 1)[1].split()[0] if "ID: " in first else "unknown"
    if len(results) == 1:
        return tool_call_completion(model, [("get_dataset_info", {"dataset_id": dataset_id})])
    if len(results) == 2:
        return tool_call_completion(model, [("list_dataset_resources", {"dataset_id": dataset_id})])
    answer = {"answer": f"Jeu {dataset_id}", "declined": False, "cited_urls": [], "ids_used": []}
    return tool_call_completion(model, [("final_answer", answer)])


def live_cell(base: Cell, base_url: str) -> Cell:
    model = CellModel(
        provider="bench",
        name="bench-model",
        kind=ProviderKind.OPENAI_COMPATIBLE,
        base_url=base_url,
        api_key_env=KEY_ENV,
        input_price_per_mtok=None,
        output_price_per_mtok=None,
        currency="EUR",
    )
    return dataclasses.replace(base, key=base.key + "__bench", model=model)


def serve_provider(latency: float, allowed: int, window_s: float) -> None:
    """Child mode: the fake provider, until stdin closes."""
    simulation = ProviderSimulation(
        latency_s=latency, rate_limit_rpm=allowed, rate_window_s=window_s
    )
    with ReplayServer(
        ReplayConfig(mode="scripted", responder=respond, simulation=simulation)
    ) as srv:
        print(json.dumps({"base_url": srv.base_url, "url": srv.url}), flush=True)
        sys.stdin.read()


def serve_twin() -> None:
    """Child mode: the twin, until stdin closes."""
    server = TwinServer()
    with server as urls:
        print(json.dumps({"site": urls.site, "snapshot_id": server.store.snapshot_id}), flush=True)
        sys.stdin.read()


class Child:
    """A child process in one of the serve modes; its first stdout line is JSON."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        self.info: dict[str, Any] = json.loads(self.process.stdout.readline())

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


def throughput(
    name: str,
    base: Cell,
    tasks: list[TaskSpec],
    twin: TwinUrls,
    snapshot_id: str,
    *,
    runs: int,
    latency: float,
    rpm: int,
    window_s: float,
    client_rpm: float | None,
    concurrency: int,
) -> dict[str, Any]:
    allowed = max(1, round(rpm * window_s / 60))
    provider = Child("--serve-provider", str(latency), str(allowed), str(window_s))
    chosen = [tasks[i % len(tasks)] for i in range(runs)]
    limiters = TimedLimiters({"bench": RateLimit(requests_per_minute=client_rpm)})
    try:
        started = time.perf_counter()
        run = execute_cell(
            live_cell(base, provider.info["base_url"]),
            chosen,
            twin_urls=twin,
            environ={KEY_ENV: "bench"},
            rate_limiters=limiters,
            settings=RunSettings(max_concurrency=concurrency),
            snapshot_id=snapshot_id,
        )
        wall = time.perf_counter() - started
        stats = httpx.get(provider.info["url"] + "/_replay/stats", timeout=10).json()
    finally:
        provider.close()
    answered = stats["scripted"]
    achieved = answered / wall * 60
    failed = [t for t in run.traces if t.status != "ok"]
    waits = [t.rate_limit_wait_ms for t in run.traces]
    return {
        "scenario": name,
        "concurrency": concurrency,
        "runs": len(run.traces),
        "requests_answered": answered,
        "rate_limited_429": stats["rate_limited"],
        "failed_runs": len(failed),
        "failure_reasons": sorted({t.status_reason or "" for t in failed}),
        "wall_s": round(wall, 2),
        "achieved_rpm": round(achieved, 1),
        "fraction_of_limit": round(achieved / rpm, 3),
        "steady_fraction": _fraction(limiters.steady_rpm("bench"), rpm),
        "mean_rate_limit_wait_s": round(sum(waits) / len(waits) / 1000, 2),
        "mean_net_latency_s": round(
            sum(t.latency_ms - t.rate_limit_wait_ms for t in run.traces) / len(run.traces) / 1000, 2
        ),
    }


def scheduler_only(
    base: Cell,
    tasks: list[TaskSpec],
    twin: TwinUrls,
    snapshot_id: str,
    *,
    runs: int,
    latency: float,
    rpm: int,
    concurrency: int,
) -> dict[str, Any]:
    """The limiter and runner alone: an in-process model that answers after ``latency``.

    Each run sends four requests (three plain-text answers, which the agent asks to redo as a
    structured answer, then the answer), with no HTTP client and no tool: what is left is the
    scheduling (rate limiter, concurrency cap, retries wrapper, recording).
    """

    async def slow(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        await asyncio.sleep(latency)
        made = sum(isinstance(m, ModelResponse) for m in messages)
        if made < 3:
            return ModelResponse(parts=[TextPart("thinking")])
        answer = {"answer": "ok", "declined": False, "cited_urls": [], "ids_used": []}
        call = ToolCallPart(info.output_tools[0].name, answer, tool_call_id="final")
        return ModelResponse(parts=[call])

    cell = dataclasses.replace(
        live_cell(base, "http://127.0.0.1:9/v1"), capabilities=(), mcp_version=None, mcp_url=None
    )
    chosen = [tasks[i % len(tasks)] for i in range(runs)]
    limiters = TimedLimiters({"bench": RateLimit(requests_per_minute=rpm)})
    started = time.perf_counter()
    run = execute_cell(
        cell,
        chosen,
        twin_urls=twin,
        rate_limiters=limiters,
        settings=RunSettings(max_concurrency=concurrency, agent_retries=4),
        snapshot_id=snapshot_id,
        model_factory=lambda _model: FunctionModel(slow),
    )
    wall = time.perf_counter() - started
    requests = sum(t.usage.requests for t in run.traces)
    achieved = requests / wall * 60
    return {
        "scenario": "scheduler only (in-process model)",
        "concurrency": concurrency,
        "runs": len(run.traces),
        "requests_answered": requests,
        "failed_runs": sum(t.status != "ok" for t in run.traces),
        "wall_s": round(wall, 2),
        "achieved_rpm": round(achieved, 1),
        "fraction_of_limit": round(achieved / rpm, 3),
        "steady_fraction": _fraction(limiters.steady_rpm("bench"), rpm),
    }


def _fraction(value: float | None, rpm: int) -> float | None:
    return None if value is None else round(value / rpm, 3)


BASELINE_SETUPS = (
    ("baseline-oneshot", "none"),
    ("baseline-oneshot", "mcp@0.2.26"),
    ("baseline-thorough", "mcp@0.2.26"),
    ("baseline-thorough", "mcp@0.2.26+skills@0.0.1"),
)
"""(policy, capability setup) pairs timed by :func:`baseline_speed` (no sandbox: see README)."""


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux ``/proc``)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def baseline_speed(
    cells: dict[str, Cell],
    tasks: list[TaskSpec],
    twin: TwinUrls,
    snapshot_id: str,
    repeats: int,
    twin_pid: int,
) -> list[dict[str, Any]]:
    """Wall time and CPU time per task-run of the offline baselines on the twin.

    CPU is counted in this process (agent loop, policy, MCP client) and in the twin's process
    (MCP and REST servers): on a shared machine wall time mostly measures the other jobs.
    """
    rows: list[dict[str, Any]] = []
    for model, setup in BASELINE_SETUPS:
        cell = cells[f"offline~{model}__{setup}__data_gouv_context"]
        # Warm the twin's caches and the MCP connection path once.
        execute_cell(cell, tasks[:2], twin_urls=twin, snapshot_id=snapshot_id)
        for concurrency in (8, 1):
            started, cpu, twin_cpu = time.perf_counter(), time.process_time(), cpu_seconds(twin_pid)
            run = execute_cell(
                cell,
                tasks,
                twin_urls=twin,
                repeats=repeats,
                settings=RunSettings(max_concurrency=concurrency),
                snapshot_id=snapshot_id,
            )
            wall = time.perf_counter() - started
            cpu = time.process_time() - cpu
            twin_cpu = cpu_seconds(twin_pid) - twin_cpu
            ran = [t for t in run.traces if t.status == "ok"]
            count = len(run.traces)
            rows.append(
                {
                    "policy": model,
                    "setup": setup,
                    "concurrency": concurrency,
                    "task_runs": count,
                    "ok": len(ran),
                    "declined": sum(bool(t.declined) for t in ran),
                    "tool_calls_per_run": round(sum(len(t.tool_calls) for t in ran) / count, 2),
                    "model_requests_per_run": round(sum(t.usage.requests for t in ran) / count, 2),
                    "wall_ms_per_task_run": round(wall / count * 1000, 1),
                    "agent_cpu_ms_per_task_run": round(cpu / count * 1000, 1),
                    "twin_cpu_ms_per_task_run": round(twin_cpu / count * 1000, 1),
                    "mean_latency_ms": round(sum(t.latency_ms for t in ran) / max(1, len(ran)), 1),
                }
            )
    return rows


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--serve-provider":
        serve_provider(float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--serve-twin":
        serve_twin()
        return
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--rpm", type=int, default=600)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[50, 20])
    parser.add_argument("--repeats", type=int, default=5, help="baseline repeats per task")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--skip-baselines", action="store_true")
    args = parser.parse_args()

    config = load_benchmark_config()
    names = [etype.name for etype in config.evaluation_types.evaluation_types]
    cells = {cell.key: cell for cell in expand_cells(config, names)}
    tasks = [
        spec
        for spec in load_task_specs([Path(TASK_SPECS_DIR)])
        if spec.meta.status == TaskStatus.ACTIVE
    ]
    report: dict[str, Any] = {"python": platform.python_version(), "machine": platform.machine()}
    twin = Child("--serve-twin")
    urls = TwinUrls.for_site(twin.info["site"])
    snapshot_id = str(twin.info["snapshot_id"])
    try:
        if not args.skip_throughput:
            rows = [
                scheduler_only(
                    cells[BASE_KEY],
                    tasks,
                    urls,
                    snapshot_id,
                    runs=args.runs,
                    latency=args.latency,
                    rpm=args.rpm,
                    concurrency=max(args.concurrency),
                )
            ]
            for concurrency in args.concurrency:
                common: dict[str, Any] = {
                    "runs": args.runs,
                    "latency": args.latency,
                    "rpm": args.rpm,
                    "concurrency": concurrency,
                }
                base = cells[BASE_KEY]
                rows.append(
                    throughput(
                        "paced",
                        base,
                        tasks,
                        urls,
                        snapshot_id,
                        window_s=60,
                        client_rpm=args.rpm,
                        **common,
                    )
                )
                rows.append(
                    throughput(
                        "tight window",
                        base,
                        tasks,
                        urls,
                        snapshot_id,
                        window_s=10,
                        client_rpm=args.rpm,
                        **common,
                    )
                )
                rows.append(
                    throughput(
                        "no client limiter",
                        base,
                        tasks,
                        urls,
                        snapshot_id,
                        window_s=10,
                        client_rpm=None,
                        **common,
                    )
                )
            report["throughput"] = rows
        if not args.skip_baselines:
            report["baselines"] = baseline_speed(
                cells, tasks, urls, snapshot_id, args.repeats, twin.process.pid
            )
    finally:
        twin.close()
    print(json.dumps(report, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
