"""What the Dagster UI reads besides the assets: table previews, run origins, report links."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from datagouv_eval_pipeline.defs.result_tables import Preview, preview_metadata, row_count
from datagouv_eval_pipeline.defs.run_origin import LOCATION_NAME, as_code_location_runs
from datagouv_eval_pipeline.pipeline.report_site import (
    REPORT_URL_ENV,
    default_report_url,
    report_base_url,
)

PREVIEW = Preview(
    "ranking",
    "ranking_model",
    ("rank", "cell", "accuracy", "gone_column"),
    "tier = 'minimal'",
    "rank, cell",
    "tier minimal",
)


def _db(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    conn = duckdb.connect(str(tmp_path / "w.duckdb"))
    conn.execute(
        "CREATE TABLE ranking_model AS SELECT * FROM (VALUES "
        "(2, 'b', 0.123456, 'minimal'), (1, 'a', 0.5, 'minimal'), (NULL, 'c', NULL, 'minimal'),"
        " (1, 'a', 0.9, 'optimal')) AS t(rank, cell, accuracy, tier)"
    )
    return conn


def test_a_preview_is_a_table_of_the_slice_with_its_count(tmp_path: Path) -> None:
    conn = _db(tmp_path)
    metadata = preview_metadata(conn, PREVIEW)
    table = metadata["ranking"]
    assert isinstance(table, dg.TableMetadataValue)
    # The column the table lacks is left out; the others keep their DuckDB types.
    assert [(c.name, c.type) for c in table.schema.columns] == [
        ("rank", "INTEGER"),
        ("cell", "VARCHAR"),
        ("accuracy", "DECIMAL(7,6)"),
    ]
    rows = [record.data for record in table.records]
    # NULLs last in ascending order, floats rounded to 3 places, the optimal tier left out.
    assert [r["cell"] for r in rows] == ["a", "b", "c"]
    assert rows[1]["accuracy"] == pytest.approx(0.123) and rows[2]["accuracy"] is None
    assert metadata["ranking_shown"].startswith("3 of 3 rows (tier minimal)")
    assert row_count(conn, "ranking_model") == 4
    assert row_count(conn, "no_such_table") is None
    assert preview_metadata(conn, Preview("x", "no_such_table", ("a",), "", "a", "")) == {}


def test_the_report_links_default_to_the_served_address() -> None:
    assert report_base_url({}) == default_report_url() == "http://127.0.0.1:8766/"
    assert report_base_url({REPORT_URL_ENV: "https://reports.example/run"}) == (
        "https://reports.example/run/"
    )
    with pytest.raises(ValueError, match=REPORT_URL_ENV):
        report_base_url({REPORT_URL_ENV: "/tmp/report"})


@dg.op
def _noop() -> None:
    pass


@dg.job
def _tiny() -> None:
    _noop()


def test_runs_executed_in_process_carry_the_code_location_origin() -> None:
    with dg.DagsterInstance.ephemeral() as instance:
        with as_code_location_runs(instance):
            inside = _tiny.execute_in_process(instance=instance)
        outside = _tiny.execute_in_process(instance=instance)
        origin = inside.dagster_run.remote_job_origin
        assert origin is not None
        assert origin.location_name == LOCATION_NAME
        assert origin.repository_origin.repository_name == "__repository__"
        assert origin.job_name == "_tiny"
        # The label the UI filters a location's runs by (a storage tag).
        label = {".dagster/repository": f"__repository__@{LOCATION_NAME}"}
        labelled = instance.get_runs(dg.RunsFilter(tags=label))
        assert [run.run_id for run in labelled] == [inside.run_id]
        assert outside.dagster_run.remote_job_origin is None  # the instance is as it was


def test_the_report_server_stops_with_its_parent(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text("<h1>report</h1>", encoding="utf-8")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # The server is the parent's child, as after the UI command's exec.
    server = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import os, sys, subprocess; "
            "server = subprocess.Popen([sys.executable, '-m', "
            "'datagouv_eval_pipeline.pipeline.report_site', "
            "sys.argv[1], sys.argv[2], str(os.getpid())]); "
            "print(server.pid, flush=True); import time; time.sleep(600)",
            str(tmp_path),
            str(port),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    child = int(server.stdout.readline())
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/index.html", timeout=5) as page:
                assert page.read() == b"<h1>report</h1>"
            break
        except OSError:
            assert time.monotonic() < deadline, "the report server never answered"
            time.sleep(0.2)
    server.kill()  # the server's parent is gone: it ends by itself
    server.wait()
    deadline = time.monotonic() + 30
    while _alive(child):
        assert time.monotonic() < deadline, "the report server outlived its parent"
        time.sleep(0.2)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (no one reaps it once its parent is gone) is not running.
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


CODER_MCP = "offline~baseline-coder__mcp@0.2.19__data_gouv_context"
"""A cell the policy skips entirely: the baseline coder needs the code capability."""


def test_a_cell_whose_runs_were_all_skipped_fails_its_check_at_warn(tmp_path: Path) -> None:
    from tests.defs.pipeline_helpers import CELL_STAGES, Paths, cells_instance, resources

    instance = cells_instance(CODER_MCP)
    result = dg.materialize(
        CELL_STAGES,
        partition_key=CODER_MCP,
        resources=resources(Paths(tmp_path), task_ids=["task_0002"]),
        instance=instance,
    )
    assert result.success
    evaluations = {
        e.asset_key.to_user_string(): e
        for e in result.get_asset_check_evaluations()
        if e.check_name == "cell_ok"
    }
    agent, judged = evaluations["agent_runs"], evaluations["judge_scores"]
    assert (agent.passed, agent.severity) == (False, dg.AssetCheckSeverity.WARN)
    assert agent.partition == CODER_MCP
    assert agent.description is not None
    assert agent.description.startswith("no result: baseline-coder needs the code capability")
    assert (judged.passed, judged.severity) == (False, dg.AssetCheckSeverity.WARN)
    assert judged.description == "no result: none of its 1 runs could be scored"
    assert evaluations["action_mappings"].passed  # the mapping of a skipped run is not missing
    (event,) = result.asset_materializations_for_node("agent_runs")
    assert str(event.metadata["status"].value).startswith("NO RESULT: baseline-coder needs")
    # Each result targets the partition's latest materialization: the UI counts it as the
    # partition's current check status (a result without a target shows no status at all).
    check_keys = [dg.AssetCheckKey(dg.AssetKey(stage), "cell_ok") for stage in ("agent_runs",)]
    (info,) = instance.event_log_storage.get_asset_check_partition_info(check_keys)
    assert info.partition_key == CODER_MCP and info.is_current
    assert info.latest_execution_status.value == "FAILED"
