"""The weekly schedule's live run, end to end offline: the hostname front answers production URLs.

The schedule builds its run requests from the instance's environment (``experiment.live``).
With the twin's front in ``HTTPS_PROXY``/``SSL_CERT_FILE``, every production URL the run asks
for (the pre-flight, the sandboxed code and CLI, their downloads) is answered by the twin, so
the schedule's live configuration runs for real on a real instance; with the front stopped the
same request fails loudly, naming the unreachable catalog. Plus the sensor of new builds.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from click.testing import CliRunner

from datagouv_eval_pipeline.cli import experiment as experiment_cli
from datagouv_eval_pipeline.core.benchmark.config import McpBuild, ProviderKind
from datagouv_eval_pipeline.definitions import build_definitions
from datagouv_eval_pipeline.defs import automation, partitions
from datagouv_eval_pipeline.defs.automation import LIVE_TAG, PROVIDER_TAG
from datagouv_eval_pipeline.defs.partitions import ACTIVE_CELLS, CELLS
from datagouv_eval_pipeline.defs.resources import RunStoreResource
from datagouv_eval_pipeline.defs.warehouse import WAREHOUSE_KEYS
from datagouv_eval_pipeline.pipeline.experiment.documents import AgentRunsDocument, McpBuildRecord
from datagouv_eval_pipeline.pipeline.experiment.live import JUDGE_ENV
from datagouv_eval_pipeline.pipeline.experiment.stages import AGENT_RUNS
from datagouv_eval_pipeline.world.api.front import twin_front
from datagouv_eval_pipeline.world.api.server import TwinServer
from datagouv_eval_pipeline.world.mcp_builds import code_digest
from tests.defs.pipeline_helpers import STAGE_NAMES, Paths, check_evaluation, query

defs = build_definitions()

MONDAY = datetime(2026, 11, 30, 3, tzinfo=UTC)
SELECTION = [dg.AssetKey(name) for name in ("task_specs", "catalog_validation", *STAGE_NAMES)]
SELECTION += WAREHOUSE_KEYS
LIVE_TYPES = ["data_contamination", "mcp_versions", "implementations_test"]
"""No tools, the MCP emulations (offline only: skipped live) and sandboxed code + CLI."""
PROXY_VARS = (
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "https_proxy",
    "http_proxy",
    "NO_PROXY",
    "no_proxy",
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
)


def _weekly_requests() -> list[dg.RunRequest]:
    repo = defs.get_repository_def()
    # The context is entered: it installs the instance's state storage and must uninstall it.
    with (
        dg.instance_for_test() as instance,
        dg.build_schedule_context(
            instance=instance, repository_def=repo, scheduled_execution_time=MONDAY
        ) as context,
    ):
        result = repo.get_schedule_def("weekly_experiment").evaluate_tick(context)
    return list(result.run_requests or [])


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in (*PROXY_VARS, JUDGE_ENV, "MISTRAL_API_KEY", "DATAGOUV_EVAL_WEEKLY_CATALOG"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.fixture(scope="module")
def twin() -> Iterator[TwinServer]:
    server = TwinServer()
    server.start()
    yield server
    server.stop()


def _live_run(
    request: dg.RunRequest, paths: Paths, instance: dg.DagsterInstance
) -> dg.ExecuteInProcessResult:
    """The schedule's request, run as the daemon would, narrowed to one task and three types."""
    run_config: dict[str, Any] = dict(request.run_config)
    run_config["resources"] = {
        **run_config["resources"],
        "run_store": {"config": {"root": str(paths.store_root)}},
        "warehouse": {"config": {"path": str(paths.db)}},
        "experiment": {"config": {"task_ids": ["task_0002"], "evaluation_types": LIVE_TYPES}},
    }
    partitions.register_cells(instance)  # as the schedule did in the daemon's instance
    return defs.resolve_job_def("experiment").execute_in_process(
        run_config=run_config,
        instance=instance,
        tags=dict(request.tags),
        asset_selection=SELECTION,
        raise_on_error=False,
    )


def test_the_weekly_request_is_live_with_the_judge_from_the_environment(
    clean_env: pytest.MonkeyPatch,
) -> None:
    (request,) = _weekly_requests()
    assert request.tags[LIVE_TAG] == "true"
    assert request.run_config == {
        "resources": {
            "catalog": {"config": {"live": True}},
            "judge": {"config": {"kind": "deterministic", "model": ""}},
        }
    }
    clean_env.setenv(JUDGE_ENV, "llm:mistral/mistral-small-2603")
    repo = defs.get_repository_def()
    # An LLM judge without its key fails the tick (the UI shows the cause), naming the variable.
    with (
        dg.instance_for_test() as instance,
        dg.build_schedule_context(
            instance=instance, repository_def=repo, scheduled_execution_time=MONDAY
        ) as context,
        pytest.raises(dg.DagsterError, match="evaluation of schedule weekly_experiment") as error,
    ):
        repo.get_schedule_def("weekly_experiment").evaluate_tick(context)
    assert "MISTRAL_API_KEY is not set" in str(error.value.__cause__)


def test_a_provider_runs_weekly_only_when_its_key_is_set(clean_env: pytest.MonkeyPatch) -> None:
    llm = [
        replace(
            cell,
            key=f"mistral:{cell.key}",
            model=replace(
                cell.model,
                provider="mistral",
                kind=ProviderKind.OPENAI_COMPATIBLE,
                api_key_env="MISTRAL_API_KEY",
            ),
        )
        for cell in ACTIVE_CELLS[:2]
    ]
    cells = [*ACTIVE_CELLS, *llm]
    # The weekly run covers the active cells (their provider ranges are contiguous).
    clean_env.setattr(partitions, "ACTIVE_CELLS", cells)
    assert [r.tags[PROVIDER_TAG] for r in _weekly_requests()] == ["offline"]
    clean_env.setenv("MISTRAL_API_KEY", "sk-test-0123")
    requests = _weekly_requests()
    assert [r.tags[PROVIDER_TAG] for r in requests] == ["offline", "mistral"]
    assert requests[1].run_key == "mistral:2026-11-30"
    assert "sk-test-0123" not in repr([r.run_config for r in requests])


def test_the_weekly_live_run_reads_production_urls_answered_by_the_twin(
    tmp_path: Path, clean_env: pytest.MonkeyPatch, twin: TwinServer
) -> None:
    if shutil.which("bwrap") is None:
        pytest.skip("the sandboxed code cells need bubblewrap (apt-get install bubblewrap)")
    paths = Paths(tmp_path)
    with twin_front(twin.urls) as front:
        for name, value in front.client_env().items():
            clean_env.setenv(name, value)
        (request,) = _weekly_requests()
        (tmp_path / "home").mkdir(exist_ok=True)
        with dg.DagsterInstance.local_temp(str(tmp_path / "home")) as instance:
            result = _live_run(request, paths, instance)
            assert result.success
            (run,) = instance.get_runs()
            assert run.tags[LIVE_TAG] == "true"
        asked = [r.url for r in front.wire_requests()]

    (preflight,) = result.asset_materializations_for_node("catalog_validation")
    assert preflight.metadata["snapshot_id"] == dg.TextMetadataValue("live")
    assert preflight.metadata["catalog_answers"] == dg.BoolMetadataValue(True)
    assert check_evaluation(result, "catalog_reachable").passed
    # The pre-flight's probe and the sandboxed code's requests all used production URLs.
    assert "https://www.data.gouv.fr/api/1/site/" in asked
    assert all(url.startswith("https://") and "127.0.0.1" not in url for url in asked)
    assert any(url.startswith("https://www.data.gouv.fr/api/1/datasets/") for url in asked)

    (agents, *_) = result.asset_materializations_for_node("agent_runs")
    skipped = agents.metadata["skipped"].value
    assert isinstance(skipped, dict)
    # The offline provider's request: the inactive models' cells are partitions of other ranges.
    selected = [
        c
        for c in CELLS
        if set(c.evaluation_types) & set(LIVE_TYPES) and c.model.provider == "offline"
    ]
    emulated = [c.key for c in selected if c.mcp_source == "twin"]
    assert len(emulated) == 9
    assert sorted(k for k, why in skipped.items() if "twin's emulation" in why) == sorted(emulated)
    rows = query(paths.db, "SELECT cell_key, status, snapshot_id FROM eval.runs ORDER BY cell_key")
    ran = [c.key for c in selected if c.mcp_source is None]
    assert sorted(row[0] for row in rows) == sorted(ran)
    assert len(ran) == 6
    # Live runs name no snapshot (the live catalog) and all finished.
    assert {(status, snapshot) for _, status, snapshot in rows} == {("ok", None)}
    # The live code cells reached the catalog through the sandbox's proxy and the front.
    cli_cell = next(k for k in ran if "datagouv-cli" in k and "thorough" in k)
    document = paths.store.read(AGENT_RUNS, cli_cell)
    assert document is not None and document["snapshot_id"] is None
    calls = document["traces"][0]["tool_calls"]
    assert calls and "https://www.data.gouv.fr/" in calls[0]["arguments"]["code"]
    assert "Traceback" not in str(calls[0]["result"])


def test_with_the_front_stopped_the_weekly_run_fails_loudly(
    tmp_path: Path, clean_env: pytest.MonkeyPatch, twin: TwinServer
) -> None:
    paths = Paths(tmp_path)
    with twin_front(twin.urls) as front:
        env = front.client_env()
    # The front is stopped: its port refuses connections, as a host without the network would.
    for name, value in env.items():
        clean_env.setenv(name, value)
    (request,) = _weekly_requests()
    (tmp_path / "home").mkdir(exist_ok=True)
    with dg.DagsterInstance.local_temp(str(tmp_path / "home")) as instance:
        result = _live_run(request, paths, instance)
        (run,) = instance.get_runs()
        assert run.status == dg.DagsterRunStatus.FAILURE
    assert not result.success
    check = check_evaluation(result, "catalog_reachable")
    assert not check.passed
    reason = str(check.metadata["reason"].value)
    assert reason.startswith(
        "- the catalog is unreachable: GET https://www.data.gouv.fr/api/1/site/"
    )
    # Nothing ran and nothing was written: no zero rows, earlier results would stay intact.
    assert not result.asset_materializations_for_node("agent_runs")
    assert paths.store.read(AGENT_RUNS, CELLS[0].key) is None
    assert not paths.db.exists()


def test_the_cli_exits_non_zero_with_the_reason_when_the_catalog_is_unreachable(
    tmp_path: Path, clean_env: pytest.MonkeyPatch, twin: TwinServer
) -> None:
    with twin_front(twin.urls) as front:
        env = front.client_env()
    for name, value in env.items():
        clean_env.setenv(name, value)
    (tmp_path / "home").mkdir()
    clean_env.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    clean_env.setenv("DATAGOUV_EVAL_RUN_STORE", str(tmp_path / "store"))
    clean_env.setenv("DATAGOUV_EVAL_DUCKDB", str(tmp_path / "warehouse.duckdb"))
    result = CliRunner().invoke(
        experiment_cli.command,
        ["--live", "--tasks", "task_0002", "--evaluation-type", "data_contamination"],
    )
    assert result.exit_code == 1, result.output
    assert "experiment FAILED" in result.output
    assert (
        "catalog_reachable on catalog_validation (ERROR, blocking): the catalog is unreachable"
        in (result.output)
    )


def test_the_new_builds_sensor_reruns_a_build_whose_code_changed(
    tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    checkout = tmp_path / "datagouv-mcp"
    checkout.mkdir()
    (checkout / "main.py").write_text("print('v1')\n", encoding="utf-8")
    target = next(c for c in CELLS if c.mcp_version == "0.2.26" and c.capabilities == ("mcp",))
    build = McpBuild(path=str(checkout))
    # The same partition, its server now a `path:` build (a developer's checkout).
    cells = [replace(c, mcp_build=build, mcp_source="build") if c is target else c for c in CELLS]
    clean_env.setattr(automation, "CELLS", cells)
    store_root = tmp_path / "store"
    store = RunStoreResource(root=str(store_root))
    repo = defs.get_repository_def()
    sensor = repo.get_sensor_def("new_builds")

    instance = dg.DagsterInstance.ephemeral()
    partitions.register_cells(instance)  # as the daemon did, the active_cell_partitions sensor

    def tick() -> Any:
        context = dg.build_sensor_context(
            instance=instance, repository_def=repo, resources={"run_store": store}
        )
        # The daemon resolves a request's dynamic partition against the instance.
        with dg.partition_loading_context(dynamic_partitions_store=instance):
            return sensor.evaluate_tick(context)

    # Never run: the new_cells sensor's business, not this one's.
    # The patched cell and the real 0.2.14 build's cells (an inactive evaluation type's).
    builds = sum(1 for cell in cells if cell.mcp_build is not None)
    assert builds == 1 + sum(1 for cell in CELLS if cell.mcp_build is not None)
    assert tick().skip_message == f"no build changed ({builds} build cell(s) known)"
    first = code_digest(checkout)
    recorded = AgentRunsDocument.of(target.to_record(), []).model_copy(
        update={"mcp_build": McpBuildRecord(spec="git", code_digest=first, revision=None)}
    )
    store.store().write(AGENT_RUNS, target.key, recorded)
    assert not tick().run_requests

    (checkout / "main.py").write_text("print('v2')\n", encoding="utf-8")  # a new commit
    (request,) = tick().run_requests
    second = code_digest(checkout)
    assert second != first
    assert (request.partition_key, request.run_key) == (target.key, f"{target.key}@{second[:16]}")
    assert request.tags[PROVIDER_TAG] == "offline"
