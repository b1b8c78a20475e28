"""The ``task_specs`` asset: validated task specs and the benchmark cells they run in.

Invalid specs do not crash the asset: it records every problem, and the blocking check
``specs_valid`` fails naming each file and field, so nothing downstream runs on them.
"""

import dagster as dg

from datagouv_eval_pipeline.core.benchmark import expand_cells, load_benchmark_config
from datagouv_eval_pipeline.core.tasks import (
    TASK_SPECS_DIR,
    SpecErrors,
    TaskStatus,
    load_task_specs,
)
from datagouv_eval_pipeline.defs.interrupts import stop_if_requested
from datagouv_eval_pipeline.defs.resources import RunStoreResource
from datagouv_eval_pipeline.pipeline.experiment import (
    RunStoreError,
    TaskSpecsDocument,
    content_digest,
)

STAGE = "task_specs"
DOCUMENT_KEY = "all"


@dg.asset(group_name="task_specs", kinds={"yaml"})
def task_specs(
    context: dg.AssetExecutionContext, run_store: RunStoreResource
) -> dg.MaterializeResult[None]:
    """Every task spec and benchmark cell, validated all-or-nothing from ``task_specs/``."""
    stop_if_requested(context)
    store = run_store.store()
    try:
        specs = load_task_specs([TASK_SPECS_DIR])
        cells = expand_cells(load_benchmark_config())
    except SpecErrors as errors:
        problems = [str(error) for error in errors.errors]
        store.write(STAGE, DOCUMENT_KEY, TaskSpecsDocument(errors=problems))
        context.log.error("%d problem(s) in task_specs/", len(problems))
        return dg.MaterializeResult(
            metadata={
                "errors": len(problems),
                "problems": dg.MetadataValue.md("\n".join(f"- `{p}`" for p in problems)),
            },
            data_version=dg.DataVersion("invalid:" + content_digest(problems)),
        )
    active = [spec for spec in specs if spec.meta.status == TaskStatus.ACTIVE]
    hashes = {s.task_id: s.spec_hash() for s in specs}
    cell_keys = [cell.key for cell in cells]
    store.write(
        STAGE, DOCUMENT_KEY, TaskSpecsDocument(errors=[], spec_hashes=hashes, cells=cell_keys)
    )
    context.log.info(
        "loaded %d task specs (%d active), %d cells", len(specs), len(active), len(cells)
    )
    return dg.MaterializeResult(
        metadata={
            "errors": 0,
            "tasks": len(specs),
            "active_tasks": len(active),
            "cells": len(cells),
            "spec_hashes": dg.MetadataValue.json(hashes),
            "cell_keys": dg.MetadataValue.json(cell_keys),
        },
        data_version=dg.DataVersion(content_digest([hashes, cell_keys])),
    )


@dg.asset_check(asset=task_specs, blocking=True, description="Every task spec is valid.")
def specs_valid(run_store: RunStoreResource) -> dg.AssetCheckResult:
    """Fail naming every invalid file and field, so nothing downstream runs on them."""
    try:
        document = run_store.store().read_document(STAGE, DOCUMENT_KEY, TaskSpecsDocument)
    except RunStoreError as error:
        document = TaskSpecsDocument(errors=[str(error)])
    problems = document.errors if document is not None else ["task_specs not run"]
    return dg.AssetCheckResult(
        passed=not problems,
        metadata={
            "problems": len(problems),
            "details": dg.MetadataValue.md("\n".join(f"- `{p}`" for p in problems) or "none"),
        },
    )
