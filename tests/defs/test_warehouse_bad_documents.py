"""A corrupt or malformed run store document fails only its cell in the warehouse load."""

from pathlib import Path

import dagster as dg

from datagouv_eval_pipeline.pipeline.experiment.stages import (
    ACTION_MAPPINGS,
    AGENT_RUNS,
    JUDGE_SCORES,
)
from tests.defs.pipeline_helpers import (
    MCP_CELLS,
    Paths,
    cells_job_defs,
    materialize_warehouse,
    query,
    run_range,
)

FIRST, SECOND, THIRD = MCP_CELLS[3:6]  # thorough at MCP 0.2.5, 0.2.19 and 0.2.26


def test_a_corrupt_and_a_malformed_document_fail_only_their_cells(tmp_path: Path) -> None:
    paths = Paths(tmp_path)
    instance = dg.DagsterInstance.ephemeral()
    assert run_range(cells_job_defs(paths, task_ids=["task_0003"]), FIRST, THIRD, instance).success
    store = paths.store
    corrupt = store.path(AGENT_RUNS, FIRST)
    corrupt.write_text('{"cell": {', encoding="utf-8")
    malformed = store.read(AGENT_RUNS, SECOND)
    assert malformed is not None
    del malformed["traces"][0]["task_id"]
    store.write(AGENT_RUNS, SECOND, malformed)
    # The third cell's judge document is from other agent runs: its scores load as NULL.
    judged = store.read(JUDGE_SCORES, THIRD)
    assert judged is not None
    store.write(JUDGE_SCORES, THIRD, {**judged, "agent_runs_digest": "0" * 16})

    result = materialize_warehouse(paths)
    assert result.success
    (cells_event,) = [
        e
        for e in result.get_asset_materialization_events()
        if e.asset_key is not None and e.asset_key.path[-1] == "cells"
    ]
    metadata = cells_event.step_materialization_data.materialization.metadata
    unreadable = metadata["cells_unreadable"].value
    assert isinstance(unreadable, dict) and set(unreadable) == {FIRST, SECOND}
    assert unreadable[FIRST].startswith(f"{corrupt}: not valid JSON")
    assert unreadable[SECOND] == (
        f"{store.path(AGENT_RUNS, SECOND)}: traces[0].task_id: Field required"
    )
    assert metadata["cells_with_stale_stages"].value == {
        THIRD: {"judge_scores": "computed from another agent_runs document"}
    }
    # The run went on: the earlier rows of the two bad cells were kept, the third cell loaded
    # with its runs but no verdicts from the stale judgement.
    rows = query(paths.db, "SELECT cell_key, count(*) FROM eval.runs GROUP BY 1 ORDER BY 1")
    assert [key for key, _ in rows] == sorted([FIRST, SECOND, THIRD])
    verdicts = query(paths.db, f"SELECT count(*) FROM eval.verdicts WHERE cell_key = '{THIRD}'")
    assert verdicts == [(0,)]


def test_non_utf8_bytes_in_an_unselected_cells_document_fail_only_that_cell(
    tmp_path: Path,
) -> None:
    # The same cells run twice: the second run selects only the first, the second cell's
    # action_mappings document then gets bytes that are not UTF-8 (a disk or an editor did it).
    paths = Paths(tmp_path)
    instance = dg.DagsterInstance.ephemeral()
    defs = cells_job_defs(paths, task_ids=["task_0003"])
    assert run_range(defs, FIRST, SECOND, instance).success
    damaged = paths.store.path(ACTION_MAPPINGS, SECOND)
    damaged.write_bytes(damaged.read_bytes()[:40] + b"\xff\xfe" + damaged.read_bytes()[40:])
    assert run_range(defs, FIRST, FIRST, instance).success

    result = materialize_warehouse(paths)
    assert result.success
    (cells_event,) = [
        e
        for e in result.get_asset_materialization_events()
        if e.asset_key is not None and e.asset_key.path[-1] == "cells"
    ]
    unreadable = cells_event.step_materialization_data.materialization.metadata[
        "cells_unreadable"
    ].value
    assert unreadable == {SECOND: f"{damaged}: not UTF-8 text (byte 40: b'\\xff')"}
    # The damaged cell keeps the rows of its earlier load; the other cell loaded anew.
    rows = query(paths.db, "SELECT cell_key FROM eval.runs GROUP BY 1 ORDER BY 1")
    assert rows == sorted([(FIRST,), (SECOND,)])
