"""The cells' partitions in a real instance: the default run fills them all, others on demand.

Dagster's UI counts an asset's partitions ("66 % filled"): only the active cells are
partitions of a fresh instance, so a complete default run reads 100 %, and a cell of an
inactive model becomes a partition when it is asked for, then materializes like any other.
"""

from pathlib import Path

import dagster as dg
import pytest

from datagouv_eval_pipeline.defs.agent_runs import agent_runs
from datagouv_eval_pipeline.defs.partitions import (
    ACTIVE_CELLS,
    ACTIVE_KEYS,
    CELLS,
    cell_partitions,
    covering_range,
    register_cells,
)
from datagouv_eval_pipeline.pipeline.experiment.stages import AGENT_RUNS
from tests.defs.pipeline_helpers import RANGE_END, RANGE_START, Paths, resources

AGENT_RUNS_KEY = dg.AssetKey("agent_runs")
INACTIVE_MODEL = next(
    c for c in CELLS if c.model.provider == "mistral" and c.capabilities == ()
).key
"""A no-tool cell of a model outside the default run (no key set here: its runs are skipped)."""


def _defs(paths: Paths) -> dg.Definitions:
    # The no-tool cells only (cheap); the range's other cells are left alone, as a run of one
    # evaluation type leaves them.
    return dg.Definitions(
        assets=[agent_runs],
        jobs=[dg.define_asset_job("agent_runs_job", selection=[agent_runs])],
        resources=resources(paths, ["task_0003"], evaluation_types=["data_contamination"]),
        executor=dg.in_process_executor,
    )


def _filled(instance: dg.DagsterInstance) -> tuple[int, int]:
    """(materialized partitions, partitions) of agent_runs, as the UI counts them."""
    total = len(cell_partitions.get_partition_keys(dynamic_partitions_store=instance))
    return len(instance.get_materialized_partitions(AGENT_RUNS_KEY)), total


def test_a_default_run_fills_every_partition_and_an_inactive_cell_still_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MISTRAL_API_KEY", raising=False)
    paths = Paths(tmp_path)
    defs = _defs(paths)
    job = defs.resolve_job_def("agent_runs_job")
    with dg.instance_for_test() as instance:
        order = register_cells(instance)
        assert INACTIVE_MODEL not in order and len(order) == len(ACTIVE_CELLS) < len(CELLS)
        first, last = covering_range(ACTIVE_KEYS, order)
        default = job.execute_in_process(
            instance=instance, tags={RANGE_START: first, RANGE_END: last}
        )
        assert default.success
        assert _filled(instance) == (len(ACTIVE_CELLS), len(ACTIVE_CELLS))  # 100 %

        # The inactive model's cell: added on demand, run alone, still 100 % filled.
        order = register_cells(instance, [INACTIVE_MODEL])
        assert order[-1] == INACTIVE_MODEL
        assert covering_range({INACTIVE_MODEL}, order) == (INACTIVE_MODEL, INACTIVE_MODEL)
        alone = job.execute_in_process(instance=instance, partition_key=INACTIVE_MODEL)
        assert alone.success
        assert _filled(instance) == (len(ACTIVE_CELLS) + 1, len(ACTIVE_CELLS) + 1)
        assert INACTIVE_MODEL in instance.get_materialized_partitions(AGENT_RUNS_KEY)
    document = paths.store.read(AGENT_RUNS, INACTIVE_MODEL)
    assert document is not None and document["cell"]["key"] == INACTIVE_MODEL
    # Without its key the model was never asked: its runs say so, the partition is not green.
    assert {t["status"] for t in document["traces"]} == {"skipped"}


def test_a_range_holding_cells_registered_later_runs_only_those_asked_for() -> None:
    with dg.instance_for_test() as instance:
        order = register_cells(instance, [INACTIVE_MODEL])
        # A cell added to the YAML later lands after the inactive one: the default range
        # then holds it, and the CLI names the cells to run (``cli/experiment.py``).
        assert covering_range(ACTIVE_KEYS, order) == (order[0], order[-2])
        assert register_cells(instance, [INACTIVE_MODEL]) == order  # idempotent
        with pytest.raises(ValueError, match="not a cell of the benchmark configuration"):
            register_cells(instance, ["offline~nobody__none__data_gouv_context"])
