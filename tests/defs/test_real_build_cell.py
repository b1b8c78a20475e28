"""The real 0.2.14 server as a cell of the pipeline, materialized by Dagster, offline.

``real_mcp_server`` is inactive, yet its cells are partitions like every other: the build cell
(``mcp@0.2.14~build``, the package ``iflow-mcp-datagouv-datagouv-mcp==0.2.14`` installed in its
own environment by ``mcp_builds``, cached after the first install) is materialized through the
cell stages and the warehouse on a real Dagster instance, against the twin behind its hostname
front, with the offline baseline; its rows are then read back from DuckDB.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from datagouv_eval_pipeline.core.metrics.provenance import working_tree_dirty
from datagouv_eval_pipeline.defs import partitions
from datagouv_eval_pipeline.defs.warehouse import warehouse
from datagouv_eval_pipeline.pipeline.experiment.stages import AGENT_RUNS
from tests.defs.pipeline_helpers import CELL_STAGES, Paths, query, resources
from tests.mcp_builds.test_real_build import REAL_0_2_14_TOOLS, TASK_IDS, THOROUGH_BUILD

BUILD_SPEC = "package:iflow-mcp-datagouv-datagouv-mcp==0.2.14"


def test_the_inactive_types_cells_become_partitions_when_asked_for() -> None:
    assert THOROUGH_BUILD in partitions.CELLS_BY_KEY
    assert THOROUGH_BUILD not in partitions.ACTIVE_KEYS
    with dg.instance_for_test() as instance:
        keys = partitions.register_cells(instance)
        # A fresh instance holds the active cells only, in the YAML's order.
        assert keys == [c.key for c in partitions.ACTIVE_CELLS]
        first, last = partitions.covering_range(partitions.ACTIVE_KEYS, keys)
        assert (first, last) == (keys[0], keys[-1])
        # Asking for the inactive cell appends it; the active range is unchanged.
        keys = partitions.register_cells(instance, [THOROUGH_BUILD])
        assert keys == [*(c.key for c in partitions.ACTIVE_CELLS), THOROUGH_BUILD]
        assert partitions.covering_range(partitions.ACTIVE_KEYS, keys) == (first, last)
    cell = partitions.CELLS_BY_KEY[THOROUGH_BUILD]
    assert cell.evaluation_types == ("real_mcp_server",)


def test_the_real_build_cell_is_materialized_by_dagster_and_lands_in_duckdb(
    tmp_path: Path,
) -> None:
    paths = Paths(tmp_path)
    with dg.instance_for_test() as instance:
        partitions.register_cells(instance, [THOROUGH_BUILD])
        cells = dg.materialize(
            CELL_STAGES,
            partition_key=THOROUGH_BUILD,
            resources=resources(paths, task_ids=TASK_IDS),
            instance=instance,
        )
        assert cells.success
        loaded = dg.materialize([warehouse], resources=resources(paths), instance=instance)
        assert loaded.success
        materialized = instance.get_materialized_partitions(dg.AssetKey("judge_scores"))
        assert materialized == {THOROUGH_BUILD}
        # The partition reads as what it is in the UI: its coordinates as metadata.
        (event,) = cells.asset_materializations_for_node("agent_runs")
        label = {k: getattr(v, "value", v) for k, v in event.metadata.items()}
        assert {k: label[k] for k in ("model", "capabilities", "mcp", "mcp_build", "status")} == {
            "model": "offline/baseline-thorough",
            "capabilities": "mcp",
            "mcp": "0.2.14 (build)",
            "mcp_build": BUILD_SPEC,
            "status": "written",
        }
        (check,) = cells.get_asset_check_evaluations()[:1]
        assert (check.check_name, check.partition, check.passed) == (
            "cell_ok",
            THOROUGH_BUILD,
            True,
        )

    # The cell's tool list is the build's own tools/list (the official 0.2.14 one).
    document = paths.store.read(AGENT_RUNS, THOROUGH_BUILD)
    assert document is not None
    assert [tool["name"] for tool in document["tool_lists"]["0.2.14"]] == REAL_0_2_14_TOOLS
    assert document["mcp_build"]["spec"] == BUILD_SPEC

    (cell_row,) = query(
        paths.db,
        "SELECT mcp_version, mcp_source, mcp_build, evaluation_types, stale_reason "
        f"FROM eval.cells WHERE cell_key = '{THOROUGH_BUILD}'",
    )
    assert cell_row == ("0.2.14", "build", BUILD_SPEC, ["real_mcp_server"], None)
    # Its answers: both tasks ran to an answer from the twin, production URLs only.
    runs = query(
        paths.db,
        "SELECT task_id, status, answer, mcp_version, scored FROM eval.runs "
        f"WHERE cell_key = '{THOROUGH_BUILD}' ORDER BY task_id",
    )
    # Provenance: the commit and whether the checkout had uncommitted changes.
    dirty = working_tree_dirty()
    assert dirty is not None  # the tests run from a git checkout
    assert query(
        paths.db,
        f"SELECT DISTINCT code_dirty FROM eval.runs WHERE cell_key = '{THOROUGH_BUILD}'",
    ) == [(dirty,)]
    assert [(r[0], r[1], r[3], r[4]) for r in runs] == [
        (task_id, "ok", "0.2.14", True) for task_id in TASK_IDS
    ]
    assert all(r[2] and "127.0.0.1" not in r[2] for r in runs)
    # Every call is to a tool of the build's list, without error.
    calls = query(
        paths.db,
        "SELECT DISTINCT tool_name FROM eval.tool_calls "
        f"WHERE cell_key = '{THOROUGH_BUILD}' ORDER BY 1",
    )
    assert calls and {name for (name,) in calls} <= set(REAL_0_2_14_TOOLS)
    # The calls map to actions through the registry at 0.2.14: the search, then the chain.
    actions = query(
        paths.db,
        "SELECT DISTINCT action FROM eval.action_instances "
        f"WHERE cell_key = '{THOROUGH_BUILD}' AND task_id = 'task_0003' ORDER BY 1",
    )
    assert {"search.datasets", "get.dataset.info", "get.dataset.resources"} <= {
        a for (a,) in actions
    }
    unmapped = query(
        paths.db,
        f"SELECT count(*) FROM eval.runs WHERE cell_key = '{THOROUGH_BUILD}' "
        "AND (mapped_fraction IS NULL OR mapped_fraction < 1)",
    )
    assert unmapped == [(0,)]
