"""The ``task_specs`` asset: validated task specs and the benchmark cells they run in."""

import dagster as dg

from datagouv_eval_pipeline.benchmark.cells import expand_cells
from datagouv_eval_pipeline.benchmark.loader import load_benchmark_config
from datagouv_eval_pipeline.tasks import TASK_SPECS_DIR, SpecErrors, TaskStatus, load_task_specs


@dg.asset(group_name="task_specs", kinds={"yaml"})
def task_specs(context: dg.AssetExecutionContext) -> dg.MaterializeResult[None]:
    """Every task spec and benchmark cell, validated all-or-nothing from ``task_specs/``."""
    try:
        specs = load_task_specs([TASK_SPECS_DIR])
        cells = expand_cells(load_benchmark_config())
    except SpecErrors as errors:
        # One failure listing every problem, so the UI shows which file and field to fix.
        raise dg.Failure(
            description=f"{len(errors.errors)} problem(s) in task_specs/",
            metadata={"errors": dg.MetadataValue.md(_markdown_list(errors))},
        ) from errors
    active = [spec for spec in specs if spec.meta.status == TaskStatus.ACTIVE]
    context.log.info(
        "loaded %d task specs (%d active), %d cells", len(specs), len(active), len(cells)
    )
    return dg.MaterializeResult(
        metadata={
            "tasks": len(specs),
            "active_tasks": len(active),
            "cells": len(cells),
            "spec_hashes": dg.MetadataValue.json({s.task_id: s.spec_hash() for s in specs}),
            "cell_keys": dg.MetadataValue.json([cell.key for cell in cells]),
        }
    )


def _markdown_list(errors: SpecErrors) -> str:
    return "\n".join(f"- `{error}`" for error in errors.errors)
