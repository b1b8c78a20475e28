"""``datagouv-eval run-cell``: starts the twin, runs a cell, writes one trace per run."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from datagouv_eval_pipeline.cli import main
from datagouv_eval_pipeline.core.traces import load_trace

from .helpers import key_of


def test_run_cell_writes_traces_and_the_tool_list(tmp_path: Path) -> None:
    key = key_of("baseline-oneshot", "mcp@0.2.26")
    result = CliRunner().invoke(
        main,
        [
            "run-cell",
            key,
            "--tasks",
            "task_0003,task_0011",
            "--repeats",
            "2",
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output
    assert f"wrote 4 trace(s) to {tmp_path}" in result.output
    names = sorted(path.name for path in tmp_path.iterdir())
    assert names == [
        "mcp-tools-0.2.26.json",
        "task_0003__r0.json",
        "task_0003__r1.json",
        "task_0011__r0.json",
        "task_0011__r1.json",
    ]
    trace = load_trace(tmp_path / "task_0003__r1.json")
    assert trace.status == "ok" and trace.repeat == 1
    assert trace.provenance.cell_key == key
    tools = json.loads((tmp_path / "mcp-tools-0.2.26.json").read_text())
    assert "search_datasets" in [tool["name"] for tool in tools]


def test_run_cell_rejects_unknown_keys_and_tasks(tmp_path: Path) -> None:
    runner = CliRunner()
    unknown = runner.invoke(main, ["run-cell", "offline~nope__none__x", "--out", str(tmp_path)])
    assert unknown.exit_code == 2 and "no cell has the key" in unknown.output
    key = key_of("baseline-oneshot", "mcp@0.2.26")
    bad_task = runner.invoke(main, ["run-cell", key, "--tasks", "task_9999"])
    assert bad_task.exit_code == 2 and "unknown task id(s) task_9999" in bad_task.output
