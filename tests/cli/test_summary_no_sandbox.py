"""A code cell on a machine without bubblewrap scored nothing: the summary says why, and the
exit code is non-zero when the cell was asked for (issue 28).

The agent stage runs on a real Dagster instance with ``PATH`` left without ``bwrap``, and the
summary is read from its result, as ``datagouv-eval experiment`` does. ``run-cell`` is run
through its command.
"""

import sys
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
from click.testing import CliRunner

from datagouv_eval_pipeline.cli import main
from datagouv_eval_pipeline.cli.experiment_summary import (
    Summary,
    exit_code,
    summarise,
    summary_lines,
)
from datagouv_eval_pipeline.defs.partitions import CELLS_BY_KEY
from tests.cli.one_cell_run import run_one_cell

CODE_CELL = CELLS_BY_KEY["offline~baseline-coder__code__data_gouv_context"]
NO_BWRAP = (
    "local sandbox: 'bwrap' is not installed (Debian/Ubuntu: apt-get install bubblewrap). "
    "Install bubblewrap, or pass mode='rlimit' to accept the weaker isolation described in "
    "docs/sandbox.md."
)


@pytest.fixture
def no_bwrap(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``PATH`` holds the interpreter's directory only: no ``bwrap`` on it."""
    path = str(Path(sys.executable).parent)
    monkeypatch.setenv("PATH", path)
    yield path


def test_a_code_cell_skipped_for_want_of_bubblewrap_is_unscored(
    tmp_path: Path, no_bwrap: str
) -> None:
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        result = run_one_cell(CODE_CELL, ["task_0002", "task_0003"], tmp_path / "store", instance)
    assert result.success
    summary = summarise(result)
    assert summary.failed_cells == {}
    assert summary.idle_cells == {NO_BWRAP: [CODE_CELL.key]}
    assert summary.unscored_for_sandbox == [CODE_CELL.key]
    # The cause and how to install it, on the line that names the cell.
    assert (
        f"NO RESULT in 1 cell(s), every run not done: {NO_BWRAP} [{CODE_CELL.key}]"
        in summary_lines(summary)
    )
    # Asked for by name or type: the run failed to score it.
    assert exit_code(result.success, summary, interrupted=False) == 1
    # The default experiment (no cell chosen) skips it, says so, and exits 0.
    assert exit_code(result.success, summary, interrupted=False, sandbox_optional=True) == 0
    assert exit_code(result.success, summary, interrupted=True, sandbox_optional=True) == 130


def test_a_cell_without_code_tools_does_not_need_the_sandbox(tmp_path: Path, no_bwrap: str) -> None:
    cell = CELLS_BY_KEY["offline~baseline-coder__none__data_gouv_context"]
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        result = run_one_cell(cell, ["task_0002", "task_0003"], tmp_path / "store", instance)
    summary = summarise(result)
    assert summary.unscored_for_sandbox == []
    assert NO_BWRAP not in summary.idle_cells
    assert exit_code(result.success, summary, interrupted=False) == 0


def test_only_a_failure_or_an_unscored_cell_changes_the_exit_code() -> None:
    assert exit_code(True, Summary(), interrupted=False) == 0
    assert exit_code(True, Summary(unscored_for_sandbox=["c"]), interrupted=False) == 1
    assert exit_code(True, Summary(unscored_for_key=["c"]), interrupted=False) == 1
    unscored = Summary(unscored_for_key=["c"])
    # An unset key is never optional: only the sandbox's absence is, in the default run.
    assert exit_code(True, unscored, interrupted=False, sandbox_optional=True) == 1


def test_run_cell_exits_non_zero_naming_bubblewrap(tmp_path: Path, no_bwrap: str) -> None:
    result = CliRunner().invoke(
        main,
        ["run-cell", CODE_CELL.key, "--tasks", "task_0002", "--out", str(tmp_path / "out")],
        catch_exceptions=False,
    )
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert result.output.strip().splitlines()[-1] == (
        f"Error: no run of {CODE_CELL.key} finished (1 ended skipped); 1 because: {NO_BWRAP}"
    )
