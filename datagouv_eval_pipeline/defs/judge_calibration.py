"""The ``judge_calibration`` asset: the judge's agreement with the labels, per verdict kind.

It asks the judge of the run (``JudgeResource``: ``judge.yml`` or the launchpad's override) every
question of the calibration set (``task_specs/calibration/``) and writes Cohen's kappa per verdict
kind, with n and a bootstrap interval (none on fewer than 30 items), to
``eval.judge_calibration`` (the work is
:func:`~datagouv_eval_pipeline.core.judges.calibration.calibrate`): on every label (``label_set``
``all``) and, when the set has blind labels, on those alone (``blind``, from the same verdicts).
The same as ``datagouv-eval judge calibrate [--labels blind]``. The report shows the latest
figures of each judge and label set.

It runs after the warehouse load, the one writer of the DuckDB file in a run: a run stopped
before the warehouse leaves no file half-written (nor one created by this asset).
"""

import asyncio
from typing import Any

import dagster as dg

from datagouv_eval_pipeline.core.judges import (
    CALIBRATION_DIR,
    KAPPA_REQUIRED,
    CalibrationError,
    JudgeModelError,
    JudgeSpecError,
    calibrate,
    calibration_files,
    load_calibration,
    restricted,
    select_labels,
    set_sha,
)
from datagouv_eval_pipeline.core.tasks import TASK_SPECS_DIR, load_task_specs
from datagouv_eval_pipeline.defs.interrupts import raise_stopped, stop_if_requested
from datagouv_eval_pipeline.defs.resources import (
    CatalogResource,
    JudgeResource,
    RunStoreResource,
    WarehouseResource,
)
from datagouv_eval_pipeline.defs.task_specs import task_specs
from datagouv_eval_pipeline.defs.warehouse import _column_schema
from datagouv_eval_pipeline.pipeline.agents import RunCancelled, current_token, until_cancelled
from datagouv_eval_pipeline.pipeline.experiment import stage_code_version
from datagouv_eval_pipeline.pipeline.warehouse import (
    EXPERIMENTS,
    JUDGE_CALIBRATION,
    SCHEMA,
    calibration_rows,
    connect,
    write_calibration,
)

EXPERIMENTS_KEY = dg.AssetKey([SCHEMA, EXPERIMENTS.name])
"""A key of the ``warehouse`` multi-asset: this asset runs after the load."""


def _fmt(value: Any) -> str:
    return "—" if value is None else f"{value:.3f}"


@dg.asset(
    key_prefix=[SCHEMA],
    deps=[task_specs, EXPERIMENTS_KEY],
    group_name="judges",
    kinds={"python", "duckdb"},
    pool="duckdb_writer",
    code_version=stage_code_version("judge_calibration")[:12],
    description=f"{JUDGE_CALIBRATION.qualified}: {JUDGE_CALIBRATION.grain}.",
    metadata={"dagster/column_schema": _column_schema(JUDGE_CALIBRATION)},
)
def judge_calibration(
    context: dg.AssetExecutionContext,
    judge: JudgeResource,
    warehouse: WarehouseResource,
    catalog: CatalogResource,
    run_store: RunStoreResource,
) -> dg.MaterializeResult[None]:
    """Cohen's kappa of the run's judge against the labels, per verdict kind."""
    stop_if_requested(context)
    tasks = {spec.task_id: spec for spec in load_task_specs([TASK_SPECS_DIR])}
    try:
        items = load_calibration([CALIBRATION_DIR], tasks)
    except CalibrationError as error:
        raise dg.Failure(description=f"invalid calibration set:\n{error}") from None
    try:
        the_judge = judge.judge(cache_dir=run_store.store().root / "cache" / "judges")
    except (JudgeSpecError, JudgeModelError) as error:
        raise dg.Failure(description=f"cannot build the judge: {error}") from None
    token = current_token()
    try:
        report = asyncio.run(
            until_cancelled(calibrate(the_judge, items, catalog=catalog.lookup()), token)
        )
    except RunCancelled as stop:
        raise_stopped(context, f"judge calibration stopped ({stop.reason})")
    files = [path.name for path in calibration_files([CALIBRATION_DIR])]
    rows = calibration_rows(report, set_sha=set_sha(items), files=files)
    blind = restricted(report, "blind")
    if blind is not None:
        blind_items = select_labels(items, "blind")
        blind_files = sorted({r.path.name for r in blind_items})
        rows += calibration_rows(blind, set_sha=set_sha(blind_items), files=blind_files)
    db = warehouse.db_path()
    with connect(db) as conn:
        write_calibration(conn, rows)
    table = [
        "| labels | kind | items | n | coverage | kappa | 95 % CI | >= 0.8 | note |",
        "|---|---|---|---|---|---|---|---|---|",
        *(
            f"| {r['label_set']} ({r['label_methods']}) | {r['verdict_kind']} | {r['items']} | "
            f"{r['scored']} | {_fmt(r['coverage'])} | "
            f"{_fmt(r['kappa'])} | [{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}] | "
            f"{'yes' if r['meets_requirement'] else 'no'} | {r['reason'] or ''} |"
            for r in rows
        ),
    ]
    context.log.info(
        "judge_calibration: %s on %d items: %s",
        report.judge_id,
        report.total,
        ", ".join(
            f"{r['label_set']} {r['verdict_kind']} kappa {_fmt(r['kappa'])} (n={r['scored']})"
            for r in rows
        ),
    )
    return dg.MaterializeResult(
        metadata={
            "judge_id": report.judge_id,
            "items": report.total,
            "kappa_required": KAPPA_REQUIRED,
            "calibration_files": dg.MetadataValue.json(files),
            "agreement": dg.MetadataValue.md("\n".join(table)),
            "dagster/row_count": len(rows),
            "path": str(db),
        }
    )
