"""The regression gate: each cell's latest run against its previous run, paired by task.

A change ships when the scores are at or above the previous run's, per language and per model.
For every cell of the checked experiment, each headline metric × tier is compared with the
previous experiment that loaded the same cell key (or a named one), on the (task, repeat) pairs
scored in both, over all tasks and per task language. A comparison fails when the paired test,
Holm-adjusted within the cell, finds a drop (verdict ``worse``) of at least ``min_drop``.
A cell seen for the first time has nothing to be compared with and passes, with that reason.

The gate compares like with like. A score the judge decides (``source = 'judge'`` in
``eval.metrics``, and the efficiencies computed from the accuracy) is compared only when both runs
of the cell had the same judge id and judge prompt hash(es) and their criterion coverage (criteria
scored / criteria total in the tier) is within ``coverage_tolerance``. Otherwise the comparison is
*not comparable*, with the reason ("judge changed: X → Y", "coverage fell from 0.62 to 0.00"): it
gets no verdict, never fails, stays out of the cell's Holm family, and the cell's outcome is "not
comparable" unless another of its comparisons failed. A judge outage (every verdict unscored) thus
reads as what it is, not as an agent regression; scores the judge does not decide (action F1,
trajectory adherence, runs scored) are still compared.

The gate also compares like worlds. When the two runs of a cell met another world (the catalog
snapshot the twin served, ``eval.runs.snapshot_id``, or the code of the twin and the toolsets
the cell reaches, ``eval.runs.toolset_version``), none of the cell's comparisons is comparable:
the cell's outcome is "not comparable: the world changed", with what changed. A twin that now
serves resources for every dataset changes the agent's answers under the same cell key; that is
not the agent's regression. Runs recorded before ``toolset_version`` existed (NULL) are compared
on their snapshot alone.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import duckdb

from datagouv_eval_pipeline.core.metrics import registry
from datagouv_eval_pipeline.core.metrics import statistics as st
from datagouv_eval_pipeline.pipeline.warehouse.error_bars import language_sql, replace_rows
from datagouv_eval_pipeline.pipeline.warehouse.history import (
    experiment_exists,
    latest_experiment,
    previous_runs_of_cells,
)
from datagouv_eval_pipeline.pipeline.warehouse.schema import (
    GATE_RESULTS,
    METRICS_HISTORY,
    RUNS_HISTORY,
    SCHEMA,
)

HEADLINE_METRICS = ("accuracy", "action_f1", "trajectory_adherence")
"""The scores the gate guards by default."""

COVERAGE_TOLERANCE = 0.10
"""Largest change in criterion coverage between two runs of a cell that still compares them."""

JUDGE_DERIVED = registry.USES_JUDGE
"""Scorer metrics computed from the judge's accuracy (compared like judge metrics)."""

PASSED, WORSE, NOT_COMPARABLE = "passed", "worse", "not comparable"
"""A cell's outcome: no failed and no incomparable comparison; a failed one; else incomparable."""
WORLD_CHANGED = "not comparable: the world changed"
"""A cell's outcome when its two runs met another snapshot or other twin/toolset code."""

SCORED = "scored"
"""The gate's own 0/1 outcome per run (tier ``all``): whether the run was scored at all.

Failed runs have NULL scores, which pair with nothing: without this outcome a toolset that
breaks every run would leave no pair to compare and pass the gate."""


class GateError(ValueError):
    """The gate cannot run (no experiment recorded, unknown experiment id)."""


@dataclass(frozen=True, slots=True)
class GateSettings:
    """What the gate checks and how strict it is.

    Attributes:
        metrics: Headline metrics compared.
        tiers: Tiers compared.
        alpha: Significance level of the Holm-adjusted paired test.
        min_drop: Smallest drop (in the metric's unit) that may fail the gate; a significant
            drop below it passes.
        scored: Also compare the share of runs scored (:data:`SCORED`).
        coverage_tolerance: Largest absolute change in a tier's criterion coverage between the
            two runs for which the judge's scores are still compared.
    """

    metrics: tuple[str, ...] = HEADLINE_METRICS
    tiers: tuple[str, ...] = ("minimal", "optimal")
    alpha: float = st.ALPHA
    min_drop: float = 0.0
    scored: bool = True
    coverage_tolerance: float = COVERAGE_TOLERANCE


@dataclass(frozen=True, slots=True)
class GateComparison:
    """One row of ``eval.gate_results`` (see its column docs)."""

    experiment_id: str
    previous_experiment_id: str | None
    cell_key: str
    model_name: str
    tier: str
    metric: str
    language: str
    pairs: int
    mean_previous: float | None
    mean_current: float | None
    mean_difference: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    p_adjusted: float | None
    verdict: st.Verdict | None
    failed: bool
    comparable: bool
    coverage_previous: float | None
    coverage_current: float | None
    reason: str | None
    world_changed: bool = False


@dataclass(frozen=True)
class GateReport:
    """The gate's verdict for one experiment.

    Attributes:
        experiment_id: The experiment checked.
        against: The experiment every cell was compared with, when forced (``--against``).
        comparisons: One entry per cell × tier × metric × language.
        settings: The settings used.
    """

    experiment_id: str
    against: str | None
    comparisons: list[GateComparison] = field(default_factory=list)
    settings: GateSettings = field(default_factory=GateSettings)

    @property
    def failed_cells(self) -> list[str]:
        """Cells with at least one failed comparison, sorted."""
        return sorted({c.cell_key for c in self.comparisons if c.failed})

    @property
    def not_comparable_cells(self) -> list[str]:
        """Cells without a failed comparison but with one that is not comparable, sorted."""
        failed = set(self.failed_cells)
        return sorted({c.cell_key for c in self.comparisons if not c.comparable} - failed)

    @property
    def world_changed_cells(self) -> list[str]:
        """Cells whose two runs met another world (never failed: none of them compared)."""
        return sorted({c.cell_key for c in self.comparisons if c.world_changed})

    def cell_outcome(self, cell: str) -> str:
        """One cell's outcome: worse, the world changed, not comparable, else passed."""
        mine = [c for c in self.comparisons if c.cell_key == cell]
        if any(c.failed for c in mine):
            return WORSE
        if any(c.world_changed for c in mine):
            return WORLD_CHANGED
        return NOT_COMPARABLE if any(not c.comparable for c in mine) else PASSED

    @property
    def passed(self) -> bool:
        """True when no comparison failed (incomparable ones do not fail)."""
        return not self.failed_cells

    @property
    def outcome(self) -> str:
        """The gate's outcome: worse, else not comparable, else passed."""
        if self.failed_cells:
            return WORSE
        return NOT_COMPARABLE if self.not_comparable_cells else PASSED

    @property
    def cells(self) -> list[str]:
        """Every cell checked, sorted."""
        return sorted({c.cell_key for c in self.comparisons})


_PAIRS_SQL = f"""
SELECT h.experiment_id, h.cell_key, r.model_name, h.task_id, h.repeat_index, h.tier, h.metric,
       h.value, h.bounded, l.language
FROM {METRICS_HISTORY.qualified} AS h
JOIN {RUNS_HISTORY.qualified} AS r USING (experiment_id, run_id)
JOIN ({language_sql(RUNS_HISTORY.qualified)}) AS l USING (experiment_id, run_id)
WHERE h.experiment_id IN (SELECT unnest(?)) AND h.metric IN (SELECT unnest(?))
  AND h.tier IN (SELECT unnest(?))
"""

_SCORED_SQL = f"""
SELECT r.experiment_id, r.cell_key, r.model_name, r.task_id, r.repeat_index, 'all', '{SCORED}',
       CASE WHEN r.scored THEN 1.0 ELSE 0.0 END, TRUE, l.language
FROM {RUNS_HISTORY.qualified} AS r
JOIN ({language_sql(RUNS_HISTORY.qualified)}) AS l USING (experiment_id, run_id)
WHERE r.experiment_id IN (SELECT unnest(?)) AND r.status <> 'skipped'
"""

_JUDGES_SQL = f"""
SELECT experiment_id, cell_key,
       string_agg(DISTINCT judge_id, ',' ORDER BY judge_id),
       array_to_string(
           list_sort(list_distinct(list_filter(
               flatten(list(string_split(judge_prompt_hash, ','))
                   FILTER (WHERE judge_prompt_hash IS NOT NULL)),
               lambda h: h <> ''
           ))),
           ','
       )
FROM {RUNS_HISTORY.qualified}
WHERE experiment_id IN (SELECT unnest(?)) AND judged
GROUP BY experiment_id, cell_key
"""

_COVERAGE_SQL = f"""
SELECT experiment_id, cell_key, tier,
       sum(value) FILTER (WHERE metric = 'criteria_scored')
       / nullif(sum(value) FILTER (WHERE metric = 'criteria_total'), 0)
FROM {METRICS_HISTORY.qualified}
WHERE experiment_id IN (SELECT unnest(?)) AND metric IN ('criteria_scored', 'criteria_total')
GROUP BY experiment_id, cell_key, tier
"""

_WORLDS_SQL = f"""
SELECT experiment_id, cell_key,
       list_sort(list_distinct(list(coalesce(snapshot_id, 'live')))),
       list_sort(list_distinct(list(toolset_version) FILTER (WHERE toolset_version IS NOT NULL)))
FROM {RUNS_HISTORY.qualified}
WHERE experiment_id IN (SELECT unnest(?)) AND status <> 'skipped'
GROUP BY experiment_id, cell_key
"""

_JUDGED_SQL = f"""
SELECT DISTINCT metric FROM {METRICS_HISTORY.qualified}
WHERE experiment_id IN (SELECT unnest(?)) AND source = 'judge'
"""


@dataclass(frozen=True, slots=True)
class _Judging:
    """Who judged each (experiment, cell) and the criterion coverage per tier."""

    judges: dict[tuple[str, str], tuple[str | None, str | None]]
    coverage: dict[tuple[str, str, str], float | None]
    judge_metrics: frozenset[str]
    worlds: dict[tuple[str, str], tuple[list[str], list[str]]] = field(default_factory=dict)
    """(experiment, cell) -> (snapshot ids, 'live' for none; toolset versions known)."""

    def world_change(self, before: str, current: str, cell: str) -> str | None:
        """What differs between the worlds the two runs of a cell met; None when nothing does.

        An unknown toolset version (runs recorded before it was) compares nothing.
        """
        then, now = self.worlds.get((before, cell)), self.worlds.get((current, cell))
        if then is None or now is None:
            return None
        changes = []
        if then[0] != now[0]:
            changes.append(f"snapshot {_listed(then[0])} → {_listed(now[0])}")
        if then[1] and now[1] and then[1] != now[1]:
            short = [_listed([v[:12] for v in side]) for side in (then[1], now[1])]
            changes.append(f"twin/toolset code {short[0]} → {short[1]}")
        return "; ".join(changes) or None

    def coverage_of(self, experiment: str | None, cell: str, tier: str) -> float | None:
        if experiment is None:
            return None
        return self.coverage.get((experiment, cell, tier))

    def incomparable(
        self, before: str, current: str, cell: str, tier: str, tolerance: float
    ) -> str | None:
        """Why the judge's scores of the two runs are not comparable; None when they are."""
        then = self.judges.get((before, cell), (None, None))
        now = self.judges.get((current, cell), (None, None))
        if then[0] != now[0]:
            return f"judge changed: {then[0] or 'none'} → {now[0] or 'none'}"
        if then[1] != now[1]:
            return f"judge prompt changed: {then[1] or 'none'} → {now[1] or 'none'}"
        old = self.coverage_of(before, cell, tier)
        new = self.coverage_of(current, cell, tier)
        if old is None or new is None or abs(new - old) <= tolerance + 1e-12:
            return None
        moved = "fell" if new < old else "rose"
        return (
            f"coverage {moved} from {old:.2f} to {new:.2f} "
            f"(more than the tolerance {tolerance:.2f})"
        )


def _judging(conn: duckdb.DuckDBPyConnection, experiments: list[str]) -> _Judging:
    judges = {
        (exp, cell): (judge, prompt)
        for exp, cell, judge, prompt in conn.execute(_JUDGES_SQL, [experiments]).fetchall()
    }
    coverage = {
        (exp, cell, tier): value
        for exp, cell, tier, value in conn.execute(_COVERAGE_SQL, [experiments]).fetchall()
    }
    metrics = {row[0] for row in conn.execute(_JUDGED_SQL, [experiments]).fetchall()}
    worlds = {
        (exp, cell): (list(snapshots or []), list(toolsets or []))
        for exp, cell, snapshots, toolsets in conn.execute(_WORLDS_SQL, [experiments]).fetchall()
    }
    return _Judging(judges, coverage, frozenset(metrics | JUDGE_DERIVED), worlds)


def _listed(values: list[str]) -> str:
    return ",".join(values) or "none"


def evaluate_gate(
    conn: duckdb.DuckDBPyConnection,
    experiment_id: str | None = None,
    *,
    against: str | None = None,
    settings: GateSettings | None = None,
) -> GateReport:
    """Compare each cell of an experiment with its previous run (or with ``against``).

    Args:
        conn: The warehouse.
        experiment_id: The experiment checked; default the latest recorded.
        against: Compare every cell with this experiment instead of its own previous run.
        settings: Metrics, tiers and thresholds.

    Returns:
        The report (not written anywhere; see :func:`write_gate_results`).

    Raises:
        GateError: Without any recorded experiment, or for an unknown id.
    """
    settings = settings or GateSettings()
    current = experiment_id or latest_experiment(conn)
    if current is None:
        raise GateError("no experiment recorded in eval.experiments: run the pipeline first")
    for name in (current, against):
        if name is not None and not experiment_exists(conn, name):
            raise GateError(f"unknown experiment {name!r}: see eval.experiments")
    previous = previous_runs_of_cells(conn, current)
    if against is not None:
        previous = dict.fromkeys(previous, against)
    wanted = sorted({current, *(p for p in previous.values() if p is not None)})
    rows = conn.execute(
        _PAIRS_SQL, [wanted, list(settings.metrics), list(settings.tiers)]
    ).fetchall()
    if settings.scored:
        rows += conn.execute(_SCORED_SQL, [wanted]).fetchall()
    # (experiment, cell) -> (tier, metric) -> (task, repeat) -> (value, bounded, language)
    values: dict[tuple[str, str], dict[tuple[str, str], dict[tuple[str, int], Any]]] = {}
    models: dict[str, str] = {}
    for exp, cell, model, task, repeat, tier, metric, value, bounded, language in rows:
        models.setdefault(cell, model)
        per_cell = values.setdefault((exp, cell), {})
        per_cell.setdefault((tier, metric), {})[(task, repeat)] = (value, bounded, language)
    judging = _judging(conn, wanted)
    comparisons: list[GateComparison] = []
    for cell, before in sorted(previous.items()):
        comparisons += _compare_cell(
            current, before, cell, models.get(cell, ""), values, settings, judging
        )
    return GateReport(current, against, comparisons, settings)


def _compare_cell(
    current: str,
    before: str | None,
    cell: str,
    model: str,
    values: dict[tuple[str, str], dict[tuple[str, str], dict[tuple[str, int], Any]]],
    settings: GateSettings,
    judging: _Judging,
) -> list[GateComparison]:
    now = values.get((current, cell), {})
    then = values.get((before, cell), {}) if before is not None else {}
    drafts: list[dict[str, Any]] = []
    world = judging.world_change(before, current, cell) if before is not None else None
    measures = [(tier, metric) for tier in settings.tiers for metric in settings.metrics]
    if settings.scored:
        measures.append(("all", SCORED))
    for tier, metric in measures:
        series_now = now.get((tier, metric), {})
        if not series_now:
            continue
        series_then = then.get((tier, metric), {})
        incomparable = None
        if world is not None:
            incomparable = f"the world changed: {world}"
        elif before is not None and metric in judging.judge_metrics:
            incomparable = judging.incomparable(
                before, current, cell, tier, settings.coverage_tolerance
            )
        keys = sorted(series_now.keys() & series_then.keys())
        languages = sorted({series_now[k][2] for k in keys})
        for language in ["all", *languages] if len(languages) > 1 else ["all"]:
            chosen = [k for k in keys if language in ("all", series_now[k][2])]
            result = st.paired_comparison(
                [series_then[k][0] for k in chosen],
                [series_now[k][0] for k in chosen],
                [k[0] for k in chosen],
                bounded=all(series_now[k][1] for k in chosen),
            )
            reason = result.reason
            if before is None:
                reason = "first run of this cell: nothing to compare with"
            elif not series_then:
                reason = f"experiment {before} has no {metric} ({tier}) for this cell"
            elif incomparable is not None:
                reason = f"not comparable: {incomparable}"
            drafts.append(
                {
                    "tier": tier,
                    "metric": metric,
                    "language": language,
                    "result": result,
                    "reason": reason,
                    "comparable": incomparable is None or not series_then,
                }
            )
    # Incomparable comparisons stay out of the cell's Holm family: they decide nothing.
    family = [d for d in drafts if d["comparable"]]
    adjusted = dict(
        zip(map(id, family), st.holm_adjust([d["result"].p_value for d in family]), strict=True)
    )
    out = []
    for draft in drafts:
        result = draft["result"]
        p_adjusted = adjusted.get(id(draft))
        better = st.higher_is_better(draft["metric"])
        verdict = (
            st.verdict(
                result.mean_difference, p_adjusted, higher_is_better=better, alpha=settings.alpha
            )
            if draft["comparable"]
            else None
        )
        drop = abs(result.mean_difference or 0.0)
        failed = verdict == st.WORSE and drop >= settings.min_drop
        out.append(
            GateComparison(
                experiment_id=current,
                previous_experiment_id=before,
                cell_key=cell,
                model_name=model,
                tier=draft["tier"],
                metric=draft["metric"],
                language=draft["language"],
                pairs=result.pairs,
                mean_previous=result.mean_a,
                mean_current=result.mean_b,
                mean_difference=result.mean_difference,
                ci_low=result.ci_low,
                ci_high=result.ci_high,
                p_value=result.p_value,
                p_adjusted=p_adjusted,
                verdict=verdict,
                failed=failed,
                comparable=draft["comparable"],
                coverage_previous=judging.coverage_of(before, cell, draft["tier"]),
                coverage_current=judging.coverage_of(current, cell, draft["tier"]),
                reason=draft["reason"],
                world_changed=world is not None and not draft["comparable"],
            )
        )
    return out


def write_gate_results(conn: duckdb.DuckDBPyConnection, report: GateReport) -> int:
    """Replace the experiment's rows of ``eval.gate_results`` with the report's."""
    rows = [asdict(c) for c in report.comparisons]
    conn.begin()
    try:
        replace_rows(conn, GATE_RESULTS, rows, "experiment_id = ?", [report.experiment_id])
        conn.commit()
    except BaseException:
        conn.rollback()
        raise
    return len(rows)


def read_gate_results(
    conn: duckdb.DuckDBPyConnection, experiment_id: str | None = None
) -> list[dict[str, Any]]:
    """Rows of ``eval.gate_results`` for an experiment (default: the latest one checked)."""
    where = (
        "experiment_id = ?"
        if experiment_id
        else (
            f"experiment_id = (SELECT experiment_id FROM {SCHEMA}.experiments "
            f"WHERE experiment_id IN (SELECT experiment_id FROM {GATE_RESULTS.qualified}) "
            "ORDER BY recorded_at DESC LIMIT 1)"
        )
    )
    cursor = conn.execute(
        f"SELECT * FROM {GATE_RESULTS.qualified} WHERE {where} ORDER BY ALL",
        [experiment_id] if experiment_id else [],
    )
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def summary_lines(report: GateReport, *, limit: int = 50) -> list[str]:
    """Human-readable lines: the verdict, each failed comparison, each incomparable one."""
    if report.against is None and all(c.previous_experiment_id is None for c in report.comparisons):
        # Nothing was compared: "PASSED against each cell's previous run" would claim a check.
        return [
            f"gate: nothing to compare for experiment {report.experiment_id}: "
            f"each of its {len(report.cells)} cell(s) runs for the first time"
        ]
    word = {PASSED: "PASSED", WORSE: "FAILED", NOT_COMPARABLE: "NOT COMPARABLE"}[report.outcome]
    lines = [
        f"gate {word} for experiment {report.experiment_id}"
        + (f" against {report.against}" if report.against else " against each cell's previous run")
        + f": {len(report.failed_cells)} of {len(report.cells)} cell(s) worse, "
        f"{len(report.not_comparable_cells)} not comparable"
        + (
            f" ({len(report.world_changed_cells)} because the world changed)"
            if report.world_changed_cells
            else ""
        )
        + f" (alpha {report.settings.alpha}, min drop {report.settings.min_drop}, "
        f"coverage tolerance {report.settings.coverage_tolerance})"
    ]
    failed = [c for c in report.comparisons if c.failed]
    for c in failed[:limit]:
        lines.append(
            f"  {c.cell_key} {c.tier} {c.metric} [{c.language}]: "
            f"{_f(c.mean_previous)} -> {_f(c.mean_current)} "
            f"(diff {_f(c.mean_difference, '+.3f')}, "
            f"95% CI [{_f(c.ci_low, '+.3f')}, {_f(c.ci_high, '+.3f')}], "
            f"n={c.pairs}, p_adj={_f(c.p_adjusted, '.4f')})"
        )
    # One line per cell whose world changed: every one of its comparisons says the same.
    for cell in report.world_changed_cells[:limit]:
        why = (c.reason for c in report.comparisons if c.cell_key == cell and c.world_changed)
        reason = next(why)
        lines.append(f"  {cell}: {reason}")
    incomparable = [c for c in report.comparisons if not c.comparable and not c.world_changed]
    for c in incomparable[:limit]:
        lines.append(f"  {c.cell_key} {c.tier} {c.metric} [{c.language}]: {c.reason}")
    first = sum(1 for c in report.comparisons if c.previous_experiment_id is None)
    if first:
        lines.append(f"  {first} comparison(s) of cells run for the first time: nothing to compare")
    return lines


def _f(value: float | None, spec: str = ".3f") -> str:
    return "NULL" if value is None else format(value, spec)
