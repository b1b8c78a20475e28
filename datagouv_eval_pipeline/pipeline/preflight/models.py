"""The pre-flight report: per task a status, per check an outcome, a reason and a diff.

These pydantic models are the boundary with the CLI (``--json``) and with the future Dagster
asset ``catalog_validation``: everything in them is JSON-able and ordered deterministically.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field, model_validator

from datagouv_eval_pipeline.core.tasks import Reference

Outcome = Literal["passed", "failed", "error"]
"""``failed``: the catalog drifted; ``error``: the check could not run (network, bad parameters,
missing baseline). Both quarantine the task."""

TaskStatus = Literal["ok", "quarantined"]


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DiffEntry(_Frozen):
    """One field that differs between what the task relies on and what the catalog says now."""

    field: str
    """What differs, e.g. ``title``, ``columns.dep_code``, ``expected_values.count_gers``."""
    baseline: Any
    """The baseline value, or the requirement (``">= 2026-01-01"``) for threshold checks."""
    current: Any
    """What the catalog answers now (``None`` when absent)."""

    def summary(self, width: int = 100) -> str:
        """Return ``field: baseline → current`` on one line, long texts cut around the change."""
        before, after = _excerpts(self.baseline, self.current, width)
        return f"{self.field}: {before} → {after}"


class PreflightCheckResult(_Frozen):
    """The outcome of one check on one catalog object for one task."""

    fn: str
    """The check name (``tasks.spec.CheckFn`` value)."""
    object_type: str
    """``dataset``, ``resource``, ``dataservice`` or ``organization``."""
    object_id: str
    dataset_id: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    outcome: Outcome
    reason: str
    """Why it passed or failed, in one sentence (status codes, URLs, counts)."""
    diffs: list[DiffEntry] = Field(default_factory=list)
    references: list[Reference] = Field(default_factory=list)
    """Expected values the check recomputed (``expected_values_hold``): the run's references."""
    implicit: bool = False
    """True when the validator added the check itself (``expected_values_hold`` on every task
    whose expected values have a ``recompute``)."""

    @property
    def passed(self) -> bool:
        """Return whether the check passed."""
        return self.outcome == "passed"

    @property
    def label(self) -> str:
        """Return ``fn on type id`` for messages."""
        return f"{self.fn} on {self.object_type} {self.object_id}"


class TaskReport(_Frozen):
    """Every check of one task and the resulting status."""

    task_id: str
    task_version: int
    spec_hash: str
    status: TaskStatus
    checks: list[PreflightCheckResult]

    @property
    def references(self) -> list[Reference]:
        """Return the expected values recomputed by this task's checks."""
        return [ref for check in self.checks for ref in check.references]

    @property
    def failing(self) -> list[PreflightCheckResult]:
        """Return the checks that did not pass, in order."""
        return [c for c in self.checks if not c.passed]


class ValidationReport(_Frozen):
    """The result of one pre-flight run over a set of tasks."""

    urls: dict[str, str]
    """The five base URLs the catalog was reached through (``TwinUrls.as_dict()``)."""
    source: str
    """What was validated, e.g. ``twin twin-2026-06-12`` or the live API's host."""
    now: datetime
    """The clock relative freshness windows were evaluated against."""
    baselines_dir: str
    tasks: list[TaskReport]
    """One report per task, sorted by task id."""

    @model_validator(mode="before")
    @classmethod
    def _drop_computed(cls, data: Any) -> Any:
        # The JSON form carries the derived lists ``ok`` and ``quarantined``; reading it back
        # recomputes them from ``tasks``.
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if k not in ("ok", "quarantined")}
        return data

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ok(self) -> list[str]:
        """Return the ids of the tasks that may run."""
        return [t.task_id for t in self.tasks if t.status == "ok"]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def quarantined(self) -> list[str]:
        """Return the ids of the quarantined tasks."""
        return [t.task_id for t in self.tasks if t.status == "quarantined"]

    @property
    def references(self) -> list[Reference]:
        """Return every recomputed expected value, in task order."""
        return [ref for task in self.tasks for ref in task.references]

    def task(self, task_id: str) -> TaskReport:
        """Return the report of one task.

        Raises:
            KeyError: no such task in the report.
        """
        for report in self.tasks:
            if report.task_id == task_id:
                return report
        raise KeyError(f"task {task_id!r} is not in the report")


def _excerpts(before: Any, after: Any, width: int) -> tuple[str, str]:
    """Render two values; long strings are cut to a window around their first difference."""
    if not (isinstance(before, str) and isinstance(after, str)):
        return _short(before, width), _short(after, width)
    if len(before) <= width and len(after) <= width:
        return repr(before), repr(after)
    start = 0
    for index, (a, b) in enumerate(zip(before, after, strict=False)):
        if a != b:
            start = index
            break
    else:
        start = min(len(before), len(after))
    left = max(0, start - width // 3)

    def window(text: str) -> str:
        piece = text[left : left + width]
        prefix = "…" if left > 0 else ""
        suffix = "…" if left + width < len(text) else ""
        return f"{prefix}{piece!r}{suffix} (at char {start}, {len(text)} chars)"

    return window(before), window(after)


def _short(value: Any, width: int) -> str:
    text = "(absent)" if value is None else repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= width else text[: width - 1] + "…"
