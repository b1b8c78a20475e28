"""A cell and the hybrid judge on the plumbing model (SmolLM2-135M), recorded here, replayed
elsewhere.

Plumbing, **not an agent**: the 135M model's answers are noise; what is checked is the wire
(tools through the chat template, settings, tokens, durations, statuses) and that a recording
replays. ``python -m tests.local_models.plumbing_run CASSETTES_DIR`` starts its own twin (on
another random port) and a replay server, runs the same cell and judge, and prints one JSON
line: the summary and the cassette misses.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from datagouv_eval_pipeline.core.benchmark.cells import Cell, CellModel, expand_cells
from datagouv_eval_pipeline.core.benchmark.config import (
    LocalServerSettings,
    ModelCallSettings,
    ModelsFile,
    ProviderKind,
)
from datagouv_eval_pipeline.core.benchmark.loader import load_benchmark_config
from datagouv_eval_pipeline.core.judges.config import JudgeKind, JudgeSpec
from datagouv_eval_pipeline.core.judges.factory import build_judge
from datagouv_eval_pipeline.core.judges.hybrid import HybridJudge
from datagouv_eval_pipeline.core.judges.protocol import CriterionInput, tool_evidence
from datagouv_eval_pipeline.core.judges.verdict import outcome
from datagouv_eval_pipeline.core.providers.limits import RateLimit, RateLimiters
from datagouv_eval_pipeline.core.tasks.spec import Criterion
from datagouv_eval_pipeline.core.traces import Trace
from datagouv_eval_pipeline.pipeline.agents.limits import RunBudget
from datagouv_eval_pipeline.pipeline.agents.runner import RunSettings, run_cell
from datagouv_eval_pipeline.world.api.server import TwinServer
from datagouv_eval_pipeline.world.catalogue.urls import TwinUrls
from datagouv_eval_pipeline.world.local_models.plumbing import plumbing_gguf
from datagouv_eval_pipeline.world.replay import ReplayConfig, ReplayServer
from tests.judges.judges_factories import real_tasks

PROVIDER, NAME = "local", "smollm2-135m"
TASK = "task_0003"
MAX_OUTPUT_TOKENS = 48
SETTINGS = ModelCallSettings(
    timeout_s=120,
    retries=0,
    temperature=0,
    seed=42,
    max_output_tokens=MAX_OUTPUT_TOKENS,
    context_window=4096,
)


def models_file() -> ModelsFile:
    """``models.yml`` with the plumbing model as a ``llama_cpp`` provider."""
    return ModelsFile.model_validate(
        {
            "currency": "EUR",
            "providers": [
                {
                    "name": PROVIDER,
                    "kind": "llama_cpp",
                    "threads": 1,
                    "concurrency": 1,
                    "timeout_s": SETTINGS.timeout_s,
                    "retries": SETTINGS.retries,
                    "models": [
                        {
                            "name": NAME,
                            "label": "plumbing, not an agent",
                            "active": True,
                            "gguf": str(plumbing_gguf()),
                            "chat_template_file": "chatml_tools.jinja",
                            "temperature": SETTINGS.temperature,
                            "seed": SETTINGS.seed,
                            "max_output_tokens": SETTINGS.max_output_tokens,
                            "context_window": SETTINGS.context_window,
                            "input_price_per_mtok": 0,
                            "output_price_per_mtok": 0,
                        }
                    ],
                }
            ],
        }
    )


def plumbing_model() -> CellModel:
    """The model as the pipeline resolves it from :func:`models_file`."""
    provider = models_file().providers[0]
    entry = provider.models[0]
    model = CellModel(
        provider=PROVIDER,
        name=NAME,
        kind=ProviderKind.LLAMA_CPP,
        base_url=None,
        api_key_env=None,
        input_price_per_mtok=0,
        output_price_per_mtok=0,
        currency="EUR",
        label=entry.label,
        settings=provider.settings_for(entry),
        server=provider.server_for(entry),
    )
    assert model.settings == SETTINGS
    assert model.server == LocalServerSettings(
        gguf=str(plumbing_gguf()), chat_template_file="chatml_tools.jinja", threads=1, slots=1
    )
    return model


def plumbing_cell() -> Cell:
    """The no-tools cell (only the ``final_answer`` output tool) on the plumbing model."""
    config = load_benchmark_config()
    names = [etype.name for etype in config.evaluation_types.evaluation_types]
    cells = {cell.key: cell for cell in expand_cells(config, names)}
    base = cells["offline~baseline-oneshot__none__data_gouv_context"]
    model = plumbing_model()
    return dataclasses.replace(base, key=f"{model.key}__none__data_gouv_context", model=model)


def run_agent(model_url: str, twin: TwinUrls, budget: RunBudget) -> list[Trace]:
    """The task in the plumbing cell, the model behind ``model_url``."""
    (task,) = [t for t in real_tasks().values() if t.task_id == TASK]
    return run_cell(
        plumbing_cell(),
        [task],
        twin_urls=twin,
        settings=RunSettings(budget=budget),
        model_base_url=model_url,
        rate_limiters=RateLimiters(default=RateLimit()),
    )


def judge_spec() -> JudgeSpec:
    """The hybrid judge on the plumbing model, one request at a time."""
    return JudgeSpec(
        kind=JudgeKind.HYBRID,
        model=f"{PROVIDER}/{NAME}",
        concurrency=1,
        timeout_s=300,
        retries=0,
    )


RULED = Criterion(criteria="The answer names the number of datasets.", patterns=[r"\d"])
OPEN = Criterion(criteria="The answer is written in French.")


def run_judge(judge_url: str, trace: Trace) -> dict[str, Any]:
    """The hybrid judge on the agent's answer: one criterion the rules decide, one they leave
    to the model (a whole ``judge_trace`` asks it 5 long questions, minutes on this model)."""
    judge = build_judge(judge_spec(), models_file(), base_url=judge_url)
    assert isinstance(judge, HybridJudge)
    task = real_tasks()[TASK]
    evidence = tool_evidence(trace)

    async def judged() -> list[Any]:
        try:
            return [
                await judge.criterion(
                    CriterionInput(
                        task.prompt, trace.answer, criterion, evidence, task=task, cited_urls=[]
                    )
                )
                for criterion in (RULED, OPEN)
            ]
        finally:
            await judge.aclose()

    verdicts = asyncio.run(judged())
    return {
        "judge_id": judge.judge_id,
        "model_requests": judge.model_requests,
        "verdicts": [[v.judge_id, outcome(v), v.input_tokens, v.output_tokens] for v in verdicts],
    }


def summary(traces: list[Trace]) -> list[dict[str, Any]]:
    """What must be identical between the recorded and the replayed runs."""
    return [
        {
            "status": trace.status,
            "reason": trace.status_reason,
            "answer": trace.answer,
            "calls": [(call.name, call.arguments) for call in trace.tool_calls],
            "tokens": [(r.input_tokens, r.output_tokens) for r in trace.requests or []],
        }
        for trace in traces
    ]


def main(cassettes: str) -> None:
    """Replay the cell and the judge from ``cassettes`` with a new twin; print what came out."""
    budget = RunBudget(max_requests=3, wall_timeout_s=600)
    with (
        TwinServer() as twin,
        ReplayServer(ReplayConfig(mode="replay", cassettes_dir=Path(cassettes))) as replay,
    ):
        traces = run_agent(replay.cassette_url("agent"), twin, budget)
        judged = run_judge(replay.cassette_url("judge"), traces[0])
        misses = [str(miss) for miss in replay.misses]
        print(json.dumps({"agent": summary(traces), "judge": judged, "misses": misses}))


if __name__ == "__main__":
    main(sys.argv[1])
