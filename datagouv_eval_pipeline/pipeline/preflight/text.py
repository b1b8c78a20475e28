"""Plain-text rendering of a pre-flight report and of a baseline refresh plan (for the CLI)."""

from __future__ import annotations

from datagouv_eval_pipeline.pipeline.preflight.models import PreflightCheckResult, ValidationReport
from datagouv_eval_pipeline.pipeline.preflight.validator import RefreshPlan

_MARK = {"passed": "ok", "failed": "FAIL", "error": "ERROR"}


def render_report(report: ValidationReport, *, verbose: bool = False) -> str:
    """Return a table of the tasks, then the failing checks of each quarantined task.

    Args:
        report: The report.
        verbose: Also list the checks that passed.
    """
    lines = [
        f"pre-flight of {len(report.tasks)} active task(s) against {report.source}",
        f"  main API {report.urls['datagouv_api']}  Tabular {report.urls['tabular_api']}",
        f"  baselines {report.baselines_dir}  now {report.now.isoformat()}",
        "",
    ]
    rows = [("task", "status", "checks", "failing")]
    for task in report.tasks:
        passed = sum(1 for c in task.checks if c.passed)
        failing = ", ".join(sorted({c.fn for c in task.failing}))
        rows.append(
            (
                task.task_id,
                task.status.upper() if task.failing else task.status,
                f"{passed}/{len(task.checks)}",
                failing,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        cells = f"{row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]:>{widths[2]}}"
        lines.append(f"{cells}  {row[3]}".rstrip())
    for task in report.tasks:
        shown = task.checks if verbose else task.failing
        if not shown:
            continue
        lines.append("")
        lines.append(f"{task.task_id} ({task.status}):")
        lines.extend(_check_lines(check) for check in shown)
    lines.append("")
    quarantined = report.quarantined
    summary = f"{len(report.ok)} ok, {len(quarantined)} quarantined"
    if quarantined:
        summary += f" ({', '.join(quarantined)})"
    lines.append(summary)
    return "\n".join(lines)


def _check_lines(check: PreflightCheckResult) -> str:
    implicit = " (implicit)" if check.implicit else ""
    head = f"  [{_MARK[check.outcome]}] {check.label}{implicit}: {check.reason}"
    details = [f"      {diff.summary()}" for diff in check.diffs]
    return "\n".join([head, *details])


def render_refresh(plan: RefreshPlan) -> str:
    """Return the diff a refresh would write, file by file, and any error."""
    lines = [f"baseline refresh from {plan.source} into {plan.baselines_dir}"]
    counts = {kind: 0 for kind in ("added", "changed", "removed", "unchanged")}
    for change in plan.changes:
        counts[change.kind] += 1
        if change.kind == "unchanged":
            continue
        lines.append(f"  {change.kind:<8} {change.path}")
        lines.extend(f"      {diff.summary()}" for diff in change.diffs)
    for error in plan.errors:
        lines.append(f"  ERROR    {error}")
    lines.append(
        ", ".join(f"{n} {kind}" for kind, n in counts.items())
        + (f", {len(plan.errors)} error(s)" if plan.errors else "")
    )
    return "\n".join(lines)
