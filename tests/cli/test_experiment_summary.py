"""The closing summary of ``experiment``: what failed, what produced nothing and why, exit code."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from datagouv_eval_pipeline.cli.experiment_summary import (
    EXIT_INTERRUPTED,
    exit_code,
    summarise,
    summary_lines,
)

KEY_ENV = "set the environment variable MISTRAL_API_KEY to the API key of provider 'mistral'"


@dataclass
class _Materialization:
    metadata: dict[str, Any]


@dataclass
class _Result:
    """The two methods of ``ExecuteInProcessResult`` the summary reads."""

    cells: dict[str, Any]
    checks: list[dg.AssetCheckEvaluation] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    success: bool = True

    def asset_materializations_for_node(self, name: str) -> list[_Materialization]:
        if name != "agent_runs":
            return []
        meta = {
            "task_runs_executed": dg.IntMetadataValue(3),
            "task_runs_reused": dg.IntMetadataValue(11),
            "cells": dg.JsonMetadataValue(self.cells),
            "failed": dg.JsonMetadataValue(self.failed),
        }
        return [_Materialization(meta)]

    def get_asset_check_evaluations(self) -> list[dg.AssetCheckEvaluation]:
        return self.checks


def _check(name: str, passed: bool, *, blocking: bool = False) -> dg.AssetCheckEvaluation:
    return dg.AssetCheckEvaluation(
        asset_key=dg.AssetKey(["eval", "verdicts"]),
        check_name=name,
        passed=passed,
        metadata={"details": dg.MetadataValue.md("- 3 of 14 verdicts unscored\n- more")},
        severity=dg.AssetCheckSeverity.WARN,
        blocking=blocking,
    )


def test_cells_without_results_are_named_with_their_reason_and_checks_listed() -> None:
    cells = {
        "mistral~a__none__p": {"statuses": {"skipped": 14}, "problem": KEY_ENV},
        "mistral~b__none__p": {"statuses": {"skipped": 14}, "problem": KEY_ENV},
        "offline~c__none__p": {"statuses": {"ok": 14}},
    }
    result = _Result(cells, [_check("judge_coverage", False), _check("scores_in_range", True)])
    summary = summarise(result)
    assert summary_lines(summary) == [
        "agent task runs: 3 executed, 11 reused from the cache",
        f"NO RESULT in 2 cell(s), every run not done: {KEY_ENV} "
        "[mistral~a__none__p, mistral~b__none__p]",
        "1 check(s) failed:",
        "  judge_coverage on eval/verdicts (WARN): 3 of 14 verdicts unscored",
    ]
    assert exit_code(result.success, summary, interrupted=False) == 0  # a warning only


def test_a_blocking_check_or_a_failed_cell_makes_the_exit_code_non_zero() -> None:
    blocking = _Result({}, [_check("specs_valid", False, blocking=True)])
    assert exit_code(True, summarise(blocking), interrupted=False) == 1
    failed = _Result({}, failed={"offline~c__none__p": "RuntimeError: boom"})
    lines = summary_lines(summarise(failed))
    assert "FAILED cell offline~c__none__p: agent_runs: RuntimeError: boom" in lines
    assert exit_code(True, summarise(failed), interrupted=False) == 1
    assert exit_code(False, summarise(_Result({})), interrupted=True) == EXIT_INTERRUPTED


def test_a_cell_whose_every_run_errored_is_a_failed_cell() -> None:
    # 5 of 11 cells erroring on every run used to end "experiment done" with exit 0.
    cells = {
        "mistral~a__none__p": {
            "statuses": {"error": 12, "cancelled": 2},
            "problem": "model request failed: HTTP 500 after 3 retries",
        },
        "offline~c__none__p": {"statuses": {"ok": 13, "error": 1}},
    }
    summary = summarise(_Result(cells))
    assert summary_lines(summary) == [
        "agent task runs: 3 executed, 11 reused from the cache",
        "FAILED cell mistral~a__none__p: agent_runs: every run ended in error: model request "
        "failed: HTTP 500 after 3 retries",
    ]
    assert exit_code(True, summary, interrupted=False) == 1
