"""What code cells write outside the run store, unusable: one clear line before anything starts.

The twin home (`$DATAGOUV_EVAL_TWIN_HOME`, the front's CA) and the cache of the sandbox's library
copy (`$XDG_CACHE_HOME`), each pointing at a file.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from datagouv_eval_pipeline.cli import main

COMMANDS = {
    "twin serve": ["twin", "serve", "--port", "0"],
    "run-cell of a code cell": [
        "run-cell",
        "offline~baseline-coder__code__data_gouv_context",
        "--tasks",
        "task_0002",
    ],
    "experiment with code cells": [
        "experiment",
        "--evaluation-type",
        "capabilities_benchmark",
        "--tasks",
        "task_0002",
    ],
}


def _invoke(tmp_path: Path, args: list[str], env: dict[str, str]) -> list[str]:
    if args[0] == "run-cell":
        args = [*args, "--out", str(tmp_path / "out")]
    env = env | {
        "DAGSTER_HOME": str(tmp_path / "dagster"),
        "DATAGOUV_EVAL_DUCKDB": str(tmp_path / "warehouse.duckdb"),
        "DATAGOUV_EVAL_SANDBOX_LIBRARY": "",
    }
    result = CliRunner().invoke(main, args, env=env, catch_exceptions=False)
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "dagster" / "storage").exists()  # no Dagster run was started
    return result.output.strip().splitlines()


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_twin_home_that_is_a_file(tmp_path: Path, command: str) -> None:
    home = tmp_path / "twin-home"
    home.write_text("not a directory", encoding="utf-8")
    lines = _invoke(tmp_path, COMMANDS[command], {"DATAGOUV_EVAL_TWIN_HOME": str(home)})
    assert lines[-1] == (
        f"Error: {home} (the twin home: $DATAGOUV_EVAL_TWIN_HOME or ./.twin): is a file, not a "
        "directory"
    )


@pytest.mark.parametrize("command", ["run-cell of a code cell", "experiment with code cells"])
def test_a_cache_home_that_is_a_file(tmp_path: Path, command: str) -> None:
    cache = tmp_path / "cache"
    cache.write_text("not a directory", encoding="utf-8")
    env = {"XDG_CACHE_HOME": str(cache), "DATAGOUV_EVAL_TWIN_HOME": str(tmp_path / "twin")}
    lines = _invoke(tmp_path, COMMANDS[command], env)
    assert lines[-1] == (
        f"Error: {cache}/datagouv-eval/sandbox-library (the code sandbox's copy of the "
        "libraries): cannot be created (Not a directory); set $DATAGOUV_EVAL_SANDBOX_LIBRARY "
        "or $XDG_CACHE_HOME to a writable directory"
    )
