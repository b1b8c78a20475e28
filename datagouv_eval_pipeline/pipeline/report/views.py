"""The report's sections as plain values: what each table and plot shows, chosen from the data.

The HTML page and the Markdown render the same :class:`ReportView`, so the two never disagree.
Means, n, coverage, intervals and paired tests come from the statistics stage's tables
(``eval.metric_estimates``, ``eval.comparisons``); a warehouse without them falls back to the dbt
marts' means and deltas, and the pages say so. One exception: the version plot's means are over
the runs every version of a line scored, with the statistics stage's own estimator.
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from datagouv_eval_pipeline.core.metrics import registry
from datagouv_eval_pipeline.core.metrics import statistics as st
from datagouv_eval_pipeline.pipeline.report.changes import HistoryView, history_view
from datagouv_eval_pipeline.pipeline.report.data import HEADLINE_TIER, ReportData, Row
from datagouv_eval_pipeline.pipeline.report.figures import CostPoint, VersionPoint, pareto_front

NO_VERSION = "—"
"""The pivot column of cells without MCP."""


def _heading(metric: str) -> str:
    title = registry.label(metric)
    return title[:1].upper() + title[1:]


PIVOT_METRICS = tuple((metric, _heading(metric)) for metric in ("accuracy", "action_f1"))
"""The metrics the pivot shows, with their headings (the registry's labels)."""

COMPARED_METRICS = ("accuracy", "action_f1", "trajectory_adherence")
"""The metrics of the comparison table."""


def cell_label(cell: Row) -> str:
    """A short, readable name of a cell: model · capabilities with their versions."""
    parts = []
    for capability in str(cell["capability_set"]).split("+"):
        if capability == "mcp" and cell.get("mcp_version"):
            parts.append(f"mcp {cell['mcp_version']}")
        elif capability == "skills" and cell.get("skills_version"):
            parts.append(f"skills {cell['skills_version']}")
        else:
            parts.append(capability)
    return f"{cell['model_name']} · {' + '.join(parts)}"


@dataclass(frozen=True)
class ReportedMean:
    """One mean as the report prints it.

    Attributes:
        cell_key: The cell.
        mean: The mean over scored runs (None: none scored).
        scored: Runs scored (n).
        runs: Runs in the cell.
        coverage: scored / runs.
        low: Lower bound of the 95 % interval (None without the statistics tables, or with
            fewer than two tasks scored).
        high: Upper bound.
        note: Why there is no interval, when the statistics tables say.
    """

    cell_key: str
    mean: float | None
    scored: int
    runs: int
    coverage: float | None
    low: float | None = None
    high: float | None = None
    note: str | None = None


@dataclass(frozen=True)
class PivotRow:
    """One model × capability set row of the pivot; one slot per MCP version.

    Attributes:
        model: Model name.
        capability_set: Capability set, with the skills version when there is one.
        slots: Per pivot column, the estimates of the cells there (usually one).
    """

    model: str
    capability_set: str
    slots: list[list[ReportedMean]]


@dataclass(frozen=True)
class Pivot:
    """One metric's pivot: rows model × capability set, columns MCP version.

    Attributes:
        metric: Metric name.
        title: Heading.
        versions: The columns.
        rows: The rows.
    """

    metric: str
    title: str
    versions: list[str]
    rows: list[PivotRow]


@dataclass(frozen=True)
class LanguageRow:
    """One cell's headline means on the tasks of one prompt language.

    Attributes:
        cell_key: The cell.
        language: The tasks' language (ISO 639-1, or ``unknown``).
        tasks: Tasks of that language the cell ran.
        accuracy: Accuracy on them (minimal tier).
        action_f1: Action F1 on them (minimal tier).
    """

    cell_key: str
    language: str
    tasks: int
    accuracy: ReportedMean
    action_f1: ReportedMean


@dataclass(frozen=True)
class Comparison:
    """One pair of cells that differ in one dimension, on one metric.

    Attributes:
        dimension: The dimension that differs.
        metric: Metric name.
        cell_a: First cell key.
        cell_b: Second cell key.
        value_a: Its value of the dimension.
        value_b: The second cell's value.
        mean_a: Mean of A.
        mean_b: Mean of B.
        paired_tasks: Tasks scored in both.
        paired_delta: Mean per-task difference B - A on those tasks.
        low: Lower bound of the paired difference's 95 % interval (statistics tables).
        high: Upper bound.
        p_adjusted: Holm-adjusted p-value (statistics tables).
        verdict: better / worse / no detectable difference (statistics tables).
        mde: Minimum detectable effect at 80 % power (statistics tables).
        test: The test used (statistics tables).
        pairs: (task, repeat) pairs scored in both cells (statistics tables).
        note: Why a figure is missing (statistics tables).
        verdict_note: Why the verdict is "no detectable difference" although the unadjusted
            p-value or interval says otherwise (statistics tables).
        mde_method: How the MDE was computed: mcnemar_exact or wilcoxon_simulation.
        coverage_a: Share of the runs both cells have that A scored (statistics tables).
        coverage_b: The same for B.
        criterion_coverage_a: Accuracy: A's mean share of criteria decided over the pairs.
        criterion_coverage_b: The same for B.
        coverage_note: What coverage differs by more than the tolerance, else None.
    """

    dimension: str
    metric: str
    cell_a: str
    cell_b: str
    value_a: str
    value_b: str
    mean_a: float | None
    mean_b: float | None
    paired_tasks: int
    paired_delta: float | None
    low: float | None = None
    high: float | None = None
    p_adjusted: float | None = None
    verdict: str | None = None
    mde: float | None = None
    test: str | None = None
    pairs: int | None = None
    note: str | None = None
    verdict_note: str | None = None
    mde_method: str | None = None
    coverage_a: float | None = None
    coverage_b: float | None = None
    criterion_coverage_a: float | None = None
    criterion_coverage_b: float | None = None
    coverage_note: str | None = None


QUESTION_METRICS = tuple((metric, registry.label(metric)) for metric in ("accuracy", "action_f1"))
"""The headline metrics each question is answered on, with their names in the text."""

FACTOR_NAMES = {
    "model": "the model",
    "mcp_version": "the MCP server version",
    "capability": "the way of reaching the catalog (skills document aside)",
    "skills": "the skills document (with against without, or two versions)",
    "system_prompt": "the system prompt",
}
"""What each factor of ``evaluation_types.yml`` varies, in words."""


@dataclass(frozen=True)
class QuestionAnswer:
    """One pair of cells answering a question, on one headline metric.

    Attributes:
        setting: What both cells share (model, the other capabilities...).
        cell_a: The reference cell.
        cell_b: The compared cell (Δ = B - A).
        value_a: A's value of the factor (``none``: without).
        value_b: B's value.
        metric: The metric's name in the text.
        difference: Mean paired difference B - A; None when nothing was scored in both.
        low: Lower bound of its 95 % interval; None with fewer than 2 paired tasks.
        high: Upper bound.
        p_adjusted: Holm-adjusted p-value within the question.
        verdict: better / worse / no detectable difference (B against A); None with fewer than
            2 paired tasks.
        mde: Minimum detectable difference at 80 % power.
        tasks: Paired tasks.
        note: Why a figure is missing; why a raw difference is no verdict (not after Holm);
            a coverage gap between A and B.
    """

    setting: str
    cell_a: str
    cell_b: str
    value_a: str
    value_b: str
    metric: str
    difference: float | None
    low: float | None
    high: float | None
    p_adjusted: float | None
    verdict: str | None
    mde: float | None
    tasks: int
    note: str | None


@dataclass(frozen=True)
class QuestionSection:
    """One evaluation type's question about one factor, and its answer.

    Attributes:
        evaluation_type: The type.
        question: The question in a sentence (the type's description).
        factor: The factor compared.
        varies: What the factor varies, in words.
        cells: The type's cells in the warehouse.
        answers: The pairs' comparisons on the headline metrics (minimal tier).
        reason: Why the question has no answer (no cell, no pair); None when it has pairs.
    """

    evaluation_type: str
    question: str
    factor: str
    varies: str
    cells: int
    answers: list[QuestionAnswer]
    reason: str | None


def question_sections(data: ReportData) -> list[QuestionSection]:
    """Every evaluation type × factor question with its answer (statistics tables only)."""
    names = dict(QUESTION_METRICS)
    answers: dict[tuple[str, str], list[QuestionAnswer]] = defaultdict(list)
    for row in data.answers:
        if row["metric"] not in names:
            continue
        answers[(row["evaluation_type"], row["factor"])].append(
            QuestionAnswer(
                setting=row["setting"],
                cell_a=row["cell_a"],
                cell_b=row["cell_b"],
                value_a=row["value_a"],
                value_b=row["value_b"],
                metric=names[row["metric"]],
                difference=row["mean_difference"],
                low=row["ci_low"],
                high=row["ci_high"],
                p_adjusted=row["p_adjusted"],
                # One paired task answers nothing, whatever its test says: the note says why.
                verdict=row["verdict"] if row["tasks"] >= 2 else None,
                mde=row["mde"],
                tasks=row["tasks"],
                # why a figure is missing, why a raw difference is no verdict, coverage gaps
                note=" ".join(
                    str(n)
                    for n in (row["reason"], row.get("verdict_note"), row.get("coverage_note"))
                    if n
                )
                or None,
            )
        )
    order = [name for _, name in QUESTION_METRICS]
    sections = []
    for q in data.questions:
        found = answers.get((q["evaluation_type"], q["factor"]), [])
        found.sort(key=lambda a: (a.setting, a.value_a, a.value_b, order.index(a.metric)))
        reason = q["reason"]
        if reason is None and not found:
            reason = "no headline metric (accuracy, action F1) is computed for its cells"
        sections.append(
            QuestionSection(
                evaluation_type=q["evaluation_type"],
                question=q["description"],
                factor=q["factor"],
                varies=FACTOR_NAMES.get(str(q["factor"]), str(q["factor"])),
                cells=q["cells"],
                answers=found,
                reason=reason,
            )
        )
    # The questions the experiment ran first; those of types with no cell close the list.
    return sorted(sections, key=lambda s: s.cells == 0)


FEATURE_METRIC = "accuracy"
"""The metric the by-feature section compares (the headline, minimal tier)."""

NOT_EXERCISED = (
    "no difference expected / not exercised: no task of the feature is scored in both cells"
)
"""The note of a feature no paired task exercises: the versions cannot differ on it here."""


@dataclass(frozen=True)
class FeatureComparison:
    """One toolset feature × one pair of cells that differ only in the MCP version.

    Attributes:
        feature: The feature (``area.feature``).
        feature_tasks: Tasks of the suite whose latest version exercises it.
        cell_a: The cell with the older version.
        cell_b: The cell with the newer version.
        model: Model and capability set the two cells share.
        version_a: MCP version of A.
        version_b: MCP version of B.
        exercised: Some task of the feature is scored in both cells.
        tasks: Paired tasks of the feature (scored in both cells).
        difference: Mean paired accuracy difference B - A on them.
        low: Lower bound of its 95 % interval.
        high: Upper bound.
        p_adjusted: Holm-adjusted p-value (within the feature × dimension × metric × tier).
        verdict: better / worse / no detectable difference (B against A).
        mde: Minimum detectable difference at 80 % power on those tasks.
        note: :data:`NOT_EXERCISED`, or why a figure is missing.
        verdict_note: Why the verdict is "no detectable difference" although the unadjusted
            p-value or interval says otherwise.
        coverage_note: What coverage differs between A and B beyond the tolerance, else None.
    """

    feature: str
    feature_tasks: int
    cell_a: str
    cell_b: str
    model: str
    version_a: str
    version_b: str
    exercised: bool
    tasks: int = 0
    difference: float | None = None
    low: float | None = None
    high: float | None = None
    p_adjusted: float | None = None
    verdict: str | None = None
    mde: float | None = None
    note: str | None = None
    verdict_note: str | None = None
    coverage_note: str | None = None

    @property
    def area(self) -> str:
        """The part of the feature before the dot (search, tabular, ...)."""
        return self.feature.split(".", 1)[0]


POWER_TARGET = 0.15
"""The paired accuracy difference the suite aims to detect at 80 % power (issue 14)."""


@dataclass(frozen=True)
class Power:
    """What the experiment's paired accuracy comparisons could detect (from their stored MDEs).

    Attributes:
        comparisons: Accuracy comparisons with tasks scored in both cells.
        with_mde: Those with a minimum detectable effect (the others had identical outcomes
            on every paired task, or too few discordant pairs or tasks for their test to reach
            5 %: no power figure).
        median: Median MDE over ``with_mde`` (None without one).
        low: Smallest MDE.
        high: Largest MDE.
        median_tasks: Median number of paired tasks of the comparisons with an MDE.
        within_target: Comparisons whose MDE is at most :data:`POWER_TARGET`.
    """

    comparisons: int
    with_mde: int
    median: float | None
    low: float | None
    high: float | None
    median_tasks: float | None
    within_target: int


def _median(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def accuracy_power(comparisons: list[Comparison]) -> Power:
    """The MDE summary of the accuracy comparisons (each unordered pair once)."""
    seen: set[tuple[str, str]] = set()
    paired: list[Comparison] = []
    for c in comparisons:
        pair = (min(c.cell_a, c.cell_b), max(c.cell_a, c.cell_b))
        if c.metric != "accuracy" or not c.paired_tasks or pair in seen:
            continue
        seen.add(pair)
        paired.append(c)
    mdes = [c.mde for c in paired if c.mde is not None]
    return Power(
        comparisons=len(paired),
        with_mde=len(mdes),
        median=_median(mdes),
        low=min(mdes) if mdes else None,
        high=max(mdes) if mdes else None,
        median_tasks=_median([float(c.paired_tasks) for c in paired if c.mde is not None]),
        within_target=sum(1 for mde in mdes if mde <= POWER_TARGET),
    )


@dataclass(frozen=True)
class CostRow:
    """One cell's cost and accuracy.

    Attributes:
        cell_key: The cell.
        runs: Runs in the cell.
        priced_runs: Runs with a known cost.
        total_cost: Sum of agent and judge cost when every run is priced, else None.
        correct: Runs whose accuracy is 1 (every criterion of the tier passed).
        cost_per_correct: total_cost / correct (None without cost or without a correct run).
        mean_accuracy: Mean accuracy.
        mean_latency_ms: Mean effective latency of the runs that ran.
        mean_tokens: Mean agent tokens per run.
        on_front: On the Pareto front of the plot.
    """

    cell_key: str
    runs: int
    priced_runs: int
    total_cost: float | None
    correct: int
    cost_per_correct: float | None
    mean_accuracy: float | None
    mean_latency_ms: float | None
    mean_tokens: float | None
    on_front: bool = False


@dataclass(frozen=True)
class Problem:
    """A run or cell that did not produce scores, with why.

    Attributes:
        kind: quarantined, skipped, error, budget_exceeded or failed stage.
        subject: Task id or cell key.
        count: How many runs share this reason.
        reason: Why.
    """

    kind: str
    subject: str
    count: int
    reason: str


@dataclass
class ReportView:
    """Everything the report page shows, in order.

    Attributes:
        data: The rows it was chosen from.
        labels: Short label per cell key.
        pivots: One pivot per headline metric.
        comparisons: One-dimension pairs on the compared metrics.
        statistics: Whether intervals and tests came from the statistics tables.
        version_lines: Per (model, capability set) with MCP, accuracy per version on the runs
            every version scored.
        versions: The MCP versions, in order.
        costs: Cost and accuracy per cell.
        cost_axis: What the cost plot's x axis is.
        failure_modes: The failure modes (heat map columns).
        failure_cells: The heat map rows (cell keys).
        failure_shares: Share of scored runs with the mode, per row and column.
        problems: Quarantined tasks, skipped and errored runs, failed stages.
        calibration: The judge's calibration rows when the warehouse has them.
        totals: Counts for the header.
        languages: Per cell and task language, the headline means (empty without the
            statistics tables).
        language_tasks: Tasks run per language, in language order.
        features: Per toolset feature and MCP version pair, the paired accuracy comparison on
            the feature's tasks (empty without the statistics tables or task features).
        questions: Each evaluation type's question per factor, with its answer (empty without
            the statistics tables).
        history: Each cell's trend over the recorded experiments and the latest experiment
            against the previous one; None when no experiment is recorded.
    """

    data: ReportData
    labels: dict[str, str]
    pivots: list[Pivot]
    comparisons: list[Comparison]
    statistics: bool
    version_lines: list[VersionLine]
    versions: list[str]
    costs: list[CostRow]
    cost_axis: str
    failure_modes: list[str]
    failure_cells: list[str]
    failure_shares: list[list[float | None]]
    problems: list[Problem]
    calibration: list[Row] | None
    totals: dict[str, int] = field(default_factory=dict)
    languages: list[LanguageRow] = field(default_factory=list)
    language_tasks: dict[str, int] = field(default_factory=dict)
    features: list[FeatureComparison] = field(default_factory=list)
    questions: list[QuestionSection] = field(default_factory=list)
    history: HistoryView | None = None

    @property
    def power(self) -> Power:
        """The minimum detectable paired accuracy differences of the comparisons."""
        return accuracy_power(self.comparisons)

    def cost_points(self) -> list[CostPoint]:
        """The cost plot's points (cells with both coordinates)."""
        return _cost_points(self.costs, self.cost_axis, self.labels)


def _version_key(version: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in version.split("."))
    except ValueError:
        return (10**6,)


def _stored_estimate(cell_key: str, stats: Mapping[str, Any]) -> ReportedMean:
    """An estimate from its ``eval.metric_estimates`` row (the reason only when no interval)."""
    return ReportedMean(
        cell_key,
        stats["mean"],
        int(stats["n"]),
        int(stats["runs"]),
        stats["coverage"],
        stats["ci_low"],
        stats["ci_high"],
        stats["reason"] if stats["ci_low"] is None else None,
    )


def _estimate(data: ReportData, cell_key: str, metric: str) -> ReportedMean:
    stats = data.estimate(cell_key, metric)
    if stats is not None:
        return _stored_estimate(cell_key, stats)
    row = data.summary(cell_key, metric)
    runs = len(data.runs_of(cell_key))
    if row is None:
        return ReportedMean(cell_key, None, 0, runs, None)
    mean = row.get("mean")
    return ReportedMean(
        cell_key,
        None if mean is None else float(mean),
        int(row["scored"]),
        int(row["runs"]),
        None if row.get("coverage") is None else float(row["coverage"]),
    )


def task_languages(data: ReportData) -> dict[str, str]:
    """The prompt language of every task that was run (``unknown`` without its spec row)."""
    found = {str(run["task_id"]) for run in data.runs}
    return {
        task_id: str((data.tasks.get(task_id) or {}).get("language") or "unknown")
        for task_id in sorted(found)
    }


def language_task_counts(data: ReportData) -> dict[str, int]:
    """Tasks run per language, in language order."""
    counts = Counter(task_languages(data).values())
    return dict(sorted(counts.items()))


def _language_estimate(
    data: ReportData, cell_key: str, language: str, metric: str, runs: int
) -> ReportedMean:
    stats = data.language_estimate(cell_key, language, metric)
    if stats is None:
        return ReportedMean(cell_key, None, 0, runs, None)
    return _stored_estimate(cell_key, stats)


def language_rows(data: ReportData) -> list[LanguageRow]:
    """Each cell's accuracy and action F1 per task language, from the statistics tables.

    Empty without them: the per-language means exist only as ``cell_language`` estimates.
    """
    if not data.has_statistics:
        return []
    languages = task_languages(data)
    out = []
    for key in data.cells:
        runs_by_language: dict[str, list[Row]] = defaultdict(list)
        for run in data.runs_of(key):
            runs_by_language[languages[str(run["task_id"])]].append(run)
        for language, runs in sorted(runs_by_language.items()):
            out.append(
                LanguageRow(
                    cell_key=key,
                    language=language,
                    tasks=len({run["task_id"] for run in runs}),
                    accuracy=_language_estimate(data, key, language, "accuracy", len(runs)),
                    action_f1=_language_estimate(data, key, language, "action_f1", len(runs)),
                )
            )
    return out


def _row_name(cell: Row) -> tuple[str, str]:
    capability = str(cell["capability_set"])
    if cell.get("skills_version"):
        capability = capability.replace("skills", f"skills {cell['skills_version']}")
    return str(cell["model_name"]), capability


def _versions(data: ReportData) -> list[str]:
    found = {str(c["mcp_version"]) for c in data.cells.values() if c.get("mcp_version")}
    return sorted(found, key=_version_key)


def pivots(data: ReportData) -> list[Pivot]:
    """The pivot of each headline metric (minimal tier)."""
    versions = [*_versions(data), NO_VERSION]
    out = []
    for metric, title in PIVOT_METRICS:
        grouped: dict[tuple[str, str], list[list[ReportedMean]]] = {}
        for key, cell in data.cells.items():
            slots = grouped.setdefault(_row_name(cell), [[] for _ in versions])
            column = versions.index(str(cell["mcp_version"]) if cell.get("mcp_version") else "—")
            slots[column].append(_estimate(data, key, metric))
        rows = [PivotRow(model, caps, slots) for (model, caps), slots in sorted(grouped.items())]
        out.append(Pivot(metric, title, versions, rows))
    return out


def _order_key(dimension: str, value: str) -> tuple[Any, ...]:
    if dimension in {"mcp_version", "skills_version"}:
        return (0, _version_key(value))
    return (1, value)


def tested_comparisons(data: ReportData) -> list[Comparison]:
    """The paired tests of ``eval.comparisons`` on the compared metrics (minimal tier).

    Each pair once, A the older version (or the first value): the table holds both orders.
    """
    out = []
    for row in data.tests:
        if row["tier"] != HEADLINE_TIER or row["metric"] not in COMPARED_METRICS:
            continue
        value_a = str(row["value_a"] if row["value_a"] is not None else "none")
        value_b = str(row["value_b"] if row["value_b"] is not None else "none")
        key_a, key_b = _order_key(row["dimension"], value_a), _order_key(row["dimension"], value_b)
        if (key_a, row["cell_a"]) > (key_b, row["cell_b"]):
            continue
        out.append(
            Comparison(
                dimension=str(row["dimension"]),
                metric=str(row["metric"]),
                cell_a=str(row["cell_a"]),
                cell_b=str(row["cell_b"]),
                value_a=value_a,
                value_b=value_b,
                mean_a=row["mean_a"],
                mean_b=row["mean_b"],
                paired_tasks=int(row["tasks"] or 0),
                paired_delta=row["mean_difference"],
                low=row["ci_low"],
                high=row["ci_high"],
                p_adjusted=row["p_adjusted"],
                verdict=row["verdict"],
                mde=row["mde"],
                test=row["test"],
                pairs=int(row["pairs"] or 0),
                note=row["reason"],
                # .get: a warehouse written before these columns has none of them
                verdict_note=row.get("verdict_note"),
                mde_method=row.get("mde_method"),
                coverage_a=row.get("coverage_a"),
                coverage_b=row.get("coverage_b"),
                criterion_coverage_a=row.get("criterion_coverage_a"),
                criterion_coverage_b=row.get("criterion_coverage_b"),
                coverage_note=row.get("coverage_note"),
            )
        )
    return sorted(out, key=lambda c: (c.paired_tasks == 0, c.dimension, c.metric))


def _version_pairs(data: ReportData) -> list[Row]:
    """The ``eval.comparisons`` rows of cells differing only in the MCP version, once each.

    A is the older version; ordered by model and capability set, then by the versions.
    """
    pairs = []
    for row in data.tests:
        if (row["dimension"], row["tier"], row["metric"]) != (
            "mcp_version",
            HEADLINE_TIER,
            FEATURE_METRIC,
        ):
            continue
        key_a = _order_key("mcp_version", str(row["value_a"]))
        key_b = _order_key("mcp_version", str(row["value_b"]))
        if (key_a, row["cell_a"]) < (key_b, row["cell_b"]):
            pairs.append(row)
    return sorted(
        pairs,
        key=lambda r: (
            _row_name(data.cells[r["cell_a"]]),
            _order_key("mcp_version", str(r["value_a"])),
            _order_key("mcp_version", str(r["value_b"])),
        ),
    )


def feature_comparisons(data: ReportData) -> list[FeatureComparison]:
    """Every feature × MCP version pair: the paired accuracy test on the feature's tasks.

    A pair without a row in ``eval.feature_comparisons``, or with no task of the feature scored
    in both cells, is listed too, with :data:`NOT_EXERCISED`: an absent row must not read as
    "no difference found".
    """
    found = {
        (row["feature"], row["cell_a"], row["cell_b"]): row
        for row in data.feature_tests
        if row["tier"] == HEADLINE_TIER and row["metric"] == FEATURE_METRIC
    }
    names = sorted(set(data.features) | {feature for feature, _, _ in found})
    out = []
    for pair in _version_pairs(data):
        model, capability_set = _row_name(data.cells[pair["cell_a"]])
        for feature in names:
            row = found.get((feature, pair["cell_a"], pair["cell_b"]))
            unexercised = FeatureComparison(
                feature=feature,
                feature_tasks=len(data.features.get(feature, [])),
                cell_a=str(pair["cell_a"]),
                cell_b=str(pair["cell_b"]),
                model=f"{model} · {capability_set}",
                version_a=str(pair["value_a"]),
                version_b=str(pair["value_b"]),
                exercised=False,
                note=NOT_EXERCISED,
            )
            if row is None or not row["tasks"]:
                out.append(unexercised)
                continue
            out.append(
                dataclasses.replace(
                    unexercised,
                    exercised=True,
                    tasks=int(row["tasks"]),
                    difference=row["mean_difference"],
                    low=row["ci_low"],
                    high=row["ci_high"],
                    p_adjusted=row["p_adjusted"],
                    verdict=row["verdict"],
                    mde=row["mde"],
                    note=row["reason"],
                    verdict_note=row.get("verdict_note"),
                    coverage_note=row.get("coverage_note"),
                )
            )
    return sorted(out, key=lambda f: f.feature)


def comparisons(data: ReportData) -> list[Comparison]:
    """The one-dimension pairs of ``cell_comparison`` on the compared metrics (minimal tier).

    Pairs with tasks scored in both cells come first; the others cannot be compared.
    """
    out = []
    for row in data.comparisons:
        if row["tier"] != HEADLINE_TIER or row["metric"] not in COMPARED_METRICS:
            continue
        out.append(
            Comparison(
                dimension=str(row["dimension"]),
                metric=str(row["metric"]),
                cell_a=str(row["cell_a"]),
                cell_b=str(row["cell_b"]),
                value_a=str(row["value_a"] if row["value_a"] is not None else "none"),
                value_b=str(row["value_b"] if row["value_b"] is not None else "none"),
                mean_a=row["mean_a"],
                mean_b=row["mean_b"],
                paired_tasks=int(row["paired_tasks"] or 0),
                paired_delta=row["paired_delta"],
            )
        )
    return sorted(out, key=lambda c: (c.paired_tasks == 0, c.dimension, c.metric))


@dataclass(frozen=True)
class VersionLine:
    """One line of the "accuracy per MCP version" plot: its cells on the tasks they share.

    Attributes:
        label: Model and capability set.
        points: Mean accuracy per version over the paired runs, with its 95 % interval.
        paired: (task, repeat) pairs scored at every version of the line (the means rest on them).
        scored: Per version, the runs scored in the cell (what its headline mean rests on).
    """

    label: str
    points: list[VersionPoint]
    paired: int
    scored: dict[str, int]

    @property
    def caption(self) -> str:
        """Which runs the line's means rest on, and how many each cell has in all."""
        counts = ", ".join(f"{version}: {n}" for version, n in self.scored.items())
        if len(self.points) < 2:
            return f"{self.label}: one version, its {counts.split(': ')[-1]} scored runs"
        if not self.paired:
            return f"{self.label}: no run scored at every version ({counts}), nothing drawn"
        return (
            f"{self.label}: {self.paired} runs (task × repeat) scored at every version "
            f"(scored runs per version: {counts})"
        )


def version_lines(data: ReportData, versions: Sequence[str]) -> list[VersionLine]:
    """Accuracy per MCP version for each (model, capability set) with MCP, on paired runs.

    A line joins means over one set of runs only: the (task, repeat) pairs scored at every
    version of the line, as the paired tests pair them. Means over each cell's own runs would
    join different task sets (a version that skips the harder tasks would seem better).
    """
    grouped: dict[tuple[str, str], dict[str, dict[tuple[str, int], float]]] = defaultdict(dict)
    for key, cell in data.cells.items():
        version = cell.get("mcp_version")
        if not version:
            continue
        values = {}
        for run in data.runs_of(key):
            value = data.run_metric(run["run_id"], "accuracy")
            if value is not None:
                values[(str(run["task_id"]), int(run["repeat_index"]))] = value
        grouped[_row_name(cell)][str(version)] = values
    out = []
    for (model, caps), by_version in sorted(grouped.items()):
        ordered = sorted(by_version, key=versions.index)
        shared = set.intersection(*(set(by_version[v]) for v in ordered))
        points = []
        for version in ordered:
            keys = sorted(shared) if len(ordered) > 1 else sorted(by_version[version])
            result = st.estimate(
                [by_version[version][k] for k in keys], [k[0] for k in keys], bounded=True
            )
            points.append(VersionPoint(version, result.mean, result.ci_low, result.ci_high))
        out.append(
            VersionLine(
                f"{model} · {caps}",
                points,
                len(shared) if len(ordered) > 1 else 0,
                {v: len(by_version[v]) for v in ordered},
            )
        )
    return out


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def costs(data: ReportData) -> list[CostRow]:
    """Cost, correct answers and effort per cell."""
    out = []
    for key in data.cells:
        runs = data.runs_of(key)
        ran = [r for r in runs if r["status"] != "skipped"]
        priced = [r for r in runs if r["cost"] is not None]
        total = None
        if runs and len(priced) == len(runs):
            total = sum(float(r["cost"]) + float(r["judge_cost"] or 0.0) for r in runs)
        correct = sum(1 for r in runs if data.run_metric(r["run_id"], "accuracy") == 1.0)
        latencies = [float(r["effective_latency_ms"]) for r in ran if r["effective_latency_ms"]]
        out.append(
            CostRow(
                cell_key=key,
                runs=len(runs),
                priced_runs=len(priced),
                total_cost=total,
                correct=correct,
                cost_per_correct=total / correct if total is not None and correct else None,
                mean_accuracy=_estimate(data, key, "accuracy").mean,
                mean_latency_ms=_mean(latencies),
                mean_tokens=_mean([float(r["total_tokens"]) for r in ran]),
            )
        )
    return out


COST_AXIS = "mean cost per run"
LATENCY_AXIS = "mean effective latency per run (ms): no cell has a non-zero cost"


def _cost_points(rows: Sequence[CostRow], axis: str, labels: dict[str, str]) -> list[CostPoint]:
    points = []
    for row in rows:
        if row.mean_accuracy is None:
            continue
        if axis == COST_AXIS:
            if row.total_cost is None or not row.runs:
                continue
            x = row.total_cost / row.runs
        else:
            if row.mean_latency_ms is None:
                continue
            x = row.mean_latency_ms
        points.append(CostPoint(labels[row.cell_key], x, row.mean_accuracy))
    return points


def failure_matrix(data: ReportData) -> tuple[list[str], list[str], list[list[float | None]]]:
    """Failure modes (columns), cells (rows) and the share of scored runs showing each."""
    counts = [row for row in data.failure_counts if row["tier"] == HEADLINE_TIER]
    modes = sorted({str(row["mode"]) for row in counts})
    cells = sorted({str(row["cell_key"]) for row in counts})
    by_key = {(row["cell_key"], row["mode"]): row for row in counts}
    shares: list[list[float | None]] = []
    for cell in cells:
        line: list[float | None] = []
        for mode in modes:
            row = by_key.get((cell, mode))
            scored = 0 if row is None else int(row["present"]) + int(row["absent"])
            line.append(None if row is None or not scored else int(row["present"]) / scored)
        shares.append(line)
    return modes, cells, shares


UNSCORED_RUN = "unscored run"
"""The kind of a run that ended ok but has no accuracy (the judge or the rules decided nothing)."""


def problems(data: ReportData) -> list[Problem]:
    """Everything not scored, by reason.

    Quarantined tasks; runs that did not end ok and runs that ended ok without an accuracy
    (both per cell and reason); criteria of the headline tier left undecided (per verdict kind,
    status and reason, over all cells: the subject says how many); failed stages.
    """
    out = [
        Problem("quarantined", task_id, 1, reason)
        for task_id, reason in sorted(data.sources.quarantined.items())
    ]
    grouped: Counter[tuple[str, str, str]] = Counter()
    for run in data.runs:
        if run["status"] != "ok":
            grouped[
                (str(run["status"]), str(run["cell_key"]), str(run["status_reason"] or "—"))
            ] += 1
        elif data.run_metric(run["run_id"], "accuracy") is None:
            grouped[
                (UNSCORED_RUN, str(run["cell_key"]), _accuracy_reason(data, run["run_id"]))
            ] += 1
    out.extend(
        Problem(status, cell, count, reason)
        for (status, cell, reason), count in sorted(grouped.items())
    )
    undecided: Counter[tuple[str, str]] = Counter()
    cells: dict[tuple[str, str], set[str]] = defaultdict(set)
    for run in data.runs:
        for verdict in data.verdicts.get(str(run["run_id"]), []):
            if verdict["tier"] != HEADLINE_TIER or verdict["value"] is not None:
                continue
            key = (f"undecided {verdict['kind']}", f"{verdict['status']}: {verdict['reason']}")
            undecided[key] += 1
            cells[key].add(str(run["cell_key"]))
    out.extend(
        Problem(kind, f"{len(cells[(kind, reason)])} cell(s)", count, reason)
        for (kind, reason), count in sorted(undecided.items(), key=lambda i: (-i[1], i[0]))
    )
    out.extend(
        Problem(f"failed {f.stage}", f.cell_key, 1, f"{f.reason} (at {f.at})")
        for f in data.sources.failures
    )
    return out


def _accuracy_reason(data: ReportData, run_id: str) -> str:
    for row in data.metrics.get(run_id, []):
        if row["metric"] == "accuracy" and row["tier"] == HEADLINE_TIER:
            return str(row["reason"] or "no criterion decided")
    return "no accuracy row"


def problem_totals(found: Sequence[Problem]) -> dict[str, int]:
    """How many runs (or criteria) each kind of problem counts, largest first."""
    totals: Counter[str] = Counter()
    for p in found:
        totals[p.kind] += p.count
    return dict(sorted(totals.items(), key=lambda i: (-i[1], i[0])))


def _figure(value: Any) -> str:
    return "—" if value is None else f"{value:.3f}"


def calibration(data: ReportData) -> list[Row] | None:
    """The judges' agreement with the labels, per verdict kind (None when never computed).

    One row per judge, label set and kind (the latest computation): the labels it rests on (all,
    or blind ones only, and how they were produced), n (items the judge decided), coverage,
    Cohen's kappa with its 95 % bootstrap interval (none on fewer than 30 items: the note says
    so), and whether it reaches the kappa required before that judge's scores of that kind are
    used for decisions.
    """
    if not data.calibration:
        return None
    return [
        {
            "judge": row["judge_id"],
            "verdict kind": row["verdict_kind"],
            "labels": f"{row['label_set']} ({row['label_methods']})",
            "labelled items": row["items"],
            "n (decided)": row["scored"],
            "coverage": _figure(row["coverage"]),
            "kappa": _figure(row["kappa"]),
            "95 % CI": (
                "—"
                if row["ci_low"] is None
                else f"[{_figure(row['ci_low'])}, {_figure(row['ci_high'])}]"
            ),
            f"kappa >= {row['kappa_required']:.1f}": "yes" if row["meets_requirement"] else "no",
            "prompt hash": str(row["prompt_hash"])[:24],
            "note": row["reason"] or "",
        }
        for row in data.calibration
    ]


def build_view(data: ReportData) -> ReportView:
    """Choose every section's values from the data."""
    labels = {key: cell_label(cell) for key, cell in data.cells.items()}
    versions = _versions(data)
    cost_rows = costs(data)
    # Offline baselines cost 0: a plot of zeros says nothing, latency at least ranks the effort.
    axis = COST_AXIS if any(r.total_cost for r in cost_rows) else LATENCY_AXIS
    front = {p.label for p in pareto_front(_cost_points(cost_rows, axis, labels))}
    cost_rows = [
        CostRow(**{**row.__dict__, "on_front": labels[row.cell_key] in front}) for row in cost_rows
    ]
    modes, failure_cells, shares = failure_matrix(data)
    statuses: Counter[str] = Counter(str(run["status"]) for run in data.runs)
    totals: dict[str, Any] = {
        "cells": len(data.cells),
        "tasks": len({run["task_id"] for run in data.runs}),
        "runs": len(data.runs),
        **{f"runs_{status}": count for status, count in sorted(statuses.items())},
    }
    return ReportView(
        data=data,
        labels=labels,
        pivots=pivots(data),
        comparisons=tested_comparisons(data) if data.has_statistics else comparisons(data),
        statistics=data.has_statistics,
        version_lines=version_lines(data, versions),
        versions=versions,
        costs=cost_rows,
        cost_axis=axis,
        failure_modes=modes,
        failure_cells=failure_cells,
        failure_shares=shares,
        problems=problems(data),
        calibration=calibration(data),
        totals=totals,
        languages=language_rows(data),
        language_tasks=language_task_counts(data),
        features=feature_comparisons(data) if data.has_statistics else [],
        questions=question_sections(data) if data.has_statistics else [],
        history=history_view(data, labels),
    )
