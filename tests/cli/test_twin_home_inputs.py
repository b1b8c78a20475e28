"""A twin home (`$DATAGOUV_EVAL_TWIN_HOME`) that is a file: one clear line from every command."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from datagouv_eval_pipeline.cli import main


@pytest.mark.parametrize(
    "args",
    [
        ["twin", "serve", "--port", "0"],
        ["run-cell", "offline~baseline-coder__code__data_gouv_context", "--tasks", "task_0002"],
        ["experiment", "--evaluation-type", "capabilities_benchmark", "--tasks", "task_0002"],
    ],
    ids=["twin serve", "run-cell of a code cell", "experiment with code cells"],
)
def test_a_twin_home_that_is_a_file(tmp_path: Path, args: list[str]) -> None:
    home = tmp_path / "twin-home"
    home.write_text("not a directory", encoding="utf-8")
    if args[0] == "run-cell":
        args = [*args, "--out", str(tmp_path / "out")]
    env = {
        "DATAGOUV_EVAL_TWIN_HOME": str(home),
        "DAGSTER_HOME": str(tmp_path / "dagster"),
        "DATAGOUV_EVAL_DUCKDB": str(tmp_path / "warehouse.duckdb"),
    }
    result = CliRunner().invoke(main, args, env=env, catch_exceptions=False)
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert result.output.strip().splitlines()[-1] == (
        f"Error: {home} (the twin home: $DATAGOUV_EVAL_TWIN_HOME or ./.twin): is a file; the "
        "twin home must be a directory"
    )
    assert not (tmp_path / "dagster" / "storage").exists()  # no Dagster run was started
