"""Two live-model cells (MCP, code) whose model calls are recorded here and replayed elsewhere.

Run as ``python -m tests.agents.runner.fresh_replay CASSETTES_DIR`` it starts its own twin (on
another random port) and a replay server, runs both cells and prints one JSON line: the
traces' answers and tool results, and the cassette misses. ``test_runner_fresh_replay`` records
in the test process and replays in that fresh one.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from datagouv_eval_pipeline.core.benchmark.cells import Cell, CellModel, expand_cells
from datagouv_eval_pipeline.core.benchmark.config import ProviderKind
from datagouv_eval_pipeline.core.benchmark.loader import load_benchmark_config
from datagouv_eval_pipeline.core.providers.limits import RateLimit, RateLimiters
from datagouv_eval_pipeline.core.tasks.loader import TASK_SPECS_DIR, load_task_specs
from datagouv_eval_pipeline.core.traces import Trace
from datagouv_eval_pipeline.pipeline.agents.runner import run_cell
from datagouv_eval_pipeline.world.api.server import TwinServer
from datagouv_eval_pipeline.world.catalogue.urls import TwinUrls
from datagouv_eval_pipeline.world.replay import ReplayConfig, ReplayServer, tool_call_completion

KEY_ENV = "DGEVAL_TEST_PROVIDER_KEY"
TASK = "task_0003"
SETUPS = ("mcp@0.2.26", "code")
CODE = (
    "import httpx\n"
    "page = httpx.get('https://www.data.gouv.fr/api/1/datasets/', "
    "params={'q': 'catalogue', 'page_size': 2}).json()\n"
    "print(page['next_page'])\n"
    "for d in page['data']:\n"
    "    print(d['id'], d['page'], d['resources'][0]['url'] if d['resources'] else '')\n"
)


class Script:
    """A fake model: one catalog look-up with the cell's tool, then the first id it saw."""

    def __call__(self, body: dict[str, Any]) -> Mapping[str, Any]:
        model = str(body["model"])
        messages = body["messages"]
        tools = [tool["function"]["name"] for tool in body.get("tools") or []]
        if messages[-1]["role"] != "tool":
            if "execute_python" in tools:
                return tool_call_completion(model, [("execute_python", {"code": CODE})])
            return tool_call_completion(model, [("search_datasets", {"query": "catalogue"})])
        seen = messages[-1]["content"]
        marker = "ID: " if "ID: " in seen else "\n"
        dataset_id = seen.split(marker, 1)[1].split()[0]
        answer = {
            "answer": f"Voir le jeu {dataset_id}.",
            "declined": False,
            "cited_urls": [],
            "ids_used": [dataset_id],
        }
        return tool_call_completion(model, [("final_answer", answer)], prompt_tokens=30)


def live_cells(server: ReplayServer) -> list[Cell]:
    """The two cells, each with its own cassette on ``server``."""
    config = load_benchmark_config()
    names = [etype.name for etype in config.evaluation_types.evaluation_types]
    cells = {cell.key: cell for cell in expand_cells(config, names)}
    chosen = []
    for setup in SETUPS:
        base = cells[f"offline~baseline-oneshot__{setup}__data_gouv_context"]
        model = CellModel(
            provider="mistral",
            name="mistral-small-test",
            kind=ProviderKind.OPENAI_COMPATIBLE,
            base_url=server.cassette_url(setup.replace("@", "-")),
            api_key_env=KEY_ENV,
            input_price_per_mtok=2.0,
            output_price_per_mtok=6.0,
            currency="EUR",
        )
        chosen.append(dataclasses.replace(base, key=base.key + "__replay", model=model))
    return chosen


def run_cells(server: ReplayServer, twin: TwinUrls) -> list[Trace]:
    """Run the task in both cells against ``twin``, the model behind ``server``."""
    (task,) = [t for t in load_task_specs([Path(TASK_SPECS_DIR)]) if t.task_id == TASK]
    traces: list[Trace] = []
    for cell in live_cells(server):
        traces += run_cell(
            cell,
            [task],
            twin_urls=twin,
            environ={KEY_ENV: "offline"},
            rate_limiters=RateLimiters(default=RateLimit()),
        )
    return traces


def summary(traces: list[Trace]) -> list[dict[str, Any]]:
    """What must be identical between the recorded and the replayed runs."""
    return [
        {
            "status": trace.status,
            "reason": trace.status_reason,
            "answer": trace.answer,
            "calls": [(call.name, call.arguments, call.result) for call in trace.tool_calls],
        }
        for trace in traces
    ]


def main(cassettes: str) -> None:
    """Replay both cells from ``cassettes`` with a new twin; print the summary and misses."""
    with (
        TwinServer() as twin,
        ReplayServer(ReplayConfig(mode="replay", cassettes_dir=Path(cassettes))) as replay,
    ):
        traces = run_cells(replay, twin)
        misses = [str(miss) for miss in replay.misses]
        print(json.dumps({"twin": twin.site, "summary": summary(traces), "misses": misses}))


if __name__ == "__main__":
    main(sys.argv[1])
