"""Precise staleness on a real instance: an edit stales and reruns only the cells it touches.

Per-cell versions (``cell_setups``: the cell's setup and the code its runs depend on) and
per-task versions (``task_spec_files``) are observed before the cells run. Changing one
behaviour of the 0.2.26 emulation then stales only the cells on 0.2.26 and reruns only their
task runs; editing one task spec shows as that task's new version, names it as the stale cause
of every cell, and reruns that task alone.
"""

from dataclasses import replace
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
from dagster._core.loader import LoadingContextForTest

from datagouv_eval_pipeline.defs.resources import RunStoreResource
from datagouv_eval_pipeline.defs.versions import (
    OBSERVATION_JOBS,
    cell_setups,
    task_spec_files,
    version_changes,
)
from datagouv_eval_pipeline.world.mcp import versions as mcp_versions
from tests.defs.pipeline_helpers import (
    CELL_STAGES,
    MCP_CELLS,
    RANGE_END,
    RANGE_START,
    Paths,
    copy_task_specs,
    counting_task_runs,
    resources,
)

ON_0_2_19, ON_0_2_26 = MCP_CELLS[1:3]  # oneshot at MCP 0.2.19 and 0.2.26, adjacent
TASKS = ["task_0002", "task_0003"]
CHANGED = "task_0003"
AGENT_RUNS = dg.AssetKey("agent_runs")


def _defs(paths: Paths) -> dg.Definitions:
    cells = dg.define_asset_job("cells", selection=dg.AssetSelection.assets(*CELL_STAGES))
    return dg.Definitions(
        assets=[cell_setups, task_spec_files, *CELL_STAGES],
        jobs=[cells, *OBSERVATION_JOBS],
        resources=resources(paths, task_ids=TASKS),
        executor=dg.in_process_executor,
    )


def _observe(defs: dg.Definitions, instance: dg.DagsterInstance) -> None:
    for job in OBSERVATION_JOBS:
        assert defs.resolve_job_def(job.name).execute_in_process(instance=instance).success


def _run(defs: dg.Definitions, instance: dg.DagsterInstance) -> None:
    result = defs.resolve_job_def("cells").execute_in_process(
        instance=instance, tags={RANGE_START: ON_0_2_19, RANGE_END: ON_0_2_26}
    )
    assert result.success


def _staleness(
    defs: dg.Definitions, instance: dg.DagsterInstance
) -> dict[str, tuple[StaleStatus, list[str]]]:
    """Per cell: agent_runs' stale status and its root causes (as ``asset[partition]``)."""
    resolver = CachingStaleStatusResolver(
        instance, defs.resolve_asset_graph(), LoadingContextForTest(instance)
    )
    return {
        key: (
            resolver.get_status(AGENT_RUNS, key),
            sorted(
                f"{cause.asset_key.to_user_string()}[{cause.partition_key}]"
                for cause in resolver.get_stale_root_causes(AGENT_RUNS, key)
            ),
        )
        for key in (ON_0_2_19, ON_0_2_26)
    }


def _badge(paths: Paths, instance: dg.DagsterInstance) -> tuple[bool, str]:
    """What the sensor reports as ``cells_current`` on agent_runs (the graph node's badge)."""
    context = dg.build_sensor_context(
        instance=instance, resources={"run_store": RunStoreResource(root=str(paths.store_root))}
    )
    result = version_changes(context)
    assert isinstance(result, dg.SensorResult)
    (evaluation,) = result.asset_events
    assert isinstance(evaluation, dg.AssetCheckEvaluation)
    assert evaluation.check_name == "cells_current"
    return evaluation.passed, str(evaluation.metadata["details"].value)


def test_an_edit_stales_and_reruns_only_the_cells_and_tasks_it_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = Paths(tmp_path)
    specs_dir = copy_task_specs(tmp_path, monkeypatch)
    defs = _defs(paths)
    with dg.instance_for_test() as instance, counting_task_runs(monkeypatch) as counter:
        _observe(defs, instance)
        _run(defs, instance)
        assert counter.per_cell == {ON_0_2_19: 2, ON_0_2_26: 2}
        assert _badge(paths, instance) == (True, "none")
        fresh: dict[str, tuple[StaleStatus, list[str]]] = {
            key: (StaleStatus.FRESH, []) for key in (ON_0_2_19, ON_0_2_26)
        }
        assert _staleness(defs, instance) == fresh

        # One behaviour of the 0.2.26 emulation changes (its metrics clamp).
        spec = mcp_versions.VERSIONS["0.2.26"]
        changed = replace(spec, behaviour=replace(spec.behaviour, metrics_limit_max=49))
        monkeypatch.setitem(mcp_versions.VERSIONS, "0.2.26", changed)
        _observe(defs, instance)
        assert _staleness(defs, instance) == {
            ON_0_2_19: (StaleStatus.FRESH, []),
            ON_0_2_26: (StaleStatus.STALE, [f"cell_setups[{ON_0_2_26}]"]),
        }
        assert _badge(paths, instance) == (
            False,
            f"- {ON_0_2_26}: the code its runs depend on changed",
        )
        counter.reset()
        _run(defs, instance)
        assert counter.per_cell == {ON_0_2_26: 2}  # the 0.2.19 cell's runs come from the cache
        assert _staleness(defs, instance) == fresh

        # One task's spec changes: that task alone shows a new version, and is what reruns.
        path = specs_dir / f"{CHANGED}.yml"
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace("prompt: >", "prompt: >\n  Question reformulée :", 1), "utf-8")
        _observe(defs, instance)
        cause = [f"task_spec_files[{CHANGED}]"]
        assert _staleness(defs, instance) == {
            ON_0_2_19: (StaleStatus.STALE, cause),
            ON_0_2_26: (StaleStatus.STALE, cause),
        }
        assert _badge(paths, instance) == (
            False,
            f"- {ON_0_2_19}: spec changed: {CHANGED}\n- {ON_0_2_26}: spec changed: {CHANGED}",
        )
        counter.reset()
        _run(defs, instance)
        assert counter.per_task == {CHANGED: 2}
        assert counter.per_cell == {ON_0_2_19: 1, ON_0_2_26: 1}
        assert _staleness(defs, instance) == fresh
        assert _badge(paths, instance) == (True, "none")
