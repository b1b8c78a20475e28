"""Per-cell and per-task versions, so Dagster marks stale exactly what an edit changes.

Dagster records one data version per step, and a step covers many cells (single-run
backfills), so the cell stages cannot carry per-cell versions themselves. Two partitioned
observable source assets carry them instead, upstream of ``agent_runs``:

* ``cell_setups`` (one partition per cell): the cell's setup (its record: model, capabilities,
  versions, prompt and skills hashes) and the fingerprint of the code its runs depend on
  (``experiment.fingerprints``): editing the 0.2.26 emulation changes only the cells on
  0.2.26, so only their ``agent_runs`` partitions turn stale, and only their task runs rerun;
* ``task_spec_files`` (one partition per task): each task's spec hash, so a spec edit shows as a
  new data version of that task alone (the stale cause of every cell names it) without
  rematerializing anything by hand.

The observations run before every ``datagouv-eval experiment`` (jobs ``observe_cell_setups``
and ``observe_task_specs``) and whenever the sensor ``version_changes`` sees a version move.
Dagster's graph shows no stale badge on a partitioned asset (it asks for the asset's status
without a partition), so the check ``cells_current`` on ``agent_runs`` lists the out-of-date
cells and why; the sensor evaluates it whenever a version moved, so the graph node shows it.
"""

import contextlib
import hashlib
import json
from pathlib import Path
from typing import Any

import dagster as dg
import yaml

from datagouv_eval_pipeline.base.yaml_loading import safe_load
from datagouv_eval_pipeline.core.tasks import (
    TASK_SPECS_DIR,
    SpecErrors,
    load_task_specs,
    spec_files,
)
from datagouv_eval_pipeline.defs.partitions import CELLS, cell_partitions, register_cells
from datagouv_eval_pipeline.defs.resources import RunStoreResource
from datagouv_eval_pipeline.pipeline.experiment import (
    AGENT_RUNS,
    NOT_AN_INPUT,
    AgentRunsDocument,
    RunStore,
    RunStoreError,
    cell_code_fingerprint,
    stale_cells,
)


def _task_id(path: Path) -> str:
    """The task id a spec file declares (its file name when it cannot be read)."""
    try:
        data = safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return path.stem
    task_id = data.get("task_id") if isinstance(data, dict) else None
    return task_id if isinstance(task_id, str) and task_id else path.stem


def _spec_files(directory: Path) -> dict[str, Path]:
    files, _ = spec_files([directory])
    return {_task_id(path): path for path in files}


TASK_KEYS = sorted(_spec_files(TASK_SPECS_DIR))
"""One partition per task spec file, keyed by task id (a new file needs a code reload)."""

task_partitions = dg.StaticPartitionsDefinition(TASK_KEYS)


def cell_setup_versions() -> dict[str, str]:
    """Cell key → the version of what its agent runs depend on (setup and code)."""
    versions = {}
    for cell in CELLS:
        record = {k: v for k, v in cell.to_record().model_dump().items() if k not in NOT_AN_INPUT}
        payload = json.dumps(
            {"cell": record, "code": cell_code_fingerprint(cell)}, sort_keys=True, default=str
        )
        versions[cell.key] = hashlib.sha256(payload.encode()).hexdigest()[:16]
    return versions


def task_spec_versions(directory: Path | None = None) -> dict[str, str]:
    """Task id → its spec hash; a file that does not validate gets ``invalid:<file hash>``."""
    versions = {}
    for task_id, path in _spec_files(directory or TASK_SPECS_DIR).items():
        try:
            (spec,) = load_task_specs([path])
            versions[task_id] = spec.spec_hash()[:16]
        except (SpecErrors, ValueError):
            versions[task_id] = "invalid:" + hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    return versions


@dg.observable_source_asset(
    partitions_def=cell_partitions,
    group_name="task_specs",
    description=(
        "Per cell: the version of its setup and of the code its runs depend on (the shared "
        "agent code and its own toolsets: one MCP release's emulation, a build, the sandbox)."
    ),
)
def cell_setups(context: dg.OpExecutionContext) -> dg.DataVersionsByPartition:
    """Observe the registered cells whose setup version moved since their last observation."""
    # Only partitions can be observed: the instance's cells (``defs/partitions.py``).
    registered = set(register_cells(context.instance))
    versions = {k: v for k, v in cell_setup_versions().items() if k in registered}
    return dg.DataVersionsByPartition(_moved(context, "cell_setups", versions))


def _moved(context: dg.OpExecutionContext, asset: str, versions: dict[str, str]) -> dict[str, str]:
    """The versions that differ from the partitions' last observed ones.

    An unchanged partition is not observed again: each observation is an event the instance
    stores, and an unchanged version changes nothing downstream.
    """
    records = context.instance.fetch_observations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset)), limit=2 * len(versions)
    ).records
    last: dict[str, str | None] = {}
    for record in records:  # newest first
        observation = record.asset_observation
        if observation is not None and observation.partition is not None:
            last.setdefault(observation.partition, observation.data_version)
    return {key: version for key, version in versions.items() if last.get(key) != version}


@dg.observable_source_asset(
    partitions_def=task_partitions,
    group_name="task_specs",
    description="Per task: the hash of its spec (a spec edit shows as that task's new version).",
)
def task_spec_files(context: dg.OpExecutionContext) -> dg.DataVersionsByPartition:
    """Observe the task specs whose version moved since their last observation."""
    # Read at observation time from the module's directory (tests point it elsewhere).
    versions = {k: v for k, v in task_spec_versions(TASK_SPECS_DIR).items() if k in TASK_KEYS}
    return dg.DataVersionsByPartition(_moved(context, "task_spec_files", versions))


observe_cell_setups = dg.define_asset_job(
    "observe_cell_setups",
    selection=dg.AssetSelection.assets("cell_setups"),
    description="Record each cell's setup and code version (only changed cells turn stale).",
)
observe_task_specs = dg.define_asset_job(
    "observe_task_specs",
    selection=dg.AssetSelection.assets("task_spec_files"),
    description="Record each task spec's version (an edited task shows as changed).",
)
OBSERVATION_JOBS = (observe_cell_setups, observe_task_specs)


CELLS_CURRENT = "cells_current"
_AGENT_RUNS_KEY = dg.AssetKey("agent_runs")


def cells_current_result(store: RunStore) -> tuple[bool, dict[str, Any]]:
    """Whether every stored cell is current, and the metadata listing the others and why."""
    specs: dict[str, str] = {}
    # Invalid specs are specs_valid's to report; the code and setup are still compared.
    with contextlib.suppress(SpecErrors):
        specs = {s.task_id: s.spec_hash() for s in load_task_specs([TASK_SPECS_DIR])}
    documents = []
    for cell in CELLS:
        try:
            document = store.read_document(AGENT_RUNS, cell.key, AgentRunsDocument)
        except RunStoreError:
            continue  # an unreadable document is the warehouse's to report
        if document is not None:
            documents.append((cell, document))
    stale = stale_cells(documents, specs)
    details = "\n".join(f"- {key}: {'; '.join(why)}" for key, why in stale.items()) or "none"
    return not stale, {
        "cells_checked": len(documents),
        "stale_cells": len(stale),
        "details": dg.MetadataValue.md(details),
    }


@dg.asset_check(
    asset=_AGENT_RUNS_KEY,
    name=CELLS_CURRENT,
    description=(
        "Every stored cell is current with its code, setup and task specs (warns with the "
        "out-of-date cells and why: what the next run would rerun)."
    ),
)
def cells_current(run_store: RunStoreResource) -> dg.AssetCheckResult:
    """Warn listing the cells an edit made out of date."""
    passed, metadata = cells_current_result(run_store.store())
    return dg.AssetCheckResult(
        passed=passed, severity=dg.AssetCheckSeverity.WARN, metadata=metadata
    )


def _digest(versions: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(versions, sort_keys=True).encode()).hexdigest()[:16]


@dg.sensor(
    jobs=list(OBSERVATION_JOBS),
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Observes the cell and task versions when one moved (a spec or YAML edit).",
)
def version_changes(
    context: dg.SensorEvaluationContext, run_store: RunStoreResource
) -> dg.SensorResult | dg.SkipReason:
    """Request the observation jobs whose versions moved, and re-evaluate ``cells_current``."""
    seen: dict[str, Any] = json.loads(context.cursor) if context.cursor else {}
    current = {
        "observe_cell_setups": _digest(cell_setup_versions()),
        "observe_task_specs": _digest(task_spec_versions()),
    }
    moved = [job for job, digest in current.items() if seen.get(job) != digest]
    if not moved:
        return dg.SkipReason("no cell or task version moved")
    passed, metadata = cells_current_result(run_store.store())
    evaluation = dg.AssetCheckEvaluation(
        asset_key=_AGENT_RUNS_KEY,
        check_name=CELLS_CURRENT,
        passed=passed,
        severity=dg.AssetCheckSeverity.WARN,
        metadata=metadata,
    )
    return dg.SensorResult(
        run_requests=[
            dg.RunRequest(run_key=f"{job}:{current[job]}", job_name=job) for job in moved
        ],
        asset_events=[evaluation],
        cursor=json.dumps(current),
    )
