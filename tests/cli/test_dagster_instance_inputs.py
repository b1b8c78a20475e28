"""A Dagster instance that cannot be opened: one clear line from experiment and `dagster`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from datagouv_eval_pipeline.base import project_files
from datagouv_eval_pipeline.cli import main

SMALL = ["experiment", "--evaluation-type", "mcp_versions", "--tasks", "task_0002"]


def _home(tmp_path: Path, damage: str) -> Path:
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(project_files.project_file("dagster_home") / "dagster.yaml", home)
    if damage == "not YAML":
        (home / "dagster.yaml").write_text("run_queue: [unclosed\n", encoding="utf-8")
    elif damage == "unknown key":
        (home / "dagster.yaml").write_text("bogus_key: 1\n", encoding="utf-8")
    else:
        (home / "history").mkdir()
        (home / "history" / "runs.db").write_text("garbage\n", encoding="utf-8")
    return home


def _one_error(result: Result) -> str:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, result.output
    return errors[0]


EXPECTED = {
    "not YAML": "{home}/dagster.yaml:2: not valid YAML (expected ',' or ']', but got "
    "'<stream end>')",
    "unknown key": "{home}/dagster.yaml: not a valid Dagster instance configuration: Error 1: "
    'Received unexpected config entry "bogus_key" at the root',
    "garbage SQLite": "{home}: the instance's SQLite storage cannot be read (file is not a "
    "database); move the damaged storage (history/, storage/, schedules/) away, or point "
    "DAGSTER_HOME at another directory",
}


@pytest.mark.parametrize("damage", list(EXPECTED))
def test_experiment_on_a_damaged_instance(tmp_path: Path, damage: str) -> None:
    home = _home(tmp_path, damage)
    env = {"DAGSTER_HOME": str(home), "DATAGOUV_EVAL_DUCKDB": str(tmp_path / "w.duckdb")}
    result = CliRunner().invoke(main, SMALL, env=env, catch_exceptions=False)
    assert _one_error(result) == "Error: " + EXPECTED[damage].format(home=home)
    assert "r0:" not in result.output  # no agent ran


@pytest.mark.parametrize("command", [["cleanup"], ["pools"]])
def test_dagster_commands_on_a_damaged_instance(tmp_path: Path, command: list[str]) -> None:
    home = _home(tmp_path, "garbage SQLite")
    result = CliRunner().invoke(
        main, ["dagster", *command, "--home", str(home)], catch_exceptions=False
    )
    assert _one_error(result) == "Error: " + EXPECTED["garbage SQLite"].format(home=home)
