"""The report's history section: each cell's trend, and this run against the previous one.

Each cell's headline scores over the recorded experiments, and the latest experiment against the
previous one (what changed, what the gate decided). The values come from the warehouse's history
(``eval.experiments``, the trend points of :mod:`datagouv_eval_pipeline.pipeline.warehouse.trends`)
and the
regression gate's rows (``eval.gate_results``); the gate's own sentence says what it decided.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from datagouv_eval_pipeline.core.metrics import registry
from datagouv_eval_pipeline.pipeline.report.data import (
    HEADLINE_TIER,
    TREND_METRICS,
    ReportData,
    Row,
)
from datagouv_eval_pipeline.pipeline.warehouse import (
    SCORED,
    GateComparison,
    GateReport,
    TrendPoint,
    summary_lines,
)

METRIC_NAMES = {
    **{entry.name: entry.title for entry in registry.METRICS},
    SCORED: "share of runs scored",
}
"""How the section names the metrics it shows (the registry's labels, and the gate's own)."""


@dataclass(frozen=True)
class Change:
    """One cell's score in the latest experiment against its previous run (one gate row).

    Attributes:
        cell_key: The cell.
        metric: The metric (``scored``: the share of runs scored).
        tier: The tier.
        previous: Mean over the paired runs in the previous experiment.
        current: Mean over them now.
        difference: current - previous.
        low: Lower bound of the difference's 95 % interval.
        high: Upper bound.
        p_adjusted: Holm-adjusted p-value within the cell.
        verdict: better / worse / no detectable difference; None when not compared.
        pairs: Runs paired (task and repeat scored in both).
        failed: Whether this comparison fails the gate.
        note: Why there is no verdict (first run, not comparable...), else None.
    """

    cell_key: str
    metric: str
    tier: str
    previous: float | None
    current: float | None
    difference: float | None
    low: float | None
    high: float | None
    p_adjusted: float | None
    verdict: str | None
    pairs: int
    failed: bool
    note: str | None


@dataclass
class HistoryView:
    """What the history section shows.

    Attributes:
        experiments: ``eval.experiments`` rows, oldest first.
        series: Per metric, one line per cell: its trend points in experiment order.
        task_notes: Cells whose points rest on different task sets, with the counts.
        current: The latest experiment's row; None without any.
        previous: The experiments its cells were compared with, oldest first.
        decision: The gate's sentence for the latest experiment; None when it was not checked.
        changes: The gate's comparisons of the headline tier (all languages, compared or not
            comparable); the first-run cells are in ``first_run``.
        first_run: Cells the latest experiment ran for the first time.
        world_changed: (cell, reason) of the cells whose two runs met another world (snapshot
            or twin/toolset code): none of their comparisons is comparable.
        setup: What differs between the previous experiment(s) and the latest (code, judge,
            configuration), one sentence each.
    """

    experiments: list[Row]
    series: dict[str, list[tuple[str, list[TrendPoint]]]] = field(default_factory=dict)
    task_notes: list[str] = field(default_factory=list)
    current: Row | None = None
    previous: list[Row] = field(default_factory=list)
    decision: str | None = None
    changes: list[Change] = field(default_factory=list)
    first_run: list[str] = field(default_factory=list)
    world_changed: list[tuple[str, str]] = field(default_factory=list)
    setup: list[str] = field(default_factory=list)

    @property
    def worse(self) -> list[Change]:
        """The comparisons that fail the gate."""
        return [c for c in self.changes if c.failed]


def history_view(data: ReportData, labels: dict[str, str]) -> HistoryView | None:
    """The history section's values; None when the warehouse records no experiment."""
    if not data.experiments:
        return None
    order = {str(e["experiment_id"]): index for index, e in enumerate(data.experiments)}
    by_line: dict[tuple[str, str], list[TrendPoint]] = defaultdict(list)
    for point in data.trends:
        if point.experiment_id in order:
            by_line[(point.metric, point.cell_key)].append(point)
    series: dict[str, list[tuple[str, list[TrendPoint]]]] = {}
    notes = []
    for metric in TREND_METRICS:
        lines = []
        for (name, cell), points in sorted(by_line.items()):
            if name != metric:
                continue
            points.sort(key=lambda p: order[p.experiment_id])
            lines.append((labels.get(cell, cell), points))
            task_sets = {p.tasks for p in points if p.scored}
            if metric == "accuracy" and len(task_sets) > 1:
                counts = ", ".join(str(len(p.tasks)) for p in points)
                notes.append(
                    f"{labels.get(cell, cell)}: scored on different tasks from run to run "
                    f"({counts} tasks), so its points are not the same measurement"
                )
        if lines:
            series[metric] = lines
    current = data.experiments[-1]
    view = HistoryView(data.experiments, series, notes, current)
    if not data.gate:
        return view
    comparisons = [GateComparison(**row) for row in data.gate]
    report = GateReport(str(current["experiment_id"]), None, comparisons)
    view.decision = summary_lines(report)[0]
    before = {c.previous_experiment_id for c in comparisons if c.previous_experiment_id}
    view.previous = [e for e in data.experiments if e["experiment_id"] in before]
    view.first_run = sorted({c.cell_key for c in comparisons if c.previous_experiment_id is None})
    view.world_changed = sorted(
        {(c.cell_key, c.reason or "") for c in comparisons if c.world_changed}
    )
    view.changes = [
        Change(
            cell_key=c.cell_key,
            metric=c.metric,
            tier=c.tier,
            previous=c.mean_previous,
            current=c.mean_current,
            difference=c.mean_difference,
            low=c.ci_low,
            high=c.ci_high,
            p_adjusted=c.p_adjusted,
            verdict=c.verdict,
            pairs=c.pairs,
            failed=c.failed,
            note=c.reason,
        )
        for c in comparisons
        if c.previous_experiment_id is not None
        and c.language == "all"
        and c.tier in (HEADLINE_TIER, "all")
    ]
    view.changes.sort(key=lambda c: (not c.failed, c.cell_key, c.metric))
    view.setup = _setup_changes(view.previous, current)
    return view


def _setup_changes(previous: list[Row], current: Row) -> list[str]:
    """What differs between the compared experiments and the latest one."""
    out = []
    for name, column in (
        ("code (git)", "git_sha"),
        ("configuration hash", "config_hash"),
        ("judge(s)", "judge_ids"),
        ("snapshot(s)", "snapshot_ids"),
        ("package version", "code_version"),
    ):
        before = sorted({str(e[column]) for e in previous if e.get(column) is not None})
        now = current.get(column)
        if before and now is not None and before != [str(now)]:
            out.append(f"{name}: {', '.join(before)} → {now}")
    if current.get("git_dirty"):
        out.append("the latest experiment ran on uncommitted code (git_dirty)")
    return out


def experiment_tick(experiment: Row) -> str:
    """A short label of an experiment: when it was recorded and its id's first characters."""
    at = experiment.get("recorded_at")
    when = at.strftime("%m-%d %H:%M") if isinstance(at, datetime) else str(at or "")
    return f"{when}\n{str(experiment['experiment_id'])[:8]}"
