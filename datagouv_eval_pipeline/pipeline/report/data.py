"""What the report reads: the warehouse tables, the dbt marts and what only the run store holds.

Everything comes from one read-only connection to the DuckDB file. The run store adds what the
warehouse does not keep (the trace's per-request usage and reasoning parts, quarantined tasks,
failed cell attempts) and the task specs and benchmark config add the prompt texts; each of
those is optional, and the pages say when it is missing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from datagouv_eval_pipeline.pipeline.warehouse import (
    EXPERIMENTS,
    FEATURE_COMPARISONS,
    GATE_RESULTS,
    JUDGE_CALIBRATION,
    METRICS_HISTORY,
    QUESTION_COMPARISONS,
    QUESTIONS,
    SCHEMA,
    TASK_FEATURES,
    TrendPoint,
    cell_trends,
    latest_calibration,
    latest_experiment,
    read_gate_results,
    track,
)

Row = dict[str, Any]
"""One row of a query, by column name."""

STATISTICS_TABLES = frozenset({f"{SCHEMA}.metric_estimates", f"{SCHEMA}.comparisons"})
JUDGE_CALIBRATION_TABLE = JUDGE_CALIBRATION.qualified
"""The statistics stage's tables the report reads (intervals, paired tests)."""

HEADLINE_TIER = "minimal"
"""The tier the headline views show (the optimal tier is in the per-cell tables)."""

TREND_METRICS = ("accuracy", "action_f1")
"""The headline scores the history section follows over the recorded experiments."""


class ReportInputError(RuntimeError):
    """The warehouse cannot feed the report (missing file or models): says what to run."""


@dataclass(frozen=True)
class CellFailure:
    """A failed attempt at one stage of one cell (its earlier results are kept).

    Attributes:
        cell_key: The cell.
        stage: The stage that failed.
        reason: Why.
        at: When (UTC, ISO 8601).
    """

    cell_key: str
    stage: str
    reason: str
    at: str


@dataclass(frozen=True)
class TraceDetail:
    """What the run store's trace holds beyond the warehouse rows.

    Attributes:
        requests: Per model request: input and output tokens, duration.
        reasoning: Reasoning parts the model returned.
        cited_urls: URLs the agent cites (structured output), if given.
        ids_used: Catalog ids the agent says it relied on, if given.
        turns: The model's responses in order (``text``, ``tool_call_ids``, ``final``); empty
            for traces written before they were recorded.
        shown_chars: Per tool call id, how much of its result the model was shown when it was
            cut for the model.
    """

    requests: list[Row] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    cited_urls: list[str] | None = None
    ids_used: list[str] | None = None
    turns: list[Row] = field(default_factory=list)
    shown_chars: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ReportSources:
    """The report's inputs besides the warehouse file; all optional.

    Attributes:
        prompts: Task prompt by ``(task_id, spec_hash)``; ``(task_id, "")`` for any version.
        system_prompts: System prompt text by its sha256.
        quarantined: Quarantined task id -> why (from the last pre-flight).
        failures: Failed stage attempts of cells.
        traces: Trace details by run id (from the run store's agent runs).
    """

    prompts: Mapping[tuple[str, str], str] = field(default_factory=dict)
    system_prompts: Mapping[str, str] = field(default_factory=dict)
    quarantined: Mapping[str, str] = field(default_factory=dict)
    failures: tuple[CellFailure, ...] = ()
    traces: Mapping[str, TraceDetail] = field(default_factory=dict)

    def prompt(self, task_id: str, spec_hash: str | None) -> str | None:
        """The prompt of that task version, else of any version, else None."""
        return self.prompts.get((task_id, spec_hash or "")) or self.prompts.get((task_id, ""))


@dataclass
class ReportData:
    """Every row the report and the browser show, grouped the way the pages use them.

    Attributes:
        db_path: The warehouse file.
        cells: ``eval.cells`` rows by cell key, in key order.
        tasks: ``eval.tasks`` rows by task id (the latest spec version).
        runs: ``eval.runs`` rows, ordered by cell, task, repeat.
        metrics: Per run id, its ``eval.metrics`` rows.
        verdicts: Per run id, its ``eval.verdicts`` rows.
        tool_calls: Per run id, its ``eval.tool_calls`` rows in call order.
        failure_modes: Per run id, its ``eval.failure_modes`` rows.
        summaries: ``experiment_metrics`` rows by (cell, tier, metric).
        failure_counts: ``failure_mode_counts`` rows (tier, then cell and mode).
        comparisons: ``cell_comparison`` rows (one order of each pair).
        estimates: ``eval.metric_estimates`` rows of scope ``cell`` (all languages) by
            (cell, tier, metric); empty when the statistics stage has not run.
        tests: ``eval.comparisons`` rows (both orders of each pair); empty likewise.
        tables: Every table and view name of the file, ``schema.name``.
        sources: The run store and config inputs.
        language_estimates: ``eval.metric_estimates`` rows of scope ``cell_language`` by
            (cell, task language, tier, metric); empty when the statistics stage has not run.
        calibration: The latest ``eval.judge_calibration`` row per judge and verdict kind.
        features: Toolset feature -> the tasks whose latest spec version exercises it
            (``eval.task_features``), sorted; empty without the table.
        feature_tests: ``eval.feature_comparisons`` rows of MCP version pairs (both orders);
            empty when the statistics stage has not run.
        questions: ``eval.questions`` rows (evaluation type × factor); empty when the
            statistics stage has not run.
        answers: ``eval.question_comparisons`` rows of the headline tier; empty likewise.
        experiments: ``eval.experiments`` rows, oldest first; empty without history.
        trends: Each experiment × cell's headline means with intervals (:data:`TREND_METRICS`,
            headline tier), from the history tables.
        gate: ``eval.gate_results`` rows of the latest experiment (empty when it was not
            checked).
    """

    db_path: Path
    cells: dict[str, Row]
    tasks: dict[str, Row]
    runs: list[Row]
    metrics: dict[str, list[Row]]
    verdicts: dict[str, list[Row]]
    tool_calls: dict[str, list[Row]]
    failure_modes: dict[str, list[Row]]
    summaries: dict[tuple[str, str, str], Row]
    failure_counts: list[Row]
    comparisons: list[Row]
    estimates: dict[tuple[str, str, str], Row]
    tests: list[Row]
    tables: frozenset[str]
    sources: ReportSources = field(default_factory=ReportSources)
    language_estimates: dict[tuple[str, str, str, str], Row] = field(default_factory=dict)
    calibration: list[Row] = field(default_factory=list)
    features: dict[str, list[str]] = field(default_factory=dict)
    feature_tests: list[Row] = field(default_factory=list)
    questions: list[Row] = field(default_factory=list)
    answers: list[Row] = field(default_factory=list)
    experiments: list[Row] = field(default_factory=list)
    trends: list[TrendPoint] = field(default_factory=list)
    gate: list[Row] = field(default_factory=list)

    def summary(self, cell_key: str, metric: str, tier: str = HEADLINE_TIER) -> Row | None:
        """The ``experiment_metrics`` row of one cell, tier and metric."""
        return self.summaries.get((cell_key, tier, metric))

    def language_estimate(
        self, cell_key: str, language: str, metric: str, tier: str = HEADLINE_TIER
    ) -> Row | None:
        """The ``eval.metric_estimates`` row of one cell on the tasks of one language."""
        return self.language_estimates.get((cell_key, language, tier, metric))

    def estimate(self, cell_key: str, metric: str, tier: str = HEADLINE_TIER) -> Row | None:
        """The ``eval.metric_estimates`` row of one cell, tier and metric (None without it)."""
        return self.estimates.get((cell_key, tier, metric))

    @property
    def has_statistics(self) -> bool:
        """Whether the statistics stage filled its tables for this warehouse."""
        return bool(self.estimates)

    def run_metric(self, run_id: str, metric: str, tier: str = HEADLINE_TIER) -> float | None:
        """One metric value of one run (None when unscored or absent)."""
        for row in self.metrics.get(run_id, []):
            if row["metric"] == metric and row["tier"] == tier:
                value = row["value"]
                return None if value is None else float(value)
        return None

    def runs_of(self, cell_key: str) -> list[Row]:
        """The runs of one cell, in task and repeat order."""
        return [run for run in self.runs if run["cell_key"] == cell_key]


def _rows(conn: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None) -> list[Row]:
    cursor = conn.execute(sql, params or [])
    names = [d[0] for d in cursor.description or []]
    return [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]


def _grouped(rows: list[Row], key: str = "run_id") -> dict[str, list[Row]]:
    out: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        out[str(row[key])].append(row)
    return dict(out)


def table_names(conn: duckdb.DuckDBPyConnection) -> frozenset[str]:
    """``schema.name`` of every table and view in the file."""
    found = conn.execute(
        "SELECT table_schema, table_name FROM information_schema.tables"
    ).fetchall()
    return frozenset(f"{schema}.{name}" for schema, name in found)


def model_table(tables: frozenset[str], name: str) -> str | None:
    """The quoted ``schema.name`` of a dbt model, wherever dbt put its schema; None if absent."""
    for qualified in sorted(tables):
        schema, _, table = qualified.partition(".")
        if table == name and schema != SCHEMA:
            return f'"{schema}"."{table}"'
    return None


def load_report_data(db_path: Path, sources: ReportSources | None = None) -> ReportData:
    """Read everything the report shows from the warehouse file (read-only).

    Raises:
        ReportInputError: The file or its tables or dbt models are missing.
    """
    if not db_path.exists():
        raise ReportInputError(
            f"{db_path}: no warehouse yet; run `./dev run` (or `datagouv-eval experiment`) first"
        )
    with track(duckdb.connect(str(db_path), read_only=True)) as conn:
        tables = table_names(conn)
        if f"{SCHEMA}.runs" not in tables:
            raise ReportInputError(f"{db_path}: no {SCHEMA}.runs table; load the warehouse first")
        models = {
            name: model_table(tables, name)
            for name in ("experiment_metrics", "failure_mode_counts", "cell_comparison")
        }
        missing = [name for name, table in models.items() if table is None]
        if missing:
            raise ReportInputError(
                f"{db_path}: no dbt model {', '.join(missing)}; run the dbt assets "
                "(`datagouv-eval experiment` builds them)"
            )
        cells = {
            row["cell_key"]: row
            for row in _rows(conn, f"SELECT * FROM {SCHEMA}.cells ORDER BY cell_key")
        }
        tasks = {
            row["task_id"]: row
            for row in _rows(
                conn,
                f"SELECT * FROM {SCHEMA}.tasks "
                "QUALIFY row_number() OVER (PARTITION BY task_id ORDER BY task_version DESC) = 1 "
                "ORDER BY task_id",
            )
        }
        runs = _rows(conn, f"SELECT * FROM {SCHEMA}.runs ORDER BY cell_key, task_id, repeat_index")
        metrics = _grouped(_rows(conn, f"SELECT * FROM {SCHEMA}.metrics ORDER BY run_id, metric"))
        verdicts = _grouped(
            _rows(conn, f"SELECT * FROM {SCHEMA}.verdicts ORDER BY run_id, tier, kind, name")
        )
        calls = _grouped(
            _rows(conn, f"SELECT * FROM {SCHEMA}.tool_calls ORDER BY run_id, call_index")
        )
        modes = _grouped(
            _rows(conn, f"SELECT * FROM {SCHEMA}.failure_modes ORDER BY run_id, tier, mode")
        )
        summaries = {
            (row["cell_key"], row["tier"], row["metric"]): row
            for row in _rows(conn, f"SELECT * FROM {models['experiment_metrics']}")
        }
        failure_counts = _rows(
            conn, f"SELECT * FROM {models['failure_mode_counts']} ORDER BY tier, cell_key, mode"
        )
        comparisons = _rows(
            conn,
            f"SELECT * FROM {models['cell_comparison']} WHERE cell_a < cell_b "
            "ORDER BY dimension, metric, tier, cell_a, cell_b",
        )
        estimates: dict[tuple[str, str, str], Row] = {}
        language_estimates: dict[tuple[str, str, str, str], Row] = {}
        tests: list[Row] = []
        if tables >= STATISTICS_TABLES:
            estimates = {
                (row["cell_key"], row["tier"], row["metric"]): row
                for row in _rows(
                    conn,
                    f"SELECT * FROM {SCHEMA}.metric_estimates "
                    "WHERE scope = 'cell' AND language = 'all'",
                )
            }
            language_estimates = {
                (row["cell_key"], row["language"], row["tier"], row["metric"]): row
                for row in _rows(
                    conn,
                    f"SELECT * FROM {SCHEMA}.metric_estimates WHERE scope = 'cell_language'",
                )
            }
            tests = _rows(
                conn,
                f"SELECT * FROM {SCHEMA}.comparisons ORDER BY dimension, metric, tier, cell_a",
            )
        calibration = latest_calibration(conn) if JUDGE_CALIBRATION_TABLE in tables else []
        features = _features(conn) if TASK_FEATURES.qualified in tables else {}
        feature_tests: list[Row] = []
        if tables >= STATISTICS_TABLES | {FEATURE_COMPARISONS.qualified}:
            feature_tests = _rows(
                conn,
                f"SELECT * FROM {FEATURE_COMPARISONS.qualified} WHERE dimension = 'mcp_version' "
                "ORDER BY feature, metric, tier, cell_a, cell_b",
            )
        questions: list[Row] = []
        answers: list[Row] = []
        if tables >= {QUESTIONS.qualified, QUESTION_COMPARISONS.qualified}:
            questions = _rows(
                conn, f"SELECT * FROM {QUESTIONS.qualified} ORDER BY evaluation_type, factor"
            )
            answers = _rows(
                conn,
                f"SELECT * FROM {QUESTION_COMPARISONS.qualified} WHERE tier = ? "
                "ORDER BY evaluation_type, factor, setting, value_a, value_b, metric",
                [HEADLINE_TIER],
            )
        experiments: list[Row] = []
        trends: list[TrendPoint] = []
        gate: list[Row] = []
        if tables >= {EXPERIMENTS.qualified, METRICS_HISTORY.qualified}:
            experiments = _rows(
                conn, f"SELECT * FROM {EXPERIMENTS.qualified} ORDER BY recorded_at, experiment_id"
            )
            trends = cell_trends(conn, TREND_METRICS, HEADLINE_TIER)
            latest = latest_experiment(conn)
            if latest is not None and GATE_RESULTS.qualified in tables:
                gate = read_gate_results(conn, latest)
    return ReportData(
        db_path=db_path,
        cells=cells,
        tasks=tasks,
        runs=runs,
        metrics=metrics,
        verdicts=verdicts,
        tool_calls=calls,
        failure_modes=modes,
        summaries=summaries,
        failure_counts=failure_counts,
        comparisons=comparisons,
        estimates=estimates,
        tests=tests,
        tables=tables,
        sources=sources or ReportSources(),
        language_estimates=language_estimates,
        calibration=calibration,
        features=features,
        feature_tests=feature_tests,
        questions=questions,
        answers=answers,
        experiments=experiments,
        trends=trends,
        gate=gate,
    )


def _features(conn: duckdb.DuckDBPyConnection) -> dict[str, list[str]]:
    """Feature -> the tasks exercising it in their latest spec version (as ``tasks`` lists)."""
    found = conn.execute(
        f"""
        SELECT f.feature, f.task_id
        FROM {TASK_FEATURES.qualified} AS f
        JOIN (
            SELECT task_id, spec_hash FROM {SCHEMA}.tasks
            QUALIFY row_number() OVER (PARTITION BY task_id ORDER BY task_version DESC) = 1
        ) AS latest USING (task_id, spec_hash)
        ORDER BY f.feature, f.task_id
        """
    ).fetchall()
    out: dict[str, list[str]] = {}
    for feature, task in found:
        out.setdefault(str(feature), []).append(str(task))
    return out
