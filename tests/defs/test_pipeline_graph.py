"""The shape of the code location: assets, partitions, checks, jobs, schedule and dry run.

A snapshot: when the graph changes on purpose, update the literal lists here. The dbt models
(another module) are left out so that this test does not depend on how they are wired.
"""

from dataclasses import replace
from datetime import UTC, datetime

import dagster as dg
import pytest

from datagouv_eval_pipeline.core.benchmark.cells import Cell
from datagouv_eval_pipeline.definitions import build_definitions
from datagouv_eval_pipeline.defs import partitions, versions
from datagouv_eval_pipeline.defs.automation import PROVIDER_TAG
from tests.defs.pipeline_helpers import RANGE_END, RANGE_START, counting_task_runs

defs = build_definitions()

EXPECTED_ASSETS = [
    "action_mappings",
    "agent_runs",
    "catalog_validation",
    "cell_setups",
    "eval/action_instances",
    "eval/cells",
    "eval/comparisons",
    "eval/experiments",
    "eval/failure_modes",
    "eval/feature_comparisons",
    "eval/feature_estimates",
    "eval/gate_results",
    "eval/judge_calibration",
    "eval/metric_estimates",
    "eval/metrics",
    "eval/metrics_history",
    "eval/pass_k",
    "eval/question_comparisons",
    "eval/questions",
    "eval/references",
    "eval/runs",
    "eval/runs_history",
    "eval/task_features",
    "eval/tasks",
    "eval/tool_calls",
    "eval/verdicts",
    "experiment_report",
    "judge_scores",
    "task_spec_files",
    "task_specs",
]
PARTITIONED = ["action_mappings", "agent_runs", "cell_setups", "judge_scores", "task_spec_files"]
EXPECTED_CHECKS = [
    ("action_mappings", "cell_ok"),
    ("agent_runs", "cell_ok"),
    ("agent_runs", "cells_current"),
    ("agent_runs", "cells_succeeded"),
    ("agent_runs", "no_duplicate_runs"),
    ("agent_runs", "transcripts_present"),
    ("catalog_validation", "catalog_reachable"),
    ("catalog_validation", "no_quarantined_tasks"),
    ("eval/cells", "cell_coverage"),
    ("eval/gate_results", "no_regression"),
    ("eval/metrics", "scores_in_range"),
    ("eval/runs", "runs_match_partitions"),
    ("eval/verdicts", "judge_coverage"),
    ("judge_scores", "cell_ok"),
    ("task_specs", "specs_valid"),
]
BLOCKING_CHECKS = ["catalog_reachable", "specs_valid"]
EXPECTED_JOBS = [
    "agent_runs_for_new_cells",
    "experiment",
    "experiment_dry_run",
    "observe_cell_setups",
    "observe_task_specs",
]
EXPECTED_SCHEDULES = ["weekly_experiment"]
EXPECTED_SENSORS = [
    "active_cell_partitions",
    "eval_automation",
    "new_builds",
    "new_cells",
    "version_changes",
]
_MODELS = ["baseline-oneshot", "baseline-thorough", "baseline-coder"]
EXPECTED_PARTITIONS = [
    *(f"offline~{m}__none__data_gouv_context" for m in _MODELS),
    *(
        f"offline~{m}__mcp@{v}__data_gouv_context"
        for m in _MODELS
        for v in ("0.2.5", "0.2.19", "0.2.26")
    ),
    *(f"offline~{m}__mcp@0.2.26+skills@0.0.1__data_gouv_context" for m in _MODELS),
    *(f"offline~{m}__code__data_gouv_context" for m in _MODELS),
    *(f"offline~{m}__code+skills@0.0.1__data_gouv_context" for m in _MODELS),
    *(f"offline~{m}__code+datagouv-cli__data_gouv_context" for m in _MODELS),
]
INACTIVE_PARTITIONS = [
    *(
        f"offline~{m}__{setup}__data_gouv_context"
        for setup in (
            "mcp@0.2.26+web_search",
            "code+mcp@0.2.26",
            "code+mcp@0.2.26+web_search",
            "mcp@0.2.14~build",
        )
        for m in _MODELS
    ),
]


def _dbt_assets() -> list[dg.AssetsDefinition]:
    return [
        a
        for a in defs.assets or []
        if isinstance(a, dg.AssetsDefinition) and any("dbt" in spec.kinds for spec in a.specs)
    ]


def test_asset_keys_groups_and_partitions() -> None:
    dbt_keys = {key for a in _dbt_assets() for key in a.keys}
    graph = defs.resolve_asset_graph()
    keys = sorted(k.to_user_string() for k in graph.get_all_asset_keys() if k not in dbt_keys)
    assert keys == EXPECTED_ASSETS
    partitioned = sorted(
        k.to_user_string() for k in graph.get_all_asset_keys() if graph.get(k).partitions_def
    )
    assert partitioned == PARTITIONED
    assert graph.get(dg.AssetKey("task_spec_files")).partitions_def == versions.task_partitions
    for name in PARTITIONED:
        node = graph.get(dg.AssetKey(name))
        if name == "task_spec_files":  # one partition per task
            continue
        assert node.partitions_def == partitions.cell_partitions
        if name == "cell_setups":  # an observation, upstream of the cells
            continue
        assert node.backfill_policy == dg.BackfillPolicy.single_run()
        assert node.group_name == "cells"
    # Lineage of the cell stages and the warehouse fan-in.
    parents = {k: graph.get(dg.AssetKey.from_user_string(k)).parent_keys for k in EXPECTED_ASSETS}
    assert parents["agent_runs"] == {
        dg.AssetKey("task_specs"),
        dg.AssetKey("catalog_validation"),
        dg.AssetKey("cell_setups"),
        dg.AssetKey("task_spec_files"),
    }
    assert parents["action_mappings"] == {dg.AssetKey("agent_runs")}
    # The pre-flight recomputes the references the judge and the value check compare with.
    assert parents["judge_scores"] == {
        dg.AssetKey("action_mappings"),
        dg.AssetKey("catalog_validation"),
    }
    # The judge's calibration reads the task specs and writes the warehouse after its load.
    assert parents["eval/judge_calibration"] == {
        dg.AssetKey("task_specs"),
        dg.AssetKey(["eval", "experiments"]),
    }
    for key in EXPECTED_ASSETS:
        if key.startswith("eval/") and key != "eval/judge_calibration":
            assert parents[key] == {dg.AssetKey("judge_scores")}, key


def test_cells_are_every_cell_the_24_active_ones_first_and_partitions_when_registered() -> None:
    keys = [cell.key for cell in partitions.CELLS]
    # The offline baselines' 36 cells, then the 12 of each of the 10 inactive models, grouped
    # by provider in models.yml order.
    assert len(keys) == 36 + 10 * 12
    assert keys[:36] == EXPECTED_PARTITIONS + INACTIVE_PARTITIONS
    models = list(dict.fromkeys(key.split("__")[0] for key in keys[36:]))
    assert [m.split("~")[0] for m in models] == ["mistral"] * 3 + ["openai"] * 3 + ["albert"] * 4
    assert all(sum(key.startswith(m + "__") for key in keys) == 12 for m in models)
    assert [cell.key for cell in partitions.ACTIVE_CELLS] == EXPECTED_PARTITIONS
    assert partitions.provider_ranges() == {
        "offline": (EXPECTED_PARTITIONS[0], EXPECTED_PARTITIONS[-1])
    }
    # The partitions are the instance's: a fresh one gets the active cells, in that order.
    assert isinstance(partitions.cell_partitions, dg.DynamicPartitionsDefinition)
    with dg.instance_for_test() as instance:
        assert partitions.register_cells(instance) == EXPECTED_PARTITIONS
        assert partitions.cell_partitions.get_partition_keys(dynamic_partitions_store=instance) == (
            EXPECTED_PARTITIONS
        )


def test_checks_and_which_ones_block() -> None:
    dbt_checks = {key for a in _dbt_assets() for key in a.check_keys}
    graph = defs.resolve_asset_graph()
    ours = [k for k in graph.asset_check_keys if k not in dbt_checks]
    assert sorted((k.asset_key.to_user_string(), k.name) for k in ours) == EXPECTED_CHECKS
    blocking = sorted(k.name for k in ours if graph.get_check_spec(k).blocking)
    assert blocking == BLOCKING_CHECKS


def test_jobs_schedules_and_sensors() -> None:
    repo = defs.get_repository_def()
    jobs = sorted(j.name for j in repo.get_all_jobs() if not j.name.startswith("__"))
    assert jobs == EXPECTED_JOBS
    assert sorted(s.name for s in repo.schedule_defs) == EXPECTED_SCHEDULES
    assert sorted(s.name for s in repo.sensor_defs) == EXPECTED_SENSORS
    schedule = repo.get_schedule_def("weekly_experiment")
    assert (schedule.cron_schedule, schedule.execution_timezone) == ("0 3 * * 1", "UTC")
    assert schedule.job_name == "experiment"


MONDAY = datetime(2026, 11, 30, 3, tzinfo=UTC)


def _weekly_requests() -> list[dg.RunRequest]:
    repo = defs.get_repository_def()
    with (
        dg.instance_for_test() as instance,
        dg.build_schedule_context(
            instance=instance, repository_def=repo, scheduled_execution_time=MONDAY
        ) as context,
    ):
        result = repo.get_schedule_def("weekly_experiment").evaluate_tick(context)
    return list(result.run_requests or [])


def test_the_weekly_schedule_runs_each_provider_over_its_range() -> None:
    (request,) = _weekly_requests()
    assert request.run_key == "offline:2026-11-30"
    assert request.tags[RANGE_START] == EXPECTED_PARTITIONS[0]
    assert request.tags[RANGE_END] == EXPECTED_PARTITIONS[-1]
    assert request.tags[PROVIDER_TAG] == "offline"


def _with_provider(cell: Cell, provider: str) -> Cell:
    return replace(cell, key=f"{provider}:{cell.key}", model=replace(cell.model, provider=provider))


def test_cells_of_several_providers_form_one_run_request_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base = partitions.CELLS[:4]
    # Interleaved providers in configuration order, as a YAML with two providers would give.
    mixed = [
        _with_provider(base[0], "mistral"),
        _with_provider(base[1], "albert"),
        _with_provider(base[2], "mistral"),
        _with_provider(base[3], "albert"),
    ]
    monkeypatch.setattr(
        partitions, "expand_cells", lambda config, names=None, models=None: list(mixed)
    )
    grouped, active = partitions.experiment_cells()
    assert [c.key for c in grouped] == [mixed[0].key, mixed[2].key, mixed[1].key, mixed[3].key]
    assert active == grouped

    monkeypatch.setattr(partitions, "CELLS", grouped)
    monkeypatch.setattr(partitions, "ACTIVE_CELLS", active)
    requests = _weekly_requests()
    ranges = {r.tags[PROVIDER_TAG]: (r.tags[RANGE_START], r.tags[RANGE_END]) for r in requests}
    assert ranges == {
        "mistral": (mixed[0].key, mixed[2].key),
        "albert": (mixed[1].key, mixed[3].key),
    }
    assert sorted(str(r.run_key) for r in requests) == [
        "albert:2026-11-30",
        "mistral:2026-11-30",
    ]


def test_the_dry_run_job_reports_the_plan_and_runs_no_agent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = {"task_ids": ["task_0002", "task_0003"], "repeats": 2}
    with counting_task_runs(monkeypatch) as counter:
        result = defs.resolve_job_def("experiment_dry_run").execute_in_process(
            run_config={"resources": {"experiment": {"config": settings}}},
            instance=dg.DagsterInstance.ephemeral(),
        )
    assert result.success
    assert counter.total == 0
    (output,) = [e for e in result.all_events if e.event_type_value == "STEP_OUTPUT"]
    metadata = output.step_output_data.metadata
    assert metadata["cells"] == dg.IntMetadataValue(24)
    assert metadata["tasks"] == dg.IntMetadataValue(2)
    assert metadata["task_runs"] == dg.IntMetadataValue(24 * 2 * 2)
    assert metadata["estimated_cost"] == dg.FloatMetadataValue(0.0)
    assert metadata["unpriced_cells"] == dg.IntMetadataValue(0)


def test_the_dry_run_job_filters_by_evaluation_type() -> None:
    settings = {"evaluation_types": ["mcp_versions"], "task_ids": ["task_0003"]}
    result = defs.resolve_job_def("experiment_dry_run").execute_in_process(
        run_config={"resources": {"experiment": {"config": settings}}},
        instance=dg.DagsterInstance.ephemeral(),
    )
    (output,) = [e for e in result.all_events if e.event_type_value == "STEP_OUTPUT"]
    # mcp_versions: 3 offline baselines × 3 MCP versions.
    assert output.step_output_data.metadata["cells"] == dg.IntMetadataValue(9)
    assert output.step_output_data.metadata["task_runs"] == dg.IntMetadataValue(9)


def test_the_new_cells_sensor_requests_only_cells_never_materialized() -> None:
    repo = defs.get_repository_def()
    sensor = repo.get_sensor_def("new_cells")
    instance = dg.DagsterInstance.ephemeral()
    partitions.register_cells(instance)
    done = EXPECTED_PARTITIONS[:2]
    for key in done:
        instance.report_runless_asset_event(dg.AssetMaterialization("agent_runs", partition=key))
    context = dg.build_sensor_context(instance=instance, repository_def=repo)
    # The daemon resolves a request's dynamic partition against the instance; so does this.
    with dg.partition_loading_context(dynamic_partitions_store=instance):
        requests = list(sensor.evaluate_tick(context).run_requests or [])
    assert [r.partition_key for r in requests] == EXPECTED_PARTITIONS[2:]
    assert {r.tags[PROVIDER_TAG] for r in requests} == {"offline"}

    for key in EXPECTED_PARTITIONS[2:]:
        instance.report_runless_asset_event(dg.AssetMaterialization("agent_runs", partition=key))
    with dg.partition_loading_context(dynamic_partitions_store=instance):
        result = sensor.evaluate_tick(
            dg.build_sensor_context(instance=instance, repository_def=repo)
        )
    assert not result.run_requests
    assert result.skip_message == "every cell has agent runs"
