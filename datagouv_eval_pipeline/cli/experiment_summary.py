"""The closing summary of ``datagouv-eval experiment``, read from the run's result.

It names what a person must act on: cells that failed, cells whose runs were all skipped or
errored (with the reason, e.g. the unset API key variable or the missing sandbox), cells whose
API key is unset although older results of theirs come from the cache, and the checks that
failed. The exit code follows: non-zero when the run failed, a cell failed (every
run of it ended in error counts as failed), a selected cell scored nothing for want of its API
key or of the code sandbox (bubblewrap), or a blocking check failed. A cell skipped by design
(a baseline that cannot use the cell's toolset) is named but does not fail the run; nor, in
the default experiment (no cells chosen), does a code cell on a machine without the sandbox.
The result is Dagster's ``ExecuteInProcessResult``, read by attribute only, so this module does
not import Dagster.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

CELL_STAGES = ("agent_runs", "action_mappings", "judge_scores")
"""The partitioned stages whose per-cell failures the summary names."""

EXIT_INTERRUPTED = 130
"""Exit code after Ctrl-C or SIGTERM (128 + SIGINT, as shells report it)."""


@dataclass
class Summary:
    """What the run left for a person to look at.

    Attributes:
        executed: Agent task runs executed.
        reused: Agent task runs taken from the cache.
        failed_cells: Cell key → why its stage failed.
        idle_cells: Reason → cells whose runs were all skipped, errored or cancelled for it.
        missing_keys: Reason (the unset key variable) → cells that have older results, so are
            not idle, but whose model could not be asked in this run.
        unscored_for_key: Cells with no result at all because their API key is unset: the
            user selected them and must act, so the exit code is non-zero.
        unscored_for_sandbox: Cells with no result at all because the code sandbox cannot run
            on this machine (bubblewrap missing, ...): non-zero exit code too, unless the
            run was the default experiment (see :func:`exit_code`).
        failed_checks: One line per failed check.
        blocking_failed: Whether a blocking check failed.
        checks_ran: Whether any check was evaluated.
    """

    executed: int | None = None
    reused: int | None = None
    failed_cells: dict[str, str] = field(default_factory=dict)
    idle_cells: dict[str, list[str]] = field(default_factory=dict)
    missing_keys: dict[str, list[str]] = field(default_factory=dict)
    unscored_for_key: list[str] = field(default_factory=list)
    unscored_for_sandbox: list[str] = field(default_factory=list)
    failed_checks: list[str] = field(default_factory=list)
    blocking_failed: bool = False
    checks_ran: bool = False


def _value(metadata: Mapping[str, Any], name: str, default: Any = None) -> Any:
    item = metadata.get(name)
    return default if item is None else getattr(item, "value", item)


def _first_detail(metadata: Mapping[str, Any]) -> str:
    for value in metadata.values():
        text = str(getattr(value, "value", value) or "")
        if text.startswith("- "):  # the checks' markdown lists
            return text.splitlines()[0][2:][:160]
    return ""


def summarise(result: Any) -> Summary:
    """Read the summary from an in-process execution result."""
    summary = Summary()
    # A cell that fails at any stage is named, with the first stage it failed at.
    for stage in CELL_STAGES:
        stage_events = result.asset_materializations_for_node(stage)
        if stage_events:
            failed = dict(_value(stage_events[0].metadata, "failed", {}) or {})
            for key, reason in failed.items():
                summary.failed_cells.setdefault(key, f"{stage}: {reason}")
    events = result.asset_materializations_for_node("agent_runs")
    if events:
        meta = events[0].metadata
        summary.executed = _value(meta, "task_runs_executed")
        summary.reused = _value(meta, "task_runs_reused")
        idle: dict[str, list[str]] = defaultdict(list)
        keys: dict[str, list[str]] = defaultdict(list)
        for key, cell in (_value(meta, "cells", {}) or {}).items():
            missing_key = cell.get("missing_key")
            if missing_key and missing_key != cell.get("problem"):
                # Older results hide it from the lines below: name it here, every time.
                keys[str(missing_key)].append(key)
            statuses = cell.get("statuses") or {}
            if cell.get("problem") and set(statuses) <= {"error", "cancelled"} and statuses:
                # Every run failed: the cell has no result to show, which is a failure of the
                # experiment, not a choice of the configuration (as a skipped cell can be).
                summary.failed_cells.setdefault(
                    key, f"agent_runs: every run ended in error: {cell['problem']}"
                )
            elif cell.get("problem"):
                idle[str(cell["problem"])].append(key)
                if missing_key and missing_key == cell.get("problem"):
                    summary.unscored_for_key.append(key)
                if cell.get("missing_sandbox"):
                    summary.unscored_for_sandbox.append(key)
        summary.idle_cells = dict(idle)
        summary.missing_keys = dict(keys)
    for evaluation in result.get_asset_check_evaluations():
        summary.checks_ran = True
        # A failed per-cell check is a failed cell, named above with its reason.
        if evaluation.passed or evaluation.partition is not None:
            continue
        severity = getattr(evaluation.severity, "value", str(evaluation.severity))
        blocking = bool(getattr(evaluation, "blocking", False))
        summary.blocking_failed |= blocking
        asset = "/".join(evaluation.asset_key.path)
        detail = _first_detail(evaluation.metadata) or (evaluation.description or "")
        line = f"{evaluation.check_name} on {asset} ({severity}{', blocking' if blocking else ''})"
        summary.failed_checks.append(f"{line}: {detail}" if detail else line)
    # "every check passed" only means something when every check had its turn.
    summary.checks_ran &= bool(result.success)
    return summary


def summary_lines(summary: Summary) -> list[str]:
    """The summary as lines to print (the run's header and paths are printed by the caller)."""
    lines: list[str] = []
    if summary.executed is not None:
        lines.append(
            f"agent task runs: {summary.executed} executed, {summary.reused} reused from the cache"
        )
    for key, reason in summary.failed_cells.items():
        lines.append(f"FAILED cell {key}: {reason}")
    for reason, cells in summary.idle_cells.items():
        lines.append(
            f"NO RESULT in {len(cells)} cell(s), every run not done: {reason} [{_shown(cells)}]"
        )
    for reason, cells in summary.missing_keys.items():
        lines.append(
            f"KEY MISSING in {len(cells)} cell(s), only results from the cache: {reason} "
            f"[{_shown(cells)}]"
        )
    if summary.failed_checks:
        lines.append(f"{len(summary.failed_checks)} check(s) failed:")
        lines += [f"  {line}" for line in summary.failed_checks]
    elif summary.checks_ran:
        lines.append("every check passed")
    return lines


def _shown(cells: list[str]) -> str:
    return ", ".join(cells[:3]) + (f", … ({len(cells)} cells)" if len(cells) > 3 else "")


def exit_code(
    success: bool, summary: Summary, *, interrupted: bool, sandbox_optional: bool = False
) -> int:
    """0 when the run, every cell and every blocking check succeeded.

    Args:
        success: Whether the Dagster run succeeded.
        summary: The run's summary.
        interrupted: Whether Ctrl-C or SIGTERM stopped it (exit code 130).
        sandbox_optional: The code cells were not asked for by name (the default experiment):
            a machine without the sandbox skips them, says so, and still exits 0, so that
            the first ``./dev run`` on a fresh machine succeeds.
    """
    if interrupted:
        return EXIT_INTERRUPTED
    if not success or summary.failed_cells or summary.unscored_for_key:
        return 1
    if summary.unscored_for_sandbox and not sandbox_optional:
        return 1
    if summary.blocking_failed:
        return 1
    return 0
