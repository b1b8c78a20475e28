"""The report as Markdown, for the Dagster UI: the pivot, the comparisons, what was not scored.

It renders the same :class:`~datagouv_eval_pipeline.pipeline.report.views.ReportView` as the HTML
page,
shorter: plots and traces stay in the page and the results browser it links to.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from datagouv_eval_pipeline.pipeline.report.changes import METRIC_NAMES
from datagouv_eval_pipeline.pipeline.report.views import (
    POWER_TARGET,
    Comparison,
    FeatureComparison,
    Power,
    QuestionAnswer,
    ReportedMean,
    ReportView,
)

MAX_COMPARISONS = 40
"""Comparison rows shown in Markdown (the page has them all)."""


def _num(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _estimate(estimates: Sequence[ReportedMean]) -> str:
    if not estimates:
        return "·"
    parts = []
    for e in estimates:
        if e.mean is None:
            text = f"not scored (n=0/{e.runs})"
        else:
            interval = ""
            if e.low is not None and e.high is not None:
                interval = f" [{e.low:.2f}, {e.high:.2f}]"
            text = f"**{e.mean:.2f}**{interval} n={e.scored}/{e.runs}"
        parts.append(text)
    return "<br>".join(parts)


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _language_lines(view: ReportView) -> list[str]:
    """The per-language section: each cell's means on the tasks of each prompt language."""
    counts = ", ".join(f"{lang} {n}" for lang, n in view.language_tasks.items()) or "none"
    lines = ["", "## Per task language (minimal tier)", "", f"Tasks run per language: {counts}."]
    if not view.languages:
        lines += ["", "Absent: per-language means come from the statistics tables."]
        return lines
    lines += ["", "| cell | language | tasks | accuracy | action F1 |", "|---|---|---|---|---|"]
    for row in view.languages:
        lines.append(
            f"| {_escape(view.labels[row.cell_key])} | {row.language} | {row.tasks} | "
            f"{_estimate([row.accuracy])} | {_estimate([row.action_f1])} |"
        )
    return lines


MAX_FEATURE_ROWS = 80
"""By-feature rows shown in Markdown (the page has them all)."""
_NO_DIFFERENCE = 1e-9
"""A mean paired difference this small is floating-point noise around zero."""


def _coverage(c: Comparison) -> str:
    """Runs scored (and, for accuracy, criteria decided) by A and B: ``runs 100% / 83%``."""

    def pct(value: float | None) -> str:
        return "—" if value is None else f"{value:.0%}"

    parts = []
    if c.coverage_a is not None or c.coverage_b is not None:
        parts.append(f"runs {pct(c.coverage_a)} / {pct(c.coverage_b)}")
    if c.criterion_coverage_a is not None or c.criterion_coverage_b is not None:
        parts.append(f"criteria {pct(c.criterion_coverage_a)} / {pct(c.criterion_coverage_b)}")
    return ", ".join(parts) or "—"


def _feature_cells(f: FeatureComparison) -> list[str]:
    """The figures of one by-feature row (``—`` where the feature is not exercised)."""
    interval = "—" if f.low is None or f.high is None else f"[{f.low:+.2f}, {f.high:+.2f}]"
    return [
        "—" if f.difference is None else f"{f.difference:+.2f}",
        interval,
        _num(f.p_adjusted, 3),
        f.verdict or "—",
        str(f.tasks),
    ]


def _feature_lines(view: ReportView) -> list[str]:
    """The by-feature section: each feature's MCP version comparisons that show a difference.

    The default experiment has about 60 features × 9 version pairs, mostly without a difference
    or not exercised in both cells: Markdown lists the pairs with a measured difference (most
    significant first) and counts the others, which the HTML page lists with filters; features
    no pair exercises are named in one sentence.
    """
    lines = ["", "## By feature (accuracy, minimal tier)", ""]
    if not view.features:
        lines.append(
            "Absent: needs the statistics tables, task features (`meta.exercises`) and cells "
            "that differ only in the MCP version."
        )
        return lines
    exercised = {f.feature for f in view.features if f.exercised}
    pairs = [f for f in view.features if f.feature in exercised]
    differing = sorted(
        (f for f in pairs if f.difference is not None and abs(f.difference) > _NO_DIFFERENCE),
        key=lambda f: (1.0 if f.p_adjusted is None else f.p_adjusted, f.feature),
    )
    lines += [
        "Per toolset feature (`meta.exercises`), the paired accuracy difference B − A between "
        "two MCP versions on the tasks exercising it, where there is one (smallest p first); "
        "p Holm-adjusted within the feature.",
        "",
        "| feature | tasks | cells | versions | Δ | 95 % CI | p (Holm) | verdict | paired tasks "
        "| note |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for f in differing[:MAX_FEATURE_ROWS]:
        cells = [
            f.feature,
            str(f.feature_tasks),
            _escape(f.model),
            f"{f.version_a} → {f.version_b}",
            *_feature_cells(f),
            _escape(" ".join(n for n in (f.note, f.verdict_note, f.coverage_note) if n)),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    if len(differing) > MAX_FEATURE_ROWS:
        lines.append(f"\n{len(differing) - MAX_FEATURE_ROWS} more rows in the HTML page.")
    same = sum(1 for f in pairs if f.exercised and f not in differing)
    unpaired = sum(1 for f in pairs if not f.exercised)
    lines += [
        "",
        f"Not listed (each on the HTML page): {same} feature × version pair(s) with no "
        f"difference on their paired tasks, {unpaired} in which no task of the feature is scored "
        "in both cells (no difference expected / not exercised).",
    ]
    never = sorted({f.feature for f in view.features} - exercised)
    if never:
        lines += [
            "",
            "No difference expected / not exercised by any version pair (no task of the feature "
            f"is scored in both cells): {', '.join(never)}.",
        ]
    return lines


def history_lines(view: ReportView) -> list[str]:
    """The history section: the gate's decision, each cell's change, each cell's trend."""
    lines = ["", "## History", ""]
    h = view.history
    if h is None:
        return [*lines, "No experiment recorded: there is no earlier run to compare with."]
    current = h.current or {}
    lines.append(
        f"{len(h.experiments)} experiment(s) recorded; the latest is "
        f"`{current.get('experiment_id')}` ({current.get('recorded_at')})."
    )
    lines += ["", h.decision or "The regression gate has not checked the latest experiment."]
    if h.setup:
        lines += ["", "What changed in the setup: " + "; ".join(h.setup) + "."]
    if h.first_run:
        names = ", ".join(view.labels.get(k, k) for k in h.first_run)
        lines += ["", f"Run for the first time (nothing to compare): {_escape(names)}."]
    if h.world_changed:
        lines += ["", "Not compared, the world changed under the same cell key:", ""]
        lines += [
            f"- {_escape(view.labels.get(cell, cell))}: {_escape(reason)}"
            for cell, reason in h.world_changed
        ]
    shown = [c for c in h.changes if c.failed or c.verdict in ("better", "worse")]
    quiet = sum(1 for c in h.changes if c not in shown and c.verdict is not None)
    unpaired = len(h.changes) - len(shown) - quiet
    if h.changes:
        lines += [
            "",
            f"{len(shown)} comparison(s) with a difference (listed), {quiet} with no detectable "
            f"difference, {unpaired} without a verdict (no pair, or not comparable); every one "
            "is on the HTML page.",
        ]
    if shown:
        lines += [
            "",
            "| cell | metric | tier | before | now | Δ | 95 % CI | p (Holm) | verdict | pairs "
            "| gate |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for c in shown:
            interval = "—" if c.low is None or c.high is None else f"[{c.low:+.2f}, {c.high:+.2f}]"
            cells = [
                _escape(view.labels.get(c.cell_key, c.cell_key)),
                METRIC_NAMES.get(c.metric, c.metric),
                c.tier,
                _num(c.previous),
                _num(c.current),
                "—" if c.difference is None else f"{c.difference:+.2f}",
                interval,
                _num(c.p_adjusted, 3),
                c.verdict or "—",
                str(c.pairs),
                "fails" if c.failed else "passes",
            ]
            lines.append("| " + " | ".join(cells) + " |")
    trend = h.series.get("accuracy", [])
    if len(h.experiments) > 1 and trend:
        lines += ["", "Accuracy per cell over the recorded experiments (oldest first):", ""]
        for label, points in trend:
            values = " → ".join(_num(p.mean) for p in points)
            lines.append(f"- {_escape(label)}: {values}")
        if h.task_notes:
            lines += ["", "Not the same tasks at every point: " + "; ".join(h.task_notes) + "."]
    return lines


def power_sentence(power: Power) -> str:
    """One sentence on the minimum detectable paired accuracy difference of the experiment."""
    if power.median is None:
        return (
            f"No accuracy comparison has a minimum detectable difference: of {power.comparisons} "
            "pairs with tasks scored in both cells, none has outcomes that differ between tasks "
            "enough for its test to reach 5 % (too few discordant pairs or paired tasks)."
        )
    return (
        f"Minimum detectable paired difference in accuracy at 80 % power: median "
        f"**{power.median:.2f}** (from {power.low:.2f} to {power.high:.2f}) over "
        f"{power.with_mde} of {power.comparisons} pairs of cells, on a median of "
        f"{power.median_tasks:.0f} paired tasks; {power.within_target} at or below the "
        f"target {POWER_TARGET:.2f}. The other {power.comparisons - power.with_mde} pairs have "
        "no power figure: the same outcome on every paired task, or too few discordant pairs or "
        "paired tasks for their test to reach 5 % at all."
    )


def tasks_needed(difference: float, mde: float, tasks: int) -> int | None:
    """Paired tasks a difference of this size needs to reach 80 % power, or None.

    The MDE is a multiple of the paired difference's standard error, which shrinks as
    ``1/√n``: the MDE falls to ``|difference|`` at about ``n · (mde / |difference|)²`` tasks
    (same spread of per-task differences assumed).
    """
    if difference == 0 or tasks <= 0:
        return None
    return math.ceil(tasks * (mde / abs(difference)) ** 2)


def version_power_lines(view: ReportView) -> list[str]:
    """Why an MCP version comparison of accuracy shows no detectable difference.

    One sentence per such pair with an MDE: the observed paired difference against the MDE
    at 80 % power, and about how many paired tasks a difference of that size would need.
    """
    lines = []
    for c in view.comparisons:
        if (
            c.dimension != "mcp_version"
            or c.metric != "accuracy"
            or c.verdict != "no detectable difference"
            or c.mde is None
            or c.paired_delta is None
        ):
            continue
        head = (
            f"{view.labels[c.cell_a]} vs {view.labels[c.cell_b]}: observed Δ "
            f"{c.paired_delta:+.3f} on {c.paired_tasks} paired tasks, MDE {c.mde:.3f} at 80 % "
            "power"
        )
        needed = tasks_needed(c.paired_delta, c.mde, c.paired_tasks)
        if needed is None:
            lines.append(f"{head}; no difference observed, so no task count would show one.")
        elif abs(c.paired_delta) >= c.mde:
            lines.append(
                f"{head}; the difference exceeds the MDE but not the Holm-adjusted threshold "
                f"(p {_num(c.p_adjusted, 3)}): the other comparisons of the family raise it."
            )
        else:
            lines.append(
                f"{head}; a difference of this size needs about {needed} paired tasks to be "
                "detected at the unadjusted 5 % level, more under Holm's adjustment (the MDE "
                "shrinks as 1/√tasks)."
            )
    return lines


def _answer_cells(a: QuestionAnswer) -> list[str]:
    """The figures of one answer row (``—`` where nothing was scored in both cells)."""
    interval = "—" if a.low is None or a.high is None else f"[{a.low:+.2f}, {a.high:+.2f}]"
    return [
        _escape(a.setting),
        f"{_escape(a.value_a)} → {_escape(a.value_b)}",
        a.metric,
        "—" if a.difference is None else f"{a.difference:+.2f}",
        interval,
        _num(a.p_adjusted, 3),
        a.verdict or "—",
        _num(a.mde),
        str(a.tasks),
        _escape(a.note or ""),
    ]


def question_lines(view: ReportView) -> list[str]:
    """The opening sections: each evaluation type's question, per factor, and its answer."""
    lines = ["", "## The benchmark's questions (minimal tier)", ""]
    if not view.questions:
        lines.append(
            "Absent: the answers come from the statistics tables (`eval.questions`), which this "
            "warehouse does not have yet."
        )
        return lines
    lines.append(
        "Each evaluation type asks one question and varies one or more factors; each factor is "
        "answered by pairing the type's cells that differ in it only. Δ is B − A over the tasks "
        "scored in both cells, with its 95 % interval; p is Holm-adjusted within the question "
        "(type × factor × metric); the verdict is B against A at 5 %; below the MDE (80 % "
        "power), *no detectable difference* does not mean *no difference*."
    )
    unrun = [q for q in view.questions if q.cells == 0]
    for q in view.questions:
        if q.cells == 0:
            continue
        lines += [
            "",
            f"### {q.evaluation_type}: {q.factor}",
            "",
            f"*{_escape(q.question)}* Compares {q.varies}, over the type's {q.cells} cells.",
            "",
        ]
        if not q.answers:
            lines.append(f"Cannot be answered: {q.reason}.")
            continue
        lines += [
            "| setting | A → B | metric | Δ | 95 % CI | p (Holm) | verdict | MDE | paired tasks "
            "| note |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        lines += ["| " + " | ".join(_answer_cells(a)) + " |" for a in q.answers]
    if unrun:
        names = ", ".join(f"{q.evaluation_type} ({q.factor})" for q in unrun)
        lines += ["", f"Not run (no cell of the type in the warehouse): {names}."]
    return lines


def render_markdown(view: ReportView, *, html_path: str | None = None) -> str:
    """The report's Markdown (``—``: not scored, never a zero)."""
    totals = view.totals
    lines = ["# Experiment report", ""]
    lines.append(
        f"{totals.get('cells', 0)} cells × {totals.get('tasks', 0)} tasks, "
        f"{totals.get('runs', 0)} runs. Means over scored runs; n = scored runs / runs."
    )
    if html_path:
        lines += ["", f"Full report with plots and the results browser: `{html_path}`."]
    if not view.statistics:
        lines += [
            "",
            "> No statistics tables in the warehouse yet: means without intervals, comparisons "
            "without tests or verdicts.",
        ]
    lines += history_lines(view)
    lines += question_lines(view)
    for pivot in view.pivots:
        lines += ["", f"## {pivot.title} (minimal tier)", ""]
        heads = ["no MCP" if v == "—" else f"MCP {v}" for v in pivot.versions]
        lines.append("| model | capabilities | " + " | ".join(heads) + " |")
        lines.append("|---|---|" + "---|" * len(heads))
        for row in pivot.rows:
            slots = " | ".join(_estimate(slot) for slot in row.slots)
            lines.append(f"| {_escape(row.model)} | {_escape(row.capability_set)} | {slots} |")
    lines += _language_lines(view)
    if view.statistics:
        lines += ["", "## Power (accuracy, minimal tier)", "", power_sentence(view.power)]
    lines += ["", "## Comparisons (one dimension differs, minimal tier)", ""]
    header = "| dimension | metric | A | B | mean A | mean B | paired Δ | tasks |"
    if view.statistics:
        header += " 95 % CI | p (Holm) | MDE | verdict | coverage A / B | note |"
    lines += [header, "|" + "---|" * (header.count("|") - 1)]
    for c in view.comparisons[:MAX_COMPARISONS]:
        cells = [
            c.dimension,
            c.metric,
            _escape(view.labels[c.cell_a]),
            _escape(view.labels[c.cell_b]),
            _num(c.mean_a),
            _num(c.mean_b),
            "—" if c.paired_delta is None else f"{c.paired_delta:+.2f}",
            str(c.paired_tasks),
        ]
        if view.statistics:
            interval = "—" if c.low is None or c.high is None else f"[{c.low:+.2f}, {c.high:+.2f}]"
            note = " ".join(n for n in (c.verdict_note, c.coverage_note) if n)
            cells += [
                interval,
                _num(c.p_adjusted, 3),
                _num(c.mde),
                c.verdict or "—",
                _coverage(c),
                _escape(note),
            ]
        lines.append("| " + " | ".join(cells) + " |")
    if len(view.comparisons) > MAX_COMPARISONS:
        lines.append(f"\n{len(view.comparisons) - MAX_COMPARISONS} more pairs in the HTML page.")
    notes = version_power_lines(view)
    if notes:
        lines += ["", "Why some MCP version pairs show no detectable difference:", ""]
        lines += [f"- {_escape(note)}" for note in notes]
    lines += _feature_lines(view)
    if view.version_lines:
        lines += [
            "",
            "## Accuracy per MCP version (paired runs, minimal tier)",
            "",
            "Each line's means are over the (task, repeat) pairs scored at every MCP version of "
            "the line, as the paired tests pair them, never over different task sets.",
            "",
        ]
        for line in view.version_lines:
            means = ", ".join(f"{p.version} {_num(p.mean)}" for p in line.points)
            lines.append(f"- {_escape(line.caption)}: {means}")
    lines += ["", "## Not scored", ""]
    if view.problems:
        lines += ["| kind | cell or task | runs | reason |", "|---|---|---|---|"]
        for p in view.problems:
            subject = view.labels.get(p.subject, p.subject)
            lines.append(f"| {p.kind} | {_escape(subject)} | {p.count} | {_escape(p.reason)} |")
    else:
        lines.append("Every run ended ok; no task is quarantined; no stage failed.")
    lines += ["", "## Judge calibration", ""]
    if view.calibration:
        keys = list(view.calibration[0])
        lines += ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
        for figures in view.calibration:
            lines.append("| " + " | ".join(_escape(str(figures[k])) for k in keys) + " |")
        lines += [
            "",
            "A judge's scores of a verdict kind are used for decisions only once its kappa "
            "reaches 0.8, on at least 30 labelled items (fewer: no kappa, the note says why). "
            "`labels` names the label set (all, or blind ones only) and how its labels were "
            "produced (written, verdict-shown, blind-review).",
        ]
    else:
        lines.append("Absent: the warehouse holds no judge calibration results.")
    return "\n".join(lines) + "\n"
