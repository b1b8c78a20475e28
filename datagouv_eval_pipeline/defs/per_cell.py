"""How a partitioned stage processes the cells of one run.

Many cells go in one Dagster run (``BackfillPolicy.single_run``): a run costs 10–30 s of
orchestration on two cores and must not be paid per cell. Dagster cannot mark single partitions
of such a run as failed (dagster-io/dagster#17836), so a failing cell is handled here: its
earlier document stays intact, the failure is recorded next to it (the ``cells_succeeded``
checks report it), and the other cells go on. A run of exactly one cell fails for real, so
the UI shows that partition as failed.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from datagouv_eval_pipeline.agents.cancel import CancelToken, RunCancelled
from datagouv_eval_pipeline.experiment.store import RunStore, content_digest


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
    work: Callable[[str], tuple[dict[str, Any], dict[str, Any]] | str],
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
            earlier document stays, the remaining cells are not started, and the step fails.
        progress: Renders a cell's summary as its progress line (``[3/24] cell …: …``); no
            line per cell when None.

    Returns:
        The outcomes.

    Raises:
        dagster.Failure: The run covered one cell and it failed, every cell failed, or the run
            was interrupted.
    """
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
            outcomes.digests[key] = content_digest(document)
    if cancel is not None and cancel.cancelled:
        raise dg.Failure(
            description=(
                f"{stage} stopped ({cancel.reason}): {len(outcomes.written)} cell(s) finished "
                f"and kept, finished task runs cached; run the experiment again to resume"
            ),
            metadata={"failed": dg.MetadataValue.json(outcomes.failed)},
        )
    if outcomes.failed and (len(keys) == 1 or not outcomes.written):
        raise dg.Failure(
            description=f"{stage} failed for {len(outcomes.failed)} cell(s)",
            metadata={"failed": dg.MetadataValue.json(outcomes.failed)},
        )
    return outcomes


def result_of(outcomes: CellOutcomes, **extra: Any) -> dg.MaterializeResult[None]:
    """The materialization: per-cell summaries, failures, and the data version of one cell."""
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
    # staleness falls back to the asset's code version and the automation conditions.
    version = None
    if len(outcomes.digests) == 1 and not outcomes.failed:
        version = dg.DataVersion(next(iter(outcomes.digests.values())))
    return dg.MaterializeResult(metadata=metadata, data_version=version)
