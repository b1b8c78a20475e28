"""Asset checks that catch real problems in the cell stages and the warehouse.

Checks of the partitioned stages look at every current cell's run store document (Dagster runs
a check once per run, not per partition).
"""

from collections import Counter
from collections.abc import Iterator

import dagster as dg

from datagouv_eval_pipeline.core.tasks import TASK_SPECS_DIR, load_task_specs
from datagouv_eval_pipeline.defs.agent_runs import agent_runs
from datagouv_eval_pipeline.defs.partitions import ACTIVE_CELLS, CELLS
from datagouv_eval_pipeline.defs.resources import (
    ExperimentSettings,
    RunStoreResource,
    WarehouseResource,
)
from datagouv_eval_pipeline.defs.warehouse import WAREHOUSE_KEYS
from datagouv_eval_pipeline.pipeline.experiment import (
    AGENT_RUNS,
    AgentRunsDocument,
    RunStore,
    RunStoreError,
    quarantined_tasks,
    select_tasks,
)
from datagouv_eval_pipeline.pipeline.warehouse import SCHEMA, connect, queries

JUDGE_COVERAGE_THRESHOLD = 0.8
"""Below this share of scored verdicts the coverage check warns."""


def _documents(store: RunStore) -> Iterator[tuple[str, AgentRunsDocument]]:
    for cell in CELLS:
        try:
            document = store.read_document(AGENT_RUNS, cell.key, AgentRunsDocument)
        except RunStoreError:
            continue  # a corrupt document fails its cell, reported there and by the warehouse
        if document is not None:
            yield cell.key, document


def _md(lines: list[str]) -> dg.MetadataValue:
    return dg.MetadataValue.md("\n".join(f"- {line}" for line in lines[:50]) or "none")


@dg.asset_check(asset=agent_runs, description="Every cell has a trace for every expected task.")
def transcripts_present(
    run_store: RunStoreResource, experiment: ExperimentSettings
) -> dg.AssetCheckResult:
    """Each stored cell holds a trace per selected (non-quarantined) task × repeat."""
    store = run_store.store()
    try:
        quarantined = quarantined_tasks(store)
    except RunStoreError as error:
        # Which tasks to expect is unknown: the check fails and names the unreadable file.
        return dg.AssetCheckResult(passed=False, metadata={"details": _md([str(error)])})
    tasks = [
        t.task_id
        for t in select_tasks(load_task_specs([TASK_SPECS_DIR]), experiment.task_ids)
        if t.task_id not in quarantined
    ]
    problems = []
    for key, document in _documents(store):
        seen = Counter(trace.task_id for trace in document.traces)
        lacking = [t for t in tasks if seen[t] < experiment.repeats]
        if lacking:
            problems.append(f"{key}: no trace for {', '.join(lacking)}")
    return dg.AssetCheckResult(
        passed=not problems, metadata={"cells_lacking": len(problems), "details": _md(problems)}
    )


@dg.asset_check(asset=agent_runs, description="No (cell, task, repeat) appears twice.")
def no_duplicate_runs(run_store: RunStoreResource) -> dg.AssetCheckResult:
    """Each stored cell lists each (task, repeat) once."""
    problems = []
    for key, document in _documents(run_store.store()):
        counts = Counter(document.runs())
        problems += [f"{key}: {t} repeat {r} ×{n}" for (t, r), n in counts.items() if n > 1]
    return dg.AssetCheckResult(passed=not problems, metadata={"duplicates": _md(problems)})


@dg.asset_check(asset=agent_runs, description="No cell's last agent run attempt failed.")
def cells_succeeded(run_store: RunStoreResource) -> dg.AssetCheckResult:
    """List cells whose last attempt failed (their earlier results, if any, are kept)."""
    store = run_store.store()
    failed = {
        cell.key: failure.reason
        for cell in CELLS
        if (failure := store.failure(AGENT_RUNS, cell.key)) is not None
    }
    return dg.AssetCheckResult(
        passed=not failed,
        metadata={
            "failed_cells": len(failed),
            "details": _md([f"{k}: {v}" for k, v in failed.items()]),
        },
    )


_RUNS, _VERDICTS, _METRICS, _CELLS = (
    dg.AssetKey([SCHEMA, name]) for name in ("runs", "verdicts", "metrics", "cells")
)
assert {_RUNS, _VERDICTS, _METRICS, _CELLS} <= set(WAREHOUSE_KEYS)


@dg.asset_check(
    asset=_RUNS, description="Runs per cell match the stored agent runs; no duplicates."
)
def runs_match_partitions(
    run_store: RunStoreResource, warehouse: WarehouseResource
) -> dg.AssetCheckResult:
    """The warehouse holds exactly the runs of the run store, once each."""
    expected = {key: len(doc.traces) for key, doc in _documents(run_store.store())}
    with connect(warehouse.db_path(), read_only=True) as conn:
        found = queries.runs_per_cell(conn)
        duplicates = queries.duplicate_runs(conn)
    problems = [
        f"{key}: {found.get(key, 0)} rows for {n} traces"
        for key, n in expected.items()
        if found.get(key, 0) != n
    ]
    problems += [f"{c} {t} repeat {r}: {n} rows" for c, t, r, n in duplicates]
    return dg.AssetCheckResult(
        passed=not problems,
        metadata={"cells": len(expected), "runs": sum(found.values()), "problems": _md(problems)},
    )


@dg.asset_check(
    asset=_CELLS, description="Every cell of the active evaluation types is in the warehouse."
)
def cell_coverage(warehouse: WarehouseResource) -> dg.AssetCheckResult:
    """Warn with the cells missing from the warehouse (failed or never run)."""
    with connect(warehouse.db_path(), read_only=True) as conn:
        coverage = queries.cell_coverage(conn, [cell.key for cell in ACTIVE_CELLS])
    return dg.AssetCheckResult(
        passed=not coverage.missing,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "expected": len(coverage.expected),
            "present": len(coverage.present),
            "missing": _md(list(coverage.missing)),
        },
    )


@dg.asset_check(
    asset=_VERDICTS,
    description=f"At least {JUDGE_COVERAGE_THRESHOLD:.0%} of verdicts are scored (warns).",
)
def judge_coverage(warehouse: WarehouseResource) -> dg.AssetCheckResult:
    """Share of verdicts that are scored; unscored ones are NULL with a reason, never zeros.

    The result's description names the criterion coverage per tier (what each tier's accuracy
    rests on), so the warning says how much of the accuracy was decided, not only that it was low.
    """
    with connect(warehouse.db_path(), read_only=True) as conn:
        coverage = queries.judge_coverage(conn)
        criteria = queries.criterion_coverage(conn)
    tiers = {tier: scored / total for tier, (scored, total) in criteria.items() if total}
    named = ", ".join(
        f"{tier} {scored / total:.2f} ({scored} of {total})"
        for tier, (scored, total) in criteria.items()
        if total
    )
    overall = "no verdict" if coverage is None else f"{coverage:.2f}"
    return dg.AssetCheckResult(
        passed=coverage is not None and coverage >= JUDGE_COVERAGE_THRESHOLD,
        severity=dg.AssetCheckSeverity.WARN,
        description=(
            f"criterion coverage {named or 'none (no criterion verdict)'}; "
            f"all verdicts {overall} (threshold {JUDGE_COVERAGE_THRESHOLD:.2f})"
        ),
        metadata={
            "coverage": coverage,
            "threshold": JUDGE_COVERAGE_THRESHOLD,
            **{f"criterion_coverage_{tier}": value for tier, value in tiers.items()},
        },
    )


@dg.asset_check(asset=_METRICS, description="Bounded scores lie in [0, 1].")
def scores_in_range(warehouse: WarehouseResource) -> dg.AssetCheckResult:
    """Fail listing any bounded metric or verdict value outside [0, 1]."""
    with connect(warehouse.db_path(), read_only=True) as conn:
        bad = queries.out_of_range_values(conn)
    return dg.AssetCheckResult(
        passed=not bad,
        metadata={"out_of_range": len(bad), "details": _md([f"{t} {r}: {v}" for t, r, v in bad])},
    )
