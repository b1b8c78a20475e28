"""``datagouv-eval experiment`` on an inactive evaluation type, a cell failing (real process).

The command runs ``real_mcp_server`` (inactive by default: its cells are partitions outside
the default run) on one task, the real 0.2.14 build included, with its own Dagster instance,
run store and warehouse. One cell's earlier ``agent_runs`` document is corrupt, so that cell
fails while the others go on: the command names it and exits 1, and its rows are not loaded
as if current.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import duckdb

from tests.cli.command_env import CLI, experiment_env

BUILD = "offline~baseline-oneshot__mcp@0.2.14~build__data_gouv_context"
BROKEN = "offline~baseline-oneshot__mcp@0.2.5__data_gouv_context"


def test_an_inactive_type_runs_from_the_command_line_and_a_failed_cell_fails_the_command(
    tmp_path: Path,
) -> None:
    env = experiment_env(tmp_path)
    corrupt = tmp_path / "run_store" / "agent_runs" / f"{BROKEN}.json"
    corrupt.parent.mkdir(parents=True)
    corrupt.write_text("{not json", encoding="utf-8")
    done = subprocess.run(
        [CLI, "experiment", "--evaluation-type", "real_mcp_server", "--tasks", "task_0002"],
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert f"FAILED cell {BROKEN}: agent_runs: RunStoreError:" in output
    assert "9 cells × 1 tasks" in output
    with duckdb.connect(str(tmp_path / "warehouse.duckdb"), read_only=True) as conn:
        cells = dict(conn.execute("SELECT cell_key, mcp_source FROM eval.cells").fetchall())
        runs = conn.execute(f"SELECT status FROM eval.runs WHERE cell_key = '{BUILD}'").fetchall()
    # The eight other cells, the real build among them, ran through to the warehouse.
    assert len(cells) == 8 and BROKEN not in cells
    assert cells[BUILD] == "build" and runs == [("ok",)]
    assert corrupt.read_text(encoding="utf-8") == "{not json"  # left as it was, for a person
