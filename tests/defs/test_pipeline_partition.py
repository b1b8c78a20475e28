"""One partition through the cell stages into DuckDB, and idempotent warehouse loads."""

from pathlib import Path

import dagster as dg

from datagouv_eval_pipeline.defs.partitions import CELLS
from datagouv_eval_pipeline.pipeline.experiment.stages import (
    ACTION_MAPPINGS,
    AGENT_RUNS,
    JUDGE_SCORES,
)
from tests.defs.pipeline_helpers import (
    MCP_CELLS,
    STAGE_NAMES,
    TASK_IDS,
    Paths,
    materialize_cell,
    materialize_warehouse,
    query,
)

CELL_KEYS = [cell.key for cell in CELLS]
CELL = MCP_CELLS[2]  # oneshot at MCP 0.2.26: every task is in range of its toolset
REPEATS = 2
PROVENANCE = (
    "spec_hash",
    "task_version",
    "snapshot_id",
    "mcp_version",
    "system_prompt_sha256",
    "judge_id",
    "code_version",
    "scorer_version",
    "registry_version",
    "started_at",
)


def test_one_partition_and_its_downstream_reach_the_warehouse_once(tmp_path: Path) -> None:
    paths = Paths(tmp_path)
    result = materialize_cell(paths, CELL, repeats=REPEATS)
    assert result.success
    for name in STAGE_NAMES:
        (materialization,) = result.asset_materializations_for_node(name)
        assert materialization.partition == CELL
        assert materialization.metadata["cells_written"] == dg.IntMetadataValue(1)
    agent = paths.store.read(AGENT_RUNS, CELL)
    assert agent is not None
    assert sorted((t["task_id"], t["repeat"]) for t in agent["traces"]) == [
        (task, repeat) for task in TASK_IDS for repeat in range(REPEATS)
    ]
    mappings = paths.store.read(ACTION_MAPPINGS, CELL)
    scores = paths.store.read(JUDGE_SCORES, CELL)
    assert mappings is not None and scores is not None
    runs = [[t["task_id"], t["repeat"]] for t in agent["traces"]]
    assert [[r["task_id"], r["repeat"]] for r in mappings["results"]] == runs
    assert [[r["task_id"], r["repeat"]] for r in scores["results"]] == runs

    assert materialize_warehouse(paths).success
    rows = query(paths.db, "SELECT cell_key, count(*) FROM eval.runs GROUP BY cell_key")
    assert rows == [(CELL, len(TASK_IDS) * REPEATS)]
    nulls = query(
        paths.db,
        "SELECT "
        + ", ".join(f"count(*) FILTER ({c} IS NULL)" for c in PROVENANCE)
        + " FROM eval.runs",
    )
    assert dict(zip(PROVENANCE, nulls[0], strict=True)) == dict.fromkeys(PROVENANCE, 0)
    (snapshot,) = query(paths.db, "SELECT DISTINCT snapshot_id FROM eval.runs")
    assert snapshot[0] == agent["snapshot_id"]
    assert query(paths.db, "SELECT DISTINCT mcp_version FROM eval.runs") == [("0.2.26",)]
    assert query(paths.db, "SELECT count(*) FROM eval.runs WHERE status = 'ok' AND NOT scored") == [
        (0,)
    ]
    assert query(paths.db, "SELECT count(*) FROM eval.cells") == [(1,)]

    # Loading again replaces the cell's rows: same counts, no duplicate (cell, task, repeat).
    before = {
        table: query(paths.db, f"SELECT count(*) FROM eval.{table}")[0][0]
        for table in ("cells", "runs", "tool_calls", "action_instances", "verdicts", "metrics")
    }
    assert before["tool_calls"] > 0 and before["verdicts"] > 0
    assert materialize_warehouse(paths).success
    after = {table: query(paths.db, f"SELECT count(*) FROM eval.{table}")[0][0] for table in before}
    assert after == before
    duplicates = query(
        paths.db,
        "SELECT cell_key, task_id, repeat_index, count(*) FROM eval.runs "
        "GROUP BY ALL HAVING count(*) > 1",
    )
    assert duplicates == []


def test_a_code_cell_runs_in_the_sandbox_and_its_http_calls_map_to_actions(
    tmp_path: Path,
) -> None:
    paths = Paths(tmp_path)
    key = next(k for k in CELL_KEYS if k.startswith("offline~baseline-oneshot__code__"))
    result = materialize_cell(paths, key, task_ids=["task_0003"])
    assert result.success
    agent = paths.store.read(AGENT_RUNS, key)
    mappings = paths.store.read(ACTION_MAPPINGS, key)
    assert agent is not None and mappings is not None
    (trace,) = agent["traces"]
    assert trace["status"] == "ok"
    assert trace["tool_calls"] and {c["name"] for c in trace["tool_calls"]} == {"execute_python"}
    # The Python code's requests to the twin's REST API are read back as semantic actions.
    calls = mappings["results"][0]["mapping"]["calls"]
    assert {c["category"] for c in calls} == {"datagouv_api_http"}
    actions = [i["action"] for c in calls for i in c["instances"]]
    assert actions and actions[0] == "search.datasets"
