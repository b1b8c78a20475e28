"""One cell's real ``agent_runs`` stage in a real Dagster job, as ``experiment`` runs a range.

No ``from __future__ import annotations``: Dagster reads the context annotation as a type.
"""

from collections.abc import Iterator, Sequence
from pathlib import Path

import dagster as dg

from datagouv_eval_pipeline.core.benchmark.cells import Cell
from datagouv_eval_pipeline.defs.agent_runs import run_agent_cells
from datagouv_eval_pipeline.defs.per_cell import StageEvent
from datagouv_eval_pipeline.defs.resources import (
    CatalogResource,
    ExperimentSettings,
    RunStoreResource,
)

RANGE_START = "dagster/asset_partition_range_start"
RANGE_END = "dagster/asset_partition_range_end"


def run_one_cell(
    cell: Cell, tasks: Sequence[str], store: Path, instance: dg.DagsterInstance
) -> dg.ExecuteInProcessResult:
    """Run ``cell`` on ``tasks`` into the run store ``store``; a failed step is returned."""

    @dg.asset(
        name="agent_runs",
        partitions_def=dg.StaticPartitionsDefinition([cell.key]),
        backfill_policy=dg.BackfillPolicy.single_run(),
    )
    def one_cell(
        context: dg.AssetExecutionContext,
        experiment: ExperimentSettings,
        catalog: CatalogResource,
        run_store: RunStoreResource,
    ) -> Iterator[StageEvent]:
        yield from run_agent_cells(
            context,
            experiment,
            catalog,
            run_store,
            cells_by_key={cell.key: cell},
            slots={cell.model.provider: 1},
        )

    defs = dg.Definitions(
        assets=[one_cell],
        jobs=[dg.define_asset_job("cells", selection=[one_cell])],
        resources={
            "experiment": ExperimentSettings(task_ids=list(tasks)),
            "catalog": CatalogResource(),
            "run_store": RunStoreResource(root=str(store)),
        },
        executor=dg.in_process_executor,
    )
    return defs.resolve_job_def("cells").execute_in_process(
        instance=instance, tags={RANGE_START: cell.key, RANGE_END: cell.key}, raise_on_error=False
    )
