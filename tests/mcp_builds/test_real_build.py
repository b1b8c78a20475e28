"""The real 0.2.14 server as a cell, offline: installed from the package index, reading the twin.

The package ``iflow-mcp-datagouv-datagouv-mcp==0.2.14`` carries the official v0.2.14 ``tools/``
and ``helpers/`` byte for byte; it keeps its production hostnames and reaches the twin through
the hostname front. A cell of the ``real_mcp_server`` evaluation type runs through the same stage
functions as the pipeline (agent runs with the offline baselines, action mapping, judging),
next to the twin's emulation of 0.2.19. The install is cached under ``data/mcp_builds`` (cold
in CI: a few seconds from the package index).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped]
import pytest

from datagouv_eval_pipeline.core.benchmark.cells import Cell, expand_cells
from datagouv_eval_pipeline.core.benchmark.loader import load_benchmark_config
from datagouv_eval_pipeline.core.judges.deterministic import DeterministicJudge
from datagouv_eval_pipeline.core.tasks import TASK_SPECS_DIR, TaskSpec, load_task_specs
from datagouv_eval_pipeline.pipeline.experiment import stages
from datagouv_eval_pipeline.pipeline.experiment.cache import AgentRunCache
from datagouv_eval_pipeline.world.api.server import TwinServer
from datagouv_eval_pipeline.world.catalogue.urls import TwinUrls
from datagouv_eval_pipeline.world.mcp_builds import BuildServers

THOROUGH_BUILD = "offline~baseline-thorough__mcp@0.2.14~build__data_gouv_context"
THOROUGH_EMULATION = "offline~baseline-thorough__mcp@0.2.19__data_gouv_context"
TASK_IDS = ("task_0002", "task_0003")
# The official 0.2.14 tool list, in the server's order (dataservice tools came in 0.2.15).
REAL_0_2_14_TOOLS = [
    "search_datasets",
    "query_resource_data",
    "get_dataset_info",
    "list_dataset_resources",
    "get_resource_info",
    "download_and_parse_resource",
    "get_metrics",
]


@dataclass
class World:
    urls: TwinUrls
    snapshot_id: str
    builds: BuildServers
    cells: dict[str, Cell]
    specs: dict[str, TaskSpec]

    def tasks(self) -> list[TaskSpec]:
        return [self.specs[task_id] for task_id in TASK_IDS]

    def run(self, key: str, **options: Any) -> stages.AgentStageResult:
        return stages.run_agents(
            self.cells[key],
            self.tasks(),
            twin_urls=self.urls,
            snapshot_id=self.snapshot_id,
            builds=self.builds,
            **options,
        )


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    config = load_benchmark_config()
    cells = {cell.key: cell for cell in expand_cells(config, ["real_mcp_server"])}
    specs = {spec.task_id: spec for spec in load_task_specs([TASK_SPECS_DIR])}
    server = TwinServer()
    with server as urls, BuildServers(twin=server) as builds:
        yield World(urls, server.store.snapshot_id, builds, cells, specs)


@pytest.fixture(scope="module")
def build_run(world: World) -> stages.AgentStageResult:
    return world.run(THOROUGH_BUILD)


@pytest.fixture(scope="module")
def emulation_run(world: World) -> stages.AgentStageResult:
    return world.run(THOROUGH_EMULATION)


def test_the_evaluation_type_puts_the_build_next_to_the_emulations(world: World) -> None:
    build = world.cells[THOROUGH_BUILD]
    assert (build.mcp_version, build.mcp_source, build.mcp_url) == ("0.2.14", "build", None)
    assert build.to_record().mcp_build == "package:iflow-mcp-datagouv-datagouv-mcp==0.2.14"
    emulations = {c.mcp_version for c in world.cells.values() if c.mcp_source == "twin"}
    assert emulations == {"0.2.5", "0.2.19"}


def test_the_cell_tool_list_is_the_real_servers_own(
    build_run: stages.AgentStageResult, emulation_run: stages.AgentStageResult
) -> None:
    tools = build_run.document.to_json()["tool_lists"]["0.2.14"]
    assert [tool["name"] for tool in tools] == REAL_0_2_14_TOOLS
    # Not the twin's text: every description shared with the emulation differs from it.
    emulated = {
        tool["name"]: tool for tool in emulation_run.document.to_json()["tool_lists"]["0.2.19"]
    }
    assert "search_dataservices" in emulated
    for tool in tools:
        assert tool["description"] != emulated[tool["name"]]["description"], tool["name"]
        assert tool["input_schema"]["type"] == "object"
    assert build_run.document.to_json()["mcp_build"] == {
        "spec": "package:iflow-mcp-datagouv-datagouv-mcp==0.2.14",
        "code_digest": build_run.document.to_json()["mcp_build"]["code_digest"],
        "revision": None,
    }
    assert len(build_run.document.to_json()["mcp_build"]["code_digest"]) == 64


def test_the_real_server_answers_from_the_twin_with_production_urls(
    build_run: stages.AgentStageResult, emulation_run: stages.AgentStageResult
) -> None:
    assert build_run.statuses == {"ok": 2} and build_run.executed == 2
    traces = {trace["task_id"]: trace for trace in build_run.document.to_json()["traces"]}
    emulated = {trace["task_id"]: trace for trace in emulation_run.document.to_json()["traces"]}
    # On the real catalogue the baseline's v1 (title-only) search for task_0002 does not reach
    # the catalogue dataset (its question names no topic word): what must hold is that both
    # servers, reading one catalog, lead to the same ids.
    assert all(traces[task_id]["ids_used"] for task_id in TASK_IDS)
    for task_id in TASK_IDS:
        trace = traces[task_id]
        # The same catalog behind both servers: the baseline lands on the same dataset and file.
        assert trace["ids_used"] == emulated[task_id]["ids_used"]
        assert all(not call["error"] for call in trace["tool_calls"])
        results = "\n".join(str(call["result"]) for call in trace["tool_calls"])
        assert "https://www.data.gouv.fr/datasets/" in results
        assert "127.0.0.1" not in results + trace["answer"]


def test_its_calls_map_to_actions_at_its_version(
    world: World, build_run: stages.AgentStageResult
) -> None:
    mappings = stages.map_actions(build_run.document)
    assert mappings.unmapped_calls == 0
    stored = mappings.to_json()
    by_task = {result["task_id"]: result["mapping"] for result in stored["results"]}
    for mapping in by_task.values():
        assert mapping["mcp_version"] == "0.2.14"
    actions = [[i["action"] for i in c["instances"]] for c in by_task["task_0003"]["calls"]]
    # Every-word search makes the baseline relax its query first: one or more searches, then
    # the chain through the dataset to its resources (and a resource when one fits).
    searches = next(n for n, action in enumerate(actions) if action != ["search.datasets"])
    assert 1 <= searches <= 6
    assert actions[searches : searches + 2] == [["get.dataset.info"], ["get.dataset.resources"]]
    assert actions[searches + 2 :] in ([], [["get.resource.info"]])
    judged = stages.judge_cell(build_run.document, mappings, world.specs, DeterministicJudge())
    assert all(result.score is not None for result in judged.results)


def test_a_second_run_is_served_from_the_cache_keyed_by_the_build(
    world: World, tmp_path: Path
) -> None:
    cache = AgentRunCache(tmp_path / "cache")
    oneshot = "offline~baseline-oneshot__mcp@0.2.14~build__data_gouv_context"
    first = world.run(oneshot, cache=cache)
    again = world.run(oneshot, cache=cache)
    assert (first.executed, again.executed, again.reused) == (2, 0, 2)
    assert first.document.to_json()["input_hashes"] == again.document.to_json()["input_hashes"]


def test_the_servers_stop_with_the_pool(world: World) -> None:
    (server,) = world.builds.servers.values()
    pid = server.pid
    assert pid is not None and psutil.pid_exists(pid)
    pool = BuildServers(network_env={})
    endpoint = pool.start(server.build.build)
    other = pool.servers[server.build.build.spec].pid
    assert endpoint.url != server.url and other is not None and psutil.pid_exists(other)
    pool.close()
    assert not psutil.pid_exists(other)
    assert psutil.pid_exists(pid)  # the module's pool keeps its own server
    assert not list(server.build.root.glob(f"{other}.server.json"))
