"""Malformed input and unusable resources give one clear line, never a traceback.

Each case runs the real command (click's runner, or a subprocess where a real second process is
the point: a port held by another program, a DuckDB lock held by an analyst's read-only shell).
"""

from __future__ import annotations

import functools
import json
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner, Result

from datagouv_eval_pipeline.cli import experiment as experiment_cli
from datagouv_eval_pipeline.cli import main
from datagouv_eval_pipeline.core.tasks import TASK_SPECS_DIR
from datagouv_eval_pipeline.pipeline.experiment.plan import plan_experiment

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SMALL = ["experiment", "--evaluation-type", "mcp_versions", "--tasks", "task_0002"]


def _invoke(args: list[str], env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, args, env=env, catch_exceptions=False)


def _one_clear_error(result: Result, *needles: str) -> str:
    assert result.exit_code != 0, result.output
    text = result.output
    assert "Traceback" not in text, text
    error_lines = [line for line in text.splitlines() if line.startswith("Error")]
    assert len(error_lines) == 1, text
    for needle in needles:
        assert needle in error_lines[0], text
    return error_lines[0]


def test_a_busy_port_is_named(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = _invoke(["twin", "serve", "--port", str(port)])
    _one_clear_error(result, f"port {port}", "already in use", "--port")


def test_an_out_of_range_port_is_refused_by_the_option() -> None:
    result = _invoke(["twin", "serve", "--port", "70000"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "70000 is not in the range 0<=x<=65535" in result.output


def test_dagster_home_pointing_at_a_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.write_text("not a directory", encoding="utf-8")
    result = _invoke(SMALL, env={"DAGSTER_HOME": str(home)})
    _one_clear_error(result, str(home), "must be a directory")
    result = _invoke(["dagster", "pools", "--home", str(home)])
    assert "Traceback" not in result.output and result.exit_code != 0


def test_invalid_specs_under_experiment_name_the_file_and_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    specs = tmp_path / "task_specs"
    shutil.copytree(TASK_SPECS_DIR, specs, ignore=shutil.ignore_patterns("benchmark"))
    bad = specs / "task_0002.yml"
    bad.write_text(bad.read_text(encoding="utf-8").replace("task_id:", "task_idd:"), "utf-8")
    monkeypatch.setattr(
        experiment_cli, "plan_experiment", functools.partial(plan_experiment, tasks_dir=specs)
    )
    result = _invoke(SMALL)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "invalid specs, nothing was run" in result.output
    assert "task_0002.yml" in result.output and "task_idd" in result.output


def test_a_yaml_alias_bomb_is_refused_at_once(tmp_path: Path) -> None:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for previous, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]")
    bomb = tmp_path / "task_9999.yml"
    bomb.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert bomb.stat().st_size < 400
    started = time.perf_counter()
    result = _invoke(["validate", str(tmp_path)])
    assert time.perf_counter() - started < 20
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert f"{bomb}: invalid YAML: its aliases expand it to more than 100000" in result.output


def test_a_locked_warehouse_is_found_before_any_agent_runs(tmp_path: Path) -> None:
    db = tmp_path / "warehouse.duckdb"
    duckdb.connect(str(db)).close()
    # An analyst's `duckdb -readonly` shell: another process holding the file open.
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import duckdb, sys, time; c = duckdb.connect(sys.argv[1], read_only=True); "
            "print('open', flush=True); time.sleep(60)",
            str(db),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        result = _invoke(
            SMALL,
            env={"DATAGOUV_EVAL_DUCKDB": str(db), "DAGSTER_HOME": str(tmp_path / "home")},
        )
    finally:
        holder.kill()
        holder.wait()
    _one_clear_error(result, str(db), f"locked by process {holder.pid}")
    assert not (tmp_path / "home" / "storage").exists()  # no Dagster run was started


def test_an_unwritable_warehouse_directory_is_found_first(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    db = blocker / "warehouse.duckdb"  # its directory would be a file
    result = _invoke(
        SMALL, env={"DATAGOUV_EVAL_DUCKDB": str(db), "DAGSTER_HOME": str(tmp_path / "home")}
    )
    _one_clear_error(result, str(blocker), "cannot create the warehouse directory")


def test_sql_cannot_write_files(tmp_path: Path) -> None:
    db = tmp_path / "warehouse.duckdb"
    with duckdb.connect(str(db)) as conn:
        conn.execute("CREATE TABLE t AS SELECT 1 AS x")
    target = tmp_path / "leak.csv"
    result = _invoke(["sql", "--db", str(db), f"COPY t TO '{target}'"])
    _one_clear_error(result, "file system operations are disabled")
    assert not target.exists()
    result = _invoke(["sql", "--db", str(db), "SET enable_external_access = true"])
    _one_clear_error(result, "locked")
    assert _invoke(["sql", "--db", str(db), "SELECT x FROM t"]).exit_code == 0


@pytest.mark.parametrize("status", ["error", "skipped"])
def test_score_gives_null_for_runs_the_pipeline_does_not_score(tmp_path: Path, status: str) -> None:
    trace = json.loads((FIXTURES / "traces" / "task_0002_mcp.json").read_text(encoding="utf-8"))
    trace |= {"status": status, "status_reason": "model request failed: HTTP 502"}
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(trace), encoding="utf-8")
    result = _invoke(
        ["score", "--task", str(TASK_SPECS_DIR / "task_0002.yml"), "--trace", str(path)]
    )
    assert result.exit_code == 0, result.output
    scored = json.loads(result.output)
    assert scored["scored"] is False
    assert scored["minimal"] is None and scored["optimal"] is None
    assert scored["reason"] == f"not scored: the run ended {status}: model request failed: HTTP 502"
