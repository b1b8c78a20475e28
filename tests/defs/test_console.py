"""The brief console: what it keeps, how it renders progress."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from datagouv_eval_pipeline.defs.console import (
    BriefFormatter,
    brief_console_logger,
    keep_record,
    progress_bar,
)
from datagouv_eval_pipeline.defs.resources import RunStoreResource
from datagouv_eval_pipeline.defs.task_specs import task_specs


def _record(message: str, level: int = logging.INFO, step: str = "agent_runs") -> logging.LogRecord:
    record = logging.LogRecord("dagster", level, __file__, 1, message, None, None)
    record.dagster_meta = {"step_key": step, "orig_message": message, "dagster_event": None}
    return record


def test_progress_lines_get_a_bar_on_a_terminal_only() -> None:
    record = _record("[7/24] cell a: 14 runs, 14 ok, 3.1 s")
    assert progress_bar(7, 24) == "█" * 6 + "░" * 14  # 20 × 7/24 = 5.8, rounded
    tty = BriefFormatter(tty=True).format(record)
    assert tty.endswith("agent_runs: ██████░░░░░░░░░░░░░░ [7/24] cell a: 14 runs, 14 ok, 3.1 s")
    plain = BriefFormatter(tty=False).format(record)
    assert plain.endswith("agent_runs: [7/24] cell a: 14 runs, 14 ok, 3.1 s")


def test_framework_chatter_is_dropped_and_our_messages_kept() -> None:
    assert keep_record(_record("[1/2] cell a: 2 runs, 2 ok, 0.1 s"))
    assert not keep_record(_record("Dependencies for step judge_scores failed. Not executing."))
    assert not keep_record(_record("Running dbt command: `dbt build`.", step="dbt_metrics_assets"))
    assert not keep_record(
        _record(
            "Logging an `AssetObservation` instead of an `AssetCheckResult` for dbt test x",
            logging.WARNING,
        )
    )
    assert keep_record(_record("quarantined tasks skipped: task_0004", logging.WARNING))


def _failure_lines(err: str, step: str) -> list[str]:
    """The console lines of ``step``'s failure: its line and the indented ones below it."""
    lines = err.splitlines()
    start = next(i for i, line in enumerate(lines) if f" {step}: failed: " in line)
    block = [lines[start]]
    block += [line for line in lines[start + 1 :] if line.startswith("  ")][:10]
    return block


def _run_brief(job: dg.JobDefinition) -> dg.ExecuteInProcessResult:
    return job.execute_in_process(
        run_config={"loggers": {"brief": {"config": {"log_level": "INFO"}}}},
        raise_on_error=False,
    )


def test_a_failed_step_prints_its_root_cause_in_at_most_three_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # An analyst's DuckDB session holds the warehouse file: the step fails on the lock, and the
    # console says so (Dagster's wrapper, "Error occurred while executing op", says nothing).
    db = tmp_path / "warehouse.duckdb"
    duckdb.connect(str(db)).close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('ready', "
            "flush=True); time.sleep(120)",
            str(db),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"

        @dg.op(name="warehouse")
        def load() -> None:
            duckdb.connect(str(db)).close()

        @dg.job(logger_defs={"brief": brief_console_logger})
        def job() -> None:
            load()

        result = _run_brief(job)
    finally:
        holder.kill()
        holder.wait()
    assert not result.success
    block = _failure_lines(capsys.readouterr().err, "warehouse")
    text = "\n".join(block)
    assert "Error occurred while executing op" not in text
    assert "Conflicting lock is held" in text and f"PID {holder.pid}" in text, text
    assert str(db) in text
    assert len(block) <= 3, text


def test_a_failure_with_its_own_words_keeps_them_above_the_cause(
    capsys: pytest.CaptureFixture[str],
) -> None:
    @dg.op(name="report")
    def build() -> None:
        try:
            b"\xff{}".decode("utf-8")
        except UnicodeDecodeError as error:
            raise dg.Failure(description="cannot read /tmp/x.json") from error

    @dg.job(logger_defs={"brief": brief_console_logger})
    def job() -> None:
        build()

    assert not _run_brief(job).success
    block = _failure_lines(capsys.readouterr().err, "report")
    assert block[0].endswith("report: failed: cannot read /tmp/x.json")
    assert block[1].strip().startswith("UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff")
    assert len(block) == 2


def test_a_run_store_that_is_a_file_fails_the_first_stage_saying_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "run_store"
    store.write_text("not a directory", encoding="utf-8")
    result = (
        dg.Definitions(
            assets=[task_specs],
            resources={"run_store": RunStoreResource(root=str(store))},
            loggers={"brief": brief_console_logger},
        )
        .resolve_implicit_global_asset_job_def()
        .execute_in_process(
            run_config={"loggers": {"brief": {"config": {"log_level": "INFO"}}}},
            raise_on_error=False,
        )
    )
    assert not result.success
    block = _failure_lines(capsys.readouterr().err, "task_specs")
    assert block == [
        block[0].split(" task_specs: ")[0]
        + f" task_specs: failed: {store}: the run store is a file, not a directory; set "
        "DATAGOUV_EVAL_RUN_STORE (or the run_store resource's root) to a directory"
    ]


def test_an_interrupted_step_says_stopped(capsys: pytest.CaptureFixture[str]) -> None:
    @dg.op(name="judge_scores")
    def judge() -> None:
        raise dg.DagsterExecutionInterruptedError("interrupted by SIGINT: not started")

    @dg.job(logger_defs={"brief": brief_console_logger})
    def job() -> None:
        judge()

    assert not _run_brief(job).success
    err = capsys.readouterr().err
    assert "judge_scores: stopped: interrupted by SIGINT: not started" in err
    assert "failed" not in err
