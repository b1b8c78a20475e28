"""Every subcommand, given bad inputs, says what is wrong: never a traceback, never a hang.

The sweep (``sweep_cli.py``) runs in a subprocess of its own: each command of the click group
with, for each of its path, URL and name parameters, bad values of that kind (a missing file, a
directory, garbage bytes, a symlink loop, YAML nested 100,000 deep, a truncated JSON, a path
under a file, an invalid URL, a name that names nothing, an empty string). Writable places
(Dagster home, run store, warehouse, dbt and build directories, the home directory) are in a
temporary directory, so nothing of the checkout is written.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, object]]:
    work = tmp_path_factory.mktemp("sweep")
    places = work / "places"
    env = {
        **os.environ,
        "HOME": str(places / "home"),
        "DAGSTER_HOME": str(places / "dagster_home"),
        "DATAGOUV_EVAL_RUN_STORE": str(places / "run_store"),
        "DATAGOUV_EVAL_DUCKDB": str(places / "warehouse" / "eval.duckdb"),
        "DATAGOUV_EVAL_DBT_DIR": str(places / "dbt"),
        "DATAGOUV_EVAL_MCP_BUILDS": str(places / "mcp_builds"),
        "PYTHONUNBUFFERED": "1",
    }
    (places / "home").mkdir(parents=True)
    done = subprocess.run(
        [sys.executable, "-m", "tests.cli.sweep_cli", str(work)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results: list[dict[str, object]] = json.loads(done.stdout.splitlines()[-1])
    return results


def _shown(result: dict[str, object]) -> str:
    output = str(result["output"])
    return f"datagouv-eval {' '.join(map(str, result['args']))!s}\n{output[-1500:]}"  # type: ignore[call-overload]


def test_the_sweep_covers_every_subcommand(sweep: list[dict[str, object]]) -> None:
    tried = {str(result["args"][0]) for result in sweep}  # type: ignore[index]
    assert tried >= {"validate", "run-cell", "experiment", "report", "twin", "judge", "score"}
    assert len(sweep) > 300


def test_no_bad_input_gives_a_traceback(sweep: list[dict[str, object]]) -> None:
    tracebacks = [
        _shown(r) for r in sweep if "Traceback (most recent call last)" in str(r["output"])
    ]
    assert not tracebacks, f"{len(tracebacks)} traceback(s):\n\n" + "\n\n".join(tracebacks)


def test_no_bad_input_hangs(sweep: list[dict[str, object]]) -> None:
    hung = [_shown(r) for r in sweep if r["timed_out"]]
    assert not hung, (
        f"{len(hung)} invocation(s) still running after the timeout:\n\n" + "\n\n".join(hung)
    )
