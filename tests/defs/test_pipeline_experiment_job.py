"""The real ``experiment`` job of the code location, configured through run config."""

from pathlib import Path

import dagster as dg

from datagouv_eval_pipeline.definitions import build_definitions
from datagouv_eval_pipeline.defs.partitions import CELLS
from datagouv_eval_pipeline.defs.warehouse import WAREHOUSE_KEYS
from datagouv_eval_pipeline.pipeline.experiment.stages import AGENT_RUNS
from tests.defs.pipeline_helpers import (
    RANGE_END,
    RANGE_START,
    STAGE_NAMES,
    Paths,
    cells_instance,
    query,
)

defs = build_definitions()

# Everything but what reads the dbt models (the report, the models themselves).
SELECTION = [dg.AssetKey(name) for name in ("task_specs", "catalog_validation", *STAGE_NAMES)]
SELECTION += WAREHOUSE_KEYS

NO_TOOLS = next(c.key for c in CELLS if c.capabilities == () and "coder" in c.key)
NEXT_CELL = CELLS[CELLS.index(next(c for c in CELLS if c.key == NO_TOOLS)) + 1].key


def test_the_experiment_job_runs_a_range_with_launchpad_settings(tmp_path: Path) -> None:
    paths = Paths(tmp_path)
    # The next cell (oneshot, MCP 0.2.5) is not part of data_contamination: it is skipped.
    assert NEXT_CELL == "offline~baseline-oneshot__mcp@0.2.5__data_gouv_context"
    run_config = {
        "resources": {
            "run_store": {"config": {"root": str(paths.store_root)}},
            "warehouse": {"config": {"path": str(paths.db)}},
            "experiment": {
                "config": {
                    "task_ids": ["task_0003"],
                    "repeats": 2,
                    "evaluation_types": ["data_contamination"],
                }
            },
        }
    }
    result = defs.resolve_job_def("experiment").execute_in_process(
        run_config=run_config,
        instance=cells_instance(),
        tags={RANGE_START: NO_TOOLS, RANGE_END: NEXT_CELL},
        asset_selection=SELECTION,
    )
    assert result.success
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    for name in ("specs_valid", "catalog_reachable", "no_quarantined_tasks", "cells_succeeded"):
        assert checks[name], name
    assert checks["transcripts_present"] and checks["runs_match_partitions"]
    # Only the selected cells are expected; the other 22 are missing, which the check warns.
    assert not checks["cell_coverage"]

    (agent_event, *_) = result.asset_materializations_for_node("agent_runs")
    assert agent_event.metadata["cells_written"] == dg.IntMetadataValue(1)
    assert agent_event.metadata["cells_skipped"] == dg.IntMetadataValue(1)
    assert paths.store.read(AGENT_RUNS, NEXT_CELL) is None
    assert query(paths.db, "SELECT cell_key, task_id, repeat_index FROM eval.runs ORDER BY 3") == [
        (NO_TOOLS, "task_0003", 0),
        (NO_TOOLS, "task_0003", 1),
    ]
    assert query(paths.db, "SELECT evaluation_types FROM eval.cells") == [(["data_contamination"],)]
