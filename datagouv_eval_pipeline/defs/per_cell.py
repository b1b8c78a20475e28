"""How a partitioned stage processes the cells of one run.

Many cells go in one Dagster run (``BackfillPolicy.single_run``): a run costs 10–30 s of
orchestration on two cores and must not be paid per cell. Dagster cannot mark single partitions
of such a run as failed materializations (dagster-io/dagster#17836; the open-source event log
does not store per-partition failure events), so a failing cell is reported through a
*partitioned* asset check, ``cell_ok``, evaluated in the stage's own step: one evaluation per
cell of the run, failed with the reason for a failing cell, so the partition shows a failed
check in the UI. Its earlier document stays intact, the failure is recorded next to it, the
cell's later stages refuse to run from its old document, and the other cells go on. A run of
exactly one cell fails for real, so that partition also shows as a failed materialization.

A cell written without a result (every run skipped or ended in error, e.g. a policy that keeps
the baseline coder off MCP, an unset API key or a missing sandbox) is not a success either: its
stage's summary carries ``problem`` and its ``cell_ok`` evaluation fails at WARN severity, with
that reason. The partition stays materialized (the document is what the cell did), and the
warning shows next to it, in the check's partition view and the asset's checks.
"""

import time
import warnings
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import dagster as dg
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluationTargetMaterializationData,
)
from pydantic import BaseModel

from datagouv_eval_pipeline.core.benchmark import Cell
from datagouv_eval_pipeline.defs.interrupts import raise_stopped
from datagouv_eval_pipeline.defs.partitions import CELLS_BY_KEY, cell_partitions
from datagouv_eval_pipeline.pipeline.agents import CancelToken, RunCancelled, current_token
from datagouv_eval_pipeline.pipeline.experiment import RunStore, content_digest

CELL_CHECK = "cell_ok"
"""The per-partition check each cell stage evaluates in its own step."""
NO_RESULT = "problem"
"""Key of a stage's per-cell summary saying why the written cell holds no result."""

StageEvent = dg.MaterializeResult[None] | dg.AssetCheckEvaluation | dg.Output[None]
"""What a cell stage's step yields."""


class UpstreamFailed(RuntimeError):
    """The cell's earlier stage failed on its last attempt: its document is not current."""


def cell_check_spec(asset: str) -> dg.AssetCheckSpec:
    """The partitioned ``cell_ok`` check of the cell stage ``asset``."""
    with warnings.catch_warnings():  # partitioned checks are a preview feature of Dagster 1.13
        warnings.simplefilter("ignore", dg.PreviewWarning)
        return _check_spec(asset)


def _check_spec(asset: str) -> dg.AssetCheckSpec:
    return dg.AssetCheckSpec(
        CELL_CHECK,
        asset=asset,
        partitions_def=cell_partitions,
        description=(
            "This cell's last attempt at this stage succeeded (a failed cell keeps its earlier "
            "document; its later stages are not rebuilt from it)."
        ),
    )


def cell_stage(
    *,
    deps: Sequence[dg.AssetsDefinition | dg.SourceAsset | dg.AssetKey | dg.AssetDep],
    code_version: str,
    eager: bool = True,
) -> Callable[[Callable[..., Iterator[StageEvent]]], dg.AssetsDefinition]:
    """The asset decorator of a cell stage: partitioned by cell, one run for many cells.

    Each stage is in the ``cells`` group, evaluates its ``cell_ok`` check (named after the
    function) and, unless ``eager`` is False, follows its own partition upstream.

    Args:
        deps: What the stage depends on.
        code_version: Its Dagster code version (``experiment.fingerprints``).
        eager: Whether it materializes on its own when its upstream partition does.
    """

    def decorate(stage: Callable[..., Iterator[StageEvent]]) -> dg.AssetsDefinition:
        return dg.asset(
            partitions_def=cell_partitions,
            backfill_policy=dg.BackfillPolicy.single_run(),
            deps=deps,
            group_name="cells",
            kinds={"python"},
            code_version=code_version,
            automation_condition=dg.AutomationCondition.eager() if eager else None,
            check_specs=[cell_check_spec(stage.__name__)],
        )(stage)

    return decorate


def require_current(store: RunStore, key: str, *stages: str) -> None:
    """Refuse to build on a cell whose earlier stage failed on its last attempt.

    Raises:
        UpstreamFailed: Naming the stage and its failure.
    """
    for stage in stages:
        failure = store.failure(stage, key)
        if failure is not None:
            raise UpstreamFailed(f"{stage} failed at {failure.at}: {failure.reason}")


def partition_label(cell: Cell) -> dict[str, str]:
    """Readable coordinates of a cell, shown as the partition's metadata in the UI."""
    label = {
        "model": f"{cell.model.provider}/{cell.model.name}",
        "capabilities": cell.capability_set,
        "system_prompt": cell.system_prompt,
        "evaluation_types": ", ".join(cell.evaluation_types),
    }
    if cell.mcp_version is not None:
        label["mcp"] = cell.mcp_version + (f" ({cell.mcp_source})" if cell.mcp_source else "")
    if cell.mcp_build_spec:
        label["mcp_build"] = cell.mcp_build_spec
    if cell.skills_version is not None:
        label["skills"] = cell.skills_version
    return label


@dataclass
class CellOutcomes:
    """What one stage did to the cells of a run.

    Attributes:
        written: Cell key → summary of the new document.
        failed: Cell key → reason.
        skipped: Cell key → why it was not processed (filtered out, upstream missing).
        digests: Cell key → content hash of the new document (one-cell runs only).
    """

    written: dict[str, dict[str, Any]] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    digests: dict[str, str] = field(default_factory=dict)


def process_cells(
    context: dg.AssetExecutionContext,
    store: RunStore,
    stage: str,
    work: Callable[[str], tuple[BaseModel, dict[str, Any]] | str],
    *,
    cancel: CancelToken | None = None,
    progress: Callable[[dict[str, Any]], str] | None = None,
) -> CellOutcomes:
    """Run ``work`` on each cell of the run and store its document.

    Args:
        context: The asset context (its partition keys are the run's cells).
        store: The run store.
        stage: The stage name (its documents' directory).
        work: Given a cell key, returns ``(document, summary)`` to store, or a string saying
            why the cell is skipped. An exception fails only that cell.
        cancel: Set by Ctrl-C or SIGTERM: the cell in progress stops (``RunCancelled``), its
            earlier document stays, the remaining cells are not started, and the run stops
            (canceled). Default: the run's token, when the caller owns the signals.
        progress: Renders a cell's summary as its progress line (``[3/24] cell …: …``); no
            line per cell when None.

    Returns:
        The outcomes.

    Raises:
        dagster.Failure: The run covered one cell and it failed, or every cell failed.
        dagster.DagsterExecutionInterruptedError: The run was interrupted.
    """
    cancel = cancel if cancel is not None else current_token()
    outcomes = CellOutcomes()
    keys = context.partition_keys
    for index, key in enumerate(keys, start=1):
        if cancel is not None and cancel.cancelled:
            outcomes.skipped[key] = f"not started: {cancel.reason}"
            continue
        started = time.perf_counter()
        try:
            result = work(key)
        except RunCancelled as stop:
            reason = f"{stop.reason}: {stop.cancelled_runs} task run(s) cancelled"
            store.record_failure(stage, key, reason)
            outcomes.failed[key] = reason
            context.log.warning("[%d/%d] cell %s: %s", index, len(keys), key, reason)
            continue
        except Exception as error:  # one cell's failure must not sink the others
            reason = f"{type(error).__name__}: {error}"
            store.record_failure(stage, key, reason)
            outcomes.failed[key] = reason
            context.log.error("%s failed for cell %s: %s", stage, key, reason)
            continue
        if isinstance(result, str):
            outcomes.skipped[key] = result
            continue
        document, summary = result
        store.write(stage, key, document)
        outcomes.written[key] = summary
        if progress is not None:
            elapsed = time.perf_counter() - started
            context.log.info(
                "[%d/%d] cell %s: %s, %.1f s", index, len(keys), key, progress(summary), elapsed
            )
        if len(keys) == 1:  # a data version is only recorded for a one-cell run (see result_of)
            outcomes.digests[key] = content_digest(document.model_dump(mode="json"))
    if cancel is not None and cancel.cancelled:
        raise_stopped(
            context,
            f"{stage} stopped ({cancel.reason}): {len(outcomes.written)} cell(s) finished "
            f"and kept, finished task runs cached; run the experiment again to resume",
        )
    if outcomes.failed and (len(keys) == 1 or not outcomes.written):
        raise dg.Failure(
            description=f"{stage} failed for {len(outcomes.failed)} cell(s)",
            metadata={"failed": dg.MetadataValue.json(outcomes.failed)},
        )
    return outcomes


def cell_results(
    context: dg.AssetExecutionContext, outcomes: CellOutcomes, **extra: Any
) -> Iterator[StageEvent]:
    """The step's events: the materialization, then one ``cell_ok`` evaluation per cell.

    The materialization carries per-cell summaries and failures, the data version of a
    one-cell run, and per partition its readable label and its status. Each evaluation comes
    after it and names it as its target: the UI counts a partition's check result only when it
    targets the partition's latest materialization (otherwise the partition shows no status).
    """
    asset_key = context.assets_def.key
    check_key = dg.AssetCheckKey(asset_key, CELL_CHECK)
    checked = check_key in context.selected_asset_check_keys
    evaluations: list[tuple[str, dict[str, Any]]] = []
    for key in context.partition_keys:
        status: dict[str, Any] = {}
        if key in outcomes.written:
            problem = outcomes.written[key].get(NO_RESULT)
            status = {"status": "written" if problem is None else f"NO RESULT: {problem}"}
            if problem is None:
                evaluations.append((key, {"passed": True}))
            else:
                evaluations.append(
                    (
                        key,
                        {
                            "passed": False,
                            "severity": dg.AssetCheckSeverity.WARN,
                            "description": f"no result: {problem}"[:500],
                            "metadata": {"reason": str(problem)},
                        },
                    )
                )
        elif key in outcomes.failed:
            status = {"status": "FAILED (earlier document kept)", "failure": outcomes.failed[key]}
        if key in outcomes.failed:
            evaluations.append(
                (
                    key,
                    {
                        "passed": False,
                        "description": outcomes.failed[key][:500],
                        "metadata": {"reason": outcomes.failed[key]},
                    },
                )
            )
        if key in outcomes.skipped:
            status = {"status": f"not run: {outcomes.skipped[key]}"}
        cell = CELLS_BY_KEY.get(key)
        label = partition_label(cell) if cell is not None else {}
        context.add_asset_metadata({**label, **status}, partition_key=key)
    metadata: dict[str, Any] = {
        "cells_written": len(outcomes.written),
        "cells_failed": len(outcomes.failed),
        "cells_skipped": len(outcomes.skipped),
        "cells": dg.MetadataValue.json(outcomes.written),
        **extra,
    }
    if outcomes.failed:
        metadata["failed"] = dg.MetadataValue.json(outcomes.failed)
    if outcomes.skipped:
        metadata["skipped"] = dg.MetadataValue.json(outcomes.skipped)
    # Per-partition data versions exist only when the run covers one partition; with several,
    # staleness comes from the per-cell versions upstream (``defs/versions.py``).
    version = None
    if len(outcomes.digests) == 1 and not outcomes.failed:
        version = dg.DataVersion(next(iter(outcomes.digests.values())))
    yield dg.MaterializeResult(metadata=metadata, data_version=version)
    if not checked:
        return
    for key, fields in evaluations:
        yield dg.AssetCheckEvaluation(
            asset_key=asset_key,
            check_name=CELL_CHECK,
            partition=key,
            target_materialization_data=_latest_materialization(context, asset_key, key),
            **fields,
        )
    # The check's output: the evaluations above are its results, one per cell.
    output = context.assets_def.get_output_name_for_asset_check_key(check_key)
    yield dg.Output(None, output_name=output)


def _latest_materialization(
    context: dg.AssetExecutionContext, asset_key: dg.AssetKey, partition: str
) -> AssetCheckEvaluationTargetMaterializationData | None:
    """The partition's latest materialization (this step's, stored once it was yielded)."""
    records = context.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=asset_key, asset_partitions=[partition]), limit=1
    ).records
    if not records:
        return None
    return AssetCheckEvaluationTargetMaterializationData(
        storage_id=records[0].storage_id,
        run_id=records[0].run_id,
        timestamp=records[0].timestamp,
    )


def not_selected(
    key: str,
    evaluation_types: list[str],
    cells_by_key: Mapping[str, Cell] = CELLS_BY_KEY,
    *,
    chosen: Collection[str] = (),
) -> str | None:
    """Why a cell of the run's range is left alone, or None when it runs.

    An explicit selection of evaluation types (the launchpad's or ``--evaluation-type``) runs
    only their cells, and one of cells (``chosen``: ``--models``, ``--cells``) only those;
    without either, every cell of the range runs. A partition whose cell left the YAML never
    runs (its earlier results stay).
    """
    cell = cells_by_key.get(key)
    if cell is None:  # a partition registered earlier whose cell the YAML no longer has
        return "not a cell of the benchmark configuration any more"
    if chosen and key not in chosen:
        return "not among the chosen cells"
    if evaluation_types and not set(cell.evaluation_types) & set(evaluation_types):
        return "not in the selected evaluation types"
    return None
