"""The brief console: what it keeps, how it renders progress."""

from __future__ import annotations

import logging

from datagouv_eval_pipeline.defs.console import BriefFormatter, keep_record, progress_bar


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
