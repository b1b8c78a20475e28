"""One pool per provider, on a real Dagster instance: providers overlap, none exceeds its slots.

Two OpenAI-compatible providers are served on 127.0.0.1 (the model-API edge; everything else is
the real path: the agent runner, the OpenAI client, the run store, the instance's pool table).
Each server counts the chat requests in flight: its own and, shared, both servers' together.
Every task run of these cells is one request (no tools), so requests in flight are task runs
in flight. The counts are compared with the slots, not with any duration.
"""

import asyncio
import dataclasses
import threading
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

from datagouv_eval_pipeline.base.serving import BackgroundUvicorn
from datagouv_eval_pipeline.core.benchmark.cells import Cell, CellModel
from datagouv_eval_pipeline.core.benchmark.config import ModelRateLimit, ProviderKind
from datagouv_eval_pipeline.defs.agent_runs import run_agent_cells
from datagouv_eval_pipeline.defs.partitions import CELLS_BY_KEY
from datagouv_eval_pipeline.defs.per_cell import StageEvent
from datagouv_eval_pipeline.defs.resources import (
    CatalogResource,
    ExperimentSettings,
    RunStoreResource,
)
from datagouv_eval_pipeline.pipeline.agents.output import FINAL_ANSWER_TOOL
from datagouv_eval_pipeline.pipeline.experiment.lanes import pool_name
from datagouv_eval_pipeline.pipeline.experiment.store import RunStore
from datagouv_eval_pipeline.world.replay import tool_call_completion

TASKS = ["task_0002", "task_0003", "task_0004", "task_0005", "task_0006", "task_0007"]
BASE = CELLS_BY_KEY["offline~baseline-oneshot__none__data_gouv_context"]
KEY_ENV = "POOL_TEST_API_KEY"
SLOTS = {"alpha": 2, "beta": 3}
RANGE_START = "dagster/asset_partition_range_start"
RANGE_END = "dagster/asset_partition_range_end"


@dataclasses.dataclass
class InFlight:
    """Requests in flight now and at most, per provider and for both together."""

    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)
    now: dict[str, int] = dataclasses.field(default_factory=dict)
    peak: dict[str, int] = dataclasses.field(default_factory=dict)
    requests: dict[str, int] = dataclasses.field(default_factory=dict)

    def enter(self, provider: str) -> None:
        with self.lock:
            for name in (provider, "both"):
                self.now[name] = self.now.get(name, 0) + 1
                self.peak[name] = max(self.peak.get(name, 0), self.now[name])
            self.requests[provider] = self.requests.get(provider, 0) + 1

    def leave(self, provider: str) -> None:
        with self.lock:
            for name in (provider, "both"):
                self.now[name] -= 1


def _provider_app(provider: str, counts: InFlight) -> Starlette:
    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        counts.enter(provider)
        try:
            # Long enough that runs allowed to overlap do overlap.
            await asyncio.sleep(0.4)
        finally:
            counts.leave(provider)
        answer = {"answer": "Aucun jeu trouvé.", "declined": True, "cited_urls": [], "ids_used": []}
        return JSONResponse(tool_call_completion(str(body["model"]), [(FINAL_ANSWER_TOOL, answer)]))

    async def health(_request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    return Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/health", health),
        ]
    )


@pytest.fixture
def providers(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[InFlight, dict[str, Cell]]]:
    """Both providers running; two cells each (no tools), keyed like the YAML's cells."""
    monkeypatch.setenv(KEY_ENV, "sk-local-test-key")
    counts = InFlight()
    servers: list[BackgroundUvicorn] = []
    cells: dict[str, Cell] = {}
    for provider in SLOTS:
        app = _provider_app(provider, counts)

        def config(port: int, app: Starlette = app) -> uvicorn.Config:
            return uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")

        server = BackgroundUvicorn(f"the {provider} provider", config, "/health")
        port = server.start("127.0.0.1", 0)
        servers.append(server)
        for index in range(2):
            model = CellModel(
                provider=provider,
                name=f"model-{index}",
                kind=ProviderKind.OPENAI_COMPATIBLE,
                base_url=f"http://127.0.0.1:{port}/v1",
                api_key_env=KEY_ENV,
                input_price_per_mtok=None,
                output_price_per_mtok=None,
                currency="EUR",
                # No pacing: only the slots may hold the runs back.
                rate_limit=ModelRateLimit(60_000, None, per_model=True),
            )
            key = f"{provider}~model-{index}__none__data_gouv_context"
            cells[key] = dataclasses.replace(BASE, key=key, model=model)
    try:
        yield counts, cells
    finally:
        for server in servers:
            server.stop()


def _defs(cells: dict[str, Cell], store: Path) -> dg.Definitions:
    partitions = dg.StaticPartitionsDefinition(list(cells))

    @dg.asset(
        name="agent_runs",
        partitions_def=partitions,
        backfill_policy=dg.BackfillPolicy.single_run(),
    )
    def provider_cells(
        context: dg.AssetExecutionContext,
        experiment: ExperimentSettings,
        catalog: CatalogResource,
        run_store: RunStoreResource,
    ) -> Iterator[StageEvent]:
        yield from run_agent_cells(
            context, experiment, catalog, run_store, cells_by_key=cells, slots=SLOTS
        )

    return dg.Definitions(
        assets=[provider_cells],
        jobs=[dg.define_asset_job("cells", selection=[provider_cells])],
        resources={
            "experiment": ExperimentSettings(task_ids=TASKS),
            "catalog": CatalogResource(),
            "run_store": RunStoreResource(root=str(store)),
        },
        executor=dg.in_process_executor,
    )


def _run(
    defs: dg.Definitions, instance: dg.DagsterInstance, first: str, last: str
) -> dg.ExecuteInProcessResult:
    return defs.resolve_job_def("cells").execute_in_process(
        instance=instance, tags={RANGE_START: first, RANGE_END: last}, raise_on_error=False
    )


def _statuses(store: Path, keys: list[str]) -> dict[str, set[str]]:
    documents = {key: RunStore(store).read("agent_runs", key) for key in keys}
    return {
        key: {t["status"] for t in (doc or {}).get("traces", [])} for key, doc in documents.items()
    }


def _reasons(store: Path, keys: list[str]) -> set[str]:
    """Why runs did not end ``ok``: shown when the request counts are off."""
    documents = [RunStore(store).read("agent_runs", key) for key in keys]
    return {
        f"{t['status']}: {t.get('status_reason')}"
        for doc in documents
        for t in (doc or {}).get("traces", [])
        if t["status"] != "ok"
    }


def test_two_providers_run_side_by_side_each_within_its_slots(
    tmp_path: Path, providers: tuple[InFlight, dict[str, Cell]]
) -> None:
    counts, cells = providers
    keys = list(cells)
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        result = _run(_defs(cells, tmp_path / "store"), instance, keys[0], keys[-1])
        assert result.success
        storage = instance.event_log_storage
        # The pools were created from the slots, and the run gave every slot back.
        for provider, slots in SLOTS.items():
            info = storage.get_concurrency_info(pool_name(provider))
            assert info.slot_count == slots
            assert info.claimed_slots == []
    assert counts.requests == {"alpha": 2 * len(TASKS), "beta": 2 * len(TASKS)}, _reasons(
        tmp_path / "store", keys
    )
    # Each provider filled its slots and never went past them...
    assert counts.peak["alpha"] == SLOTS["alpha"]
    assert counts.peak["beta"] == SLOTS["beta"]
    # ...and at some moment both had runs in flight: more than either alone allows.
    assert counts.peak["both"] > max(SLOTS.values())
    assert _statuses(tmp_path / "store", keys) == {key: {"ok"} for key in keys}


def test_a_run_takes_only_the_slots_another_run_leaves(
    tmp_path: Path, providers: tuple[InFlight, dict[str, Cell]]
) -> None:
    counts, cells = providers
    alpha = [key for key in cells if key.startswith("alpha~")]
    pool = pool_name("alpha")
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        storage = instance.event_log_storage
        storage.set_concurrency_slots(pool, SLOTS["alpha"])
        # Another run (launched from the UI, say) holds one of alpha's two slots.
        assert storage.claim_concurrency_slot(pool, "other-run", "agent_runs[alpha#0]").is_claimed
        result = _run(_defs(cells, tmp_path / "store"), instance, alpha[0], alpha[-1])
        assert result.success
        info = storage.get_concurrency_info(pool)
        # The other run's slot is still its own; ours were given back.
        assert [slot.run_id for slot in info.claimed_slots] == ["other-run"]
        assert info.pending_steps == [] or all(
            step.run_id == "other-run" for step in info.pending_steps
        )
    assert counts.requests == {"alpha": 2 * len(TASKS)}, _reasons(tmp_path / "store", alpha)
    # One slot left free, so one alpha run at a time, although the cells ask for two.
    assert counts.peak["alpha"] == 1
    assert _statuses(tmp_path / "store", alpha) == {key: {"ok"} for key in alpha}
