"""The statistics stage: error bars and paired comparisons from the loaded tables.

Reads the latest run of each cell (``eval.metrics`` with the cells' dimensions and the tasks'
languages) and writes, in one transaction, replacing the previous figures:

* ``eval.metric_estimates``: n, coverage, mean, clustered standard error and 95 % interval of
  every averaged metric, per cell, per cell × task language, per capability set and per
  model × capability set × MCP version × language (the groupings of the dbt marts);
* ``eval.comparisons``: every pair of cells that differ in exactly one dimension, paired by
  (task, repeat), with the test, the Holm-adjusted p-value within the family
  (dimension × metric × tier), the verdict and the minimum detectable effect;
* ``eval.feature_estimates`` and ``eval.feature_comparisons``: the same two, restricted for each
  toolset feature (``eval.task_features``, the tasks' ``meta.exercises``) to the runs of the
  tasks exercising it, so that a version comparison can be read feature by feature (Holm within
  feature × dimension × metric × tier);
* ``eval.questions`` and ``eval.question_comparisons``: each evaluation type's question, for
  each factor it compares, answered by pairing the type's cells that differ in that factor only
  (:mod:`~datagouv_eval_pipeline.pipeline.warehouse.questions`), Holm within the question.

The arithmetic lives in :mod:`datagouv_eval_pipeline.core.metrics.statistics`.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import duckdb

from datagouv_eval_pipeline.core.benchmark import EvaluationType, load_benchmark_config
from datagouv_eval_pipeline.core.metrics import statistics as st
from datagouv_eval_pipeline.pipeline.warehouse.questions import (
    Question,
    question_rows,
    questions_of,
    read_question_cells,
)
from datagouv_eval_pipeline.pipeline.warehouse.schema import (
    COMPARISONS,
    FEATURE_COMPARISONS,
    FEATURE_ESTIMATES,
    METRIC_ESTIMATES,
    QUESTION_COMPARISONS,
    QUESTIONS,
    SCHEMA,
    Table,
)

DIMENSIONS = ("model", "capability_set", "mcp_version", "skills_version", "system_prompt")
"""The coordinates of a cell a comparison may differ in (one at a time)."""
FEATURE_DIMENSIONS = ("mcp_version", "skills_version")
"""The dimensions of the by-feature comparisons: changes of the toolset the features belong to."""


def language_sql(runs: str) -> str:
    """SQL giving ``run_id, language`` (plus ``experiment_id`` for history tables) of ``runs``.

    The task row with the run's spec hash, else the task's latest version, else ``unknown``
    (the rule of the dbt model ``stg_runs``).
    """
    history = runs.endswith("_history")
    key = "r.experiment_id, r.run_id" if history else "r.run_id"
    return f"""
        SELECT {key}, coalesce(t.language, 'unknown') AS language
        FROM {runs} AS r
        LEFT JOIN {SCHEMA}.tasks AS t ON t.task_id = r.task_id
        QUALIFY row_number() OVER (
            PARTITION BY {key}
            ORDER BY (t.spec_hash = r.spec_hash) DESC NULLS LAST, t.task_version DESC NULLS LAST
        ) = 1
    """


def _task_version_sql(runs: str) -> str:
    """SQL giving ``cell_key, task_id, repeat_index, spec_hash`` of the task row of each run.

    The same rule as :func:`language_sql`: the run's spec hash, else the task's latest version.
    """
    return f"""
        SELECT r.cell_key, r.task_id, r.repeat_index, t.spec_hash
        FROM {runs} AS r
        JOIN {SCHEMA}.tasks AS t ON t.task_id = r.task_id
        QUALIFY row_number() OVER (
            PARTITION BY r.run_id
            ORDER BY (t.spec_hash = r.spec_hash) DESC NULLS LAST, t.task_version DESC NULLS LAST
        ) = 1
    """


_FEATURES_SQL = f"""
SELECT v.cell_key, v.task_id, v.repeat_index, f.feature
FROM ({_task_version_sql(f"{SCHEMA}.runs")}) AS v
JOIN {SCHEMA}.task_features AS f USING (task_id, spec_hash)
ORDER BY f.feature
"""

RunKey = tuple[str, str, int]
"""(cell key, task id, repeat index) of one run."""


class _Value(NamedTuple):
    cell_key: str
    task_id: str
    repeat_index: int
    tier: str
    metric: str
    value: float | None
    bounded: bool
    model_provider: str
    model_name: str
    capability_set: str
    mcp_version: str | None
    skills_version: str | None
    system_prompt: str
    language: str


_VALUES_SQL = f"""
SELECT m.cell_key, m.task_id, m.repeat_index, m.tier, m.metric, m.value, m.bounded,
       c.model_provider, c.model_name, c.capability_set, c.mcp_version, c.skills_version,
       c.system_prompt, l.language
FROM {SCHEMA}.metrics AS m
JOIN {SCHEMA}.cells AS c USING (cell_key)
JOIN ({language_sql(f"{SCHEMA}.runs")}) AS l USING (run_id)
WHERE m.aggregation = 'avg'
"""


@dataclass(frozen=True, slots=True)
class StatisticsResult:
    """What the statistics stage wrote.

    Attributes:
        estimates: Rows of ``eval.metric_estimates``.
        comparisons: Rows of ``eval.comparisons`` (both orders of each pair).
        significant: Comparisons (one order) whose verdict is better or worse.
        feature_estimates: Rows of ``eval.feature_estimates``.
        feature_comparisons: Rows of ``eval.feature_comparisons`` (both orders of each pair).
        questions: Rows of ``eval.questions`` (evaluation type × factor).
        question_comparisons: Rows of ``eval.question_comparisons`` (one order of each pair).
    """

    estimates: int
    comparisons: int
    significant: int
    feature_estimates: int = 0
    feature_comparisons: int = 0
    questions: int = 0
    question_comparisons: int = 0


def _scopes(v: _Value) -> Iterator[tuple[str, tuple[Any, ...]]]:
    """(scope, group dimensions) of one value: cell_key, provider, model, set, version, language."""
    yield (
        "cell",
        (v.cell_key, v.model_provider, v.model_name, v.capability_set, v.mcp_version, "all"),
    )
    yield "cell_language", (
        v.cell_key, v.model_provider, v.model_name, v.capability_set, v.mcp_version, v.language
    )  # fmt: skip
    yield "capability_set", (None, None, None, v.capability_set, None, "all")
    yield "language", (
        None, v.model_provider, v.model_name, v.capability_set, v.mcp_version, v.language
    )  # fmt: skip


def _group_key(scope: str, dims: tuple[Any, ...]) -> str:
    cell, provider, model, capability_set, version, language = dims
    parts = {
        "cell": [cell],
        "cell_language": [cell, language],
        "capability_set": [capability_set],
        "language": [provider, model, capability_set, version or "", language],
    }[scope]
    return "|".join(parts)


def estimate_rows(values: Sequence[_Value]) -> list[dict[str, Any]]:
    """``eval.metric_estimates`` rows of the given per-run values (pure)."""
    groups: dict[tuple[Any, ...], list[_Value]] = {}
    for v in values:
        for scope, dims in _scopes(v):
            groups.setdefault((scope, dims, v.tier, v.metric), []).append(v)
    rows = []
    for (scope, dims, tier, metric), members in groups.items():
        bounded = all(m.bounded for m in members)
        result = st.estimate(
            [m.value for m in members], [m.task_id for m in members], bounded=bounded
        )
        cell, provider, model, capability_set, version, language = dims
        rows.append(
            {
                "scope": scope,
                "group_key": _group_key(scope, dims),
                "cell_key": cell,
                "model_provider": provider,
                "model_name": model,
                "capability_set": capability_set,
                "mcp_version": version,
                "language": language,
                "tier": tier,
                "metric": metric,
                **_estimate_columns(result, bounded),
            }
        )
    return rows


def _estimate_columns(result: st.Estimate, bounded: bool) -> dict[str, Any]:
    """The columns every estimate table shares (n, mean, SE, interval...) of one estimate."""
    return {
        "runs": result.runs,
        "n": result.n,
        "tasks": result.tasks,
        "coverage": result.coverage,
        "mean": result.mean,
        "std_error": result.std_error,
        "ci_low": result.ci_low,
        "ci_high": result.ci_high,
        "interval_method": result.method,
        "binary_outcome": result.binary,
        "clustered": result.clustered,
        "bounded": bounded,
        "reason": result.reason,
    }


def _by_feature(
    values: Sequence[_Value], features: Mapping[RunKey, Sequence[str]]
) -> dict[str, list[_Value]]:
    """The values of the runs of the tasks exercising each feature, by feature (sorted)."""
    out: dict[str, list[_Value]] = {}
    for v in values:
        for feature in features.get((v.cell_key, v.task_id, v.repeat_index), ()):
            out.setdefault(feature, []).append(v)
    return dict(sorted(out.items()))


def feature_estimate_rows(
    values: Sequence[_Value], features: Mapping[RunKey, Sequence[str]]
) -> list[dict[str, Any]]:
    """``eval.feature_estimates`` rows: per cell × feature × tier × metric (pure).

    Args:
        values: Per-run metric values (:func:`read_values`).
        features: The features of each run's task (:func:`read_features`); a run whose task
            exercises no feature counts in no row.

    Returns:
        One row per group, the estimate of :func:`metrics.statistics.estimate`.
    """
    rows = []
    for feature, subset in _by_feature(values, features).items():
        groups: dict[tuple[str, str, str], list[_Value]] = {}
        for v in subset:
            groups.setdefault((v.cell_key, v.tier, v.metric), []).append(v)
        for (cell, tier, metric), members in groups.items():
            bounded = all(m.bounded for m in members)
            result = st.estimate(
                [m.value for m in members], [m.task_id for m in members], bounded=bounded
            )
            first = members[0]
            rows.append(
                {
                    "cell_key": cell,
                    "feature": feature,
                    "model_provider": first.model_provider,
                    "model_name": first.model_name,
                    "capability_set": first.capability_set,
                    "mcp_version": first.mcp_version,
                    "tier": tier,
                    "metric": metric,
                    **_estimate_columns(result, bounded),
                }
            )
    return rows


def feature_comparison_rows(
    values: Sequence[_Value],
    features: Mapping[RunKey, Sequence[str]],
    *,
    alpha: float = st.ALPHA,
) -> list[dict[str, Any]]:
    """``eval.feature_comparisons`` rows: :func:`comparison_rows` on each feature's runs (pure).

    Each feature is its own set of families (feature × dimension × metric × tier) for the Holm
    adjustment: a reader looks at one feature's comparisons at a time. A pair of cells of which
    one never ran a task of the feature has no row (nothing to pair). Only the toolset dimensions
    (:data:`FEATURE_DIMENSIONS`) are compared: a feature is read against a change of the toolset,
    and comparing every other pair too made the statistics stage take 16 s instead of 5.5 s
    on the default experiment.
    """
    rows = []
    for feature, subset in _by_feature(values, features).items():
        rows += [
            {"feature": feature, **row}
            for row in comparison_rows(subset, alpha=alpha, dimensions=FEATURE_DIMENSIONS)
        ]
    return rows


class _Cell(NamedTuple):
    key: str
    coordinates: dict[str, str | None]


def _differing(a: _Cell, b: _Cell) -> str | None:
    """The one dimension two cells differ in, or None (none or several)."""
    differ = [d for d in DIMENSIONS if a.coordinates[d] != b.coordinates[d]]
    return differ[0] if len(differ) == 1 else None


def comparison_rows(
    values: Sequence[_Value],
    *,
    alpha: float = st.ALPHA,
    dimensions: Sequence[str] = DIMENSIONS,
) -> list[dict[str, Any]]:
    """``eval.comparisons`` rows (both orders of each one-dimension pair) of the values (pure).

    Args:
        values: The per-run metric values.
        alpha: The significance level of the verdicts.
        dimensions: The dimensions whose pairs are compared (a pair differing in another one
            has no row).
    """
    cells: dict[str, _Cell] = {}
    series: dict[tuple[str, str, str], dict[tuple[str, int], float | None]] = {}
    bounded: dict[tuple[str, str], bool] = {}
    for v in values:
        cells.setdefault(
            v.cell_key,
            _Cell(
                v.cell_key,
                {
                    "model": f"{v.model_provider}/{v.model_name}",
                    "capability_set": v.capability_set,
                    "mcp_version": v.mcp_version,
                    "skills_version": v.skills_version,
                    "system_prompt": v.system_prompt,
                },
            ),
        )
        series.setdefault((v.cell_key, v.tier, v.metric), {})[(v.task_id, v.repeat_index)] = v.value
        bounded[(v.tier, v.metric)] = bounded.get((v.tier, v.metric), True) and v.bounded
    measures = sorted({(tier, metric) for _, tier, metric in series})
    families: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for a, b in itertools.combinations(sorted(cells.values()), 2):
        dimension = _differing(a, b)
        if dimension is None or dimension not in dimensions:
            continue
        for tier, metric in measures:
            left, right = series.get((a.key, tier, metric)), series.get((b.key, tier, metric))
            if left is None or right is None:
                continue
            result, criteria = _compare_runs(
                series, a.key, b.key, tier, metric, left, right, bounded=bounded[(tier, metric)]
            )
            families.setdefault((dimension, metric, tier), []).append(
                _comparison_row(a, b, dimension, tier, metric, result, criterion_coverage=criteria)
            )
    rows: list[dict[str, Any]] = []
    for family in families.values():
        for row in settle_family(family, alpha=alpha):
            rows += [row, _reversed(row)]
    return rows


def settle_family(family: list[dict[str, Any]], *, alpha: float) -> list[dict[str, Any]]:
    """Holm-adjust one family of comparison rows and give each its verdict and note (in place).

    Args:
        family: The rows compared together (one dimension or question, one metric and tier).
        alpha: The significance level of the verdicts.

    Returns:
        The same rows, with ``family_size``, ``p_adjusted``, ``verdict`` and ``verdict_note``.
    """
    adjusted = st.holm_adjust([row["p_value"] for row in family])
    size = sum(1 for row in family if row["p_value"] is not None)
    for row, p_adjusted in zip(family, adjusted, strict=True):
        row["family_size"] = size
        row["p_adjusted"] = p_adjusted
        row["verdict"] = st.verdict(
            row["mean_difference"],
            p_adjusted,
            higher_is_better=row["higher_is_better"],
            alpha=alpha,
        )
        row["verdict_note"] = st.verdict_note(
            row["p_value"],
            p_adjusted,
            row["ci_low"],
            row["ci_high"],
            size,
            row["verdict"],
            test=row["test"],
            alpha=alpha,
        )
    return family


def _compare_runs(
    series: Mapping[tuple[str, str, str], Mapping[tuple[str, int], float | None]],
    cell_a: str,
    cell_b: str,
    tier: str,
    metric: str,
    left: Mapping[tuple[str, int], float | None],
    right: Mapping[tuple[str, int], float | None],
    *,
    bounded: bool,
) -> tuple[st.PairedComparison, tuple[float | None, float | None]]:
    """The paired test of two cells' runs of one measure, on the runs both scored.

    For accuracy, also each side's criterion coverage on those runs.
    """
    keys = sorted(left.keys() & right.keys())
    result = st.paired_comparison(
        [left[k] for k in keys], [right[k] for k in keys], [k[0] for k in keys], bounded=bounded
    )
    criteria = (
        _criterion_coverage(series, cell_a, cell_b, tier, keys, left, right)
        if metric == "accuracy"
        else (None, None)
    )
    return result, criteria


def _criterion_coverage(
    series: Mapping[tuple[str, str, str], Mapping[tuple[str, int], float | None]],
    cell_a: str,
    cell_b: str,
    tier: str,
    keys: Sequence[tuple[str, int]],
    left: Mapping[tuple[str, int], float | None],
    right: Mapping[tuple[str, int], float | None],
) -> tuple[float | None, float | None]:
    """Mean ``accuracy_coverage`` of each side over the runs whose accuracy both scored."""
    compared = [k for k in keys if left[k] is not None and right[k] is not None]
    out: list[float | None] = []
    for cell in (cell_a, cell_b):
        coverage = series.get((cell, tier, "accuracy_coverage"), {})
        decided = [v for k in compared if (v := coverage.get(k)) is not None]
        out.append(sum(decided) / len(decided) if decided else None)
    return out[0], out[1]


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _comparison_row(
    a: _Cell,
    b: _Cell,
    dimension: str,
    tier: str,
    metric: str,
    result: st.PairedComparison,
    *,
    criterion_coverage: tuple[float | None, float | None] = (None, None),
) -> dict[str, Any]:
    coverage_a, coverage_b = (
        _share(result.scored_a, result.runs),
        _share(result.scored_b, result.runs),
    )
    note = st.coverage_note(coverage_a, coverage_b, *criterion_coverage)
    return {
        "cell_a": a.key,
        "cell_b": b.key,
        "dimension": dimension,
        "value_a": a.coordinates[dimension],
        "value_b": b.coordinates[dimension],
        "tier": tier,
        "metric": metric,
        "higher_is_better": st.higher_is_better(metric),
        "pairs": result.pairs,
        "tasks": result.tasks,
        "mean_a": result.mean_a,
        "mean_b": result.mean_b,
        "mean_difference": result.mean_difference,
        "std_error": result.std_error,
        "ci_low": result.ci_low,
        "ci_high": result.ci_high,
        "test": result.test,
        "p_value": result.p_value,
        "mde": result.mde,
        "mde_method": result.mde_method,
        "reason": result.reason,
        "runs": result.runs,
        "coverage_a": coverage_a,
        "coverage_b": coverage_b,
        "criterion_coverage_a": criterion_coverage[0],
        "criterion_coverage_b": criterion_coverage[1],
        "coverage_differs": note is not None,
        "coverage_note": note,
        "verdict_note": None,
    }


def _negate(value: float | None) -> float | None:
    return None if value is None else -value


def _reversed(row: dict[str, Any]) -> dict[str, Any]:
    """The same comparison seen from b: a and b swapped, the difference negated."""
    return row | {
        "cell_a": row["cell_b"],
        "cell_b": row["cell_a"],
        "value_a": row["value_b"],
        "value_b": row["value_a"],
        "mean_a": row["mean_b"],
        "mean_b": row["mean_a"],
        "mean_difference": _negate(row["mean_difference"]),
        "ci_low": _negate(row["ci_high"]),
        "ci_high": _negate(row["ci_low"]),
        "verdict": st.mirrored(row["verdict"]),
        "coverage_a": row["coverage_b"],
        "coverage_b": row["coverage_a"],
        "criterion_coverage_a": row["criterion_coverage_b"],
        "criterion_coverage_b": row["criterion_coverage_a"],
        "coverage_note": st.coverage_note(
            row["coverage_b"],
            row["coverage_a"],
            row["criterion_coverage_b"],
            row["criterion_coverage_a"],
        ),
    }


def question_comparison_rows(
    values: Sequence[_Value], questions: Sequence[Question], *, alpha: float = st.ALPHA
) -> list[dict[str, Any]]:
    """``eval.question_comparisons`` rows: each question's pairs, compared (pure).

    Every pair of :func:`questions.questions_of` (cells differing in the question's factor
    only) is compared on every tier × metric any of the type's cells has, with the paired test
    of :func:`comparison_rows`; a pair nothing was scored in both cells of keeps its row, with the
    reason. The Holm family is the question: evaluation type × factor × metric × tier.

    Args:
        values: The per-run metric values (:func:`read_values`).
        questions: The questions and their pairs.
        alpha: The significance level of the verdicts.

    Returns:
        One row per question × pair × tier × metric, b against the reference a.
    """
    series: dict[tuple[str, str, str], dict[tuple[str, int], float | None]] = {}
    bounded: dict[tuple[str, str], bool] = {}
    for v in values:
        series.setdefault((v.cell_key, v.tier, v.metric), {})[(v.task_id, v.repeat_index)] = v.value
        bounded[(v.tier, v.metric)] = bounded.get((v.tier, v.metric), True) and v.bounded
    rows: list[dict[str, Any]] = []
    for question in questions:
        members = {cell.key for cell in question.cells}
        measures = sorted({(tier, metric) for key, tier, metric in series if key in members})
        factor = str(question.factor)
        families: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for a, b in question.pairs:
            left_cell = _Cell(a.key, {factor: a.value(question.factor)})
            right_cell = _Cell(b.key, {factor: b.value(question.factor)})
            for tier, metric in measures:
                left = series.get((a.key, tier, metric), {})
                right = series.get((b.key, tier, metric), {})
                result, criteria = _compare_runs(
                    series, a.key, b.key, tier, metric, left, right, bounded=bounded[(tier, metric)]
                )
                row = _comparison_row(
                    left_cell, right_cell, factor, tier, metric, result, criterion_coverage=criteria
                )
                del row["dimension"]
                families.setdefault((metric, tier), []).append(
                    {
                        "evaluation_type": question.evaluation_type,
                        "factor": factor,
                        "setting": a.setting(question.factor),
                        **row,
                    }
                )
        for family in families.values():
            rows += settle_family(family, alpha=alpha)
    return rows


def read_values(conn: duckdb.DuckDBPyConnection) -> list[_Value]:
    """Every averaged metric value of the latest run of each cell, with its dimensions."""
    return [_Value(*row) for row in conn.execute(_VALUES_SQL).fetchall()]


def read_features(conn: duckdb.DuckDBPyConnection) -> dict[RunKey, list[str]]:
    """The features (``eval.task_features``) of each run's task version, sorted, by run."""
    out: dict[RunKey, list[str]] = {}
    for cell, task, repeat, feature in conn.execute(_FEATURES_SQL).fetchall():
        out.setdefault((cell, task, repeat), []).append(feature)
    return out


def replace_rows(
    conn: duckdb.DuckDBPyConnection,
    table: Table,
    rows: list[dict[str, Any]],
    where: str = "TRUE",
    parameters: Sequence[Any] = (),
) -> None:
    """Delete ``table``'s rows matching ``where`` and insert ``rows`` through one DataFrame."""
    conn.execute(f"DELETE FROM {table.qualified} WHERE {where}", list(parameters))
    if not rows:
        return
    # pandas (about 1 s to import) only where rows are written: the code location imports this.
    import pandas as pd  # type: ignore[import-untyped]

    frame = pd.DataFrame({name: [row[name] for row in rows] for name in table.column_names})
    view = f"_stats_{table.name}"
    conn.register(view, frame)
    try:
        conn.execute(f"INSERT INTO {table.qualified} BY NAME SELECT * FROM {view}")
    finally:
        conn.unregister(view)


def compute_statistics(
    conn: duckdb.DuckDBPyConnection, evaluation_types: Sequence[EvaluationType] | None = None
) -> StatisticsResult:
    """Recompute estimates and comparisons (overall, per feature, per question) in one transaction.

    Args:
        conn: The warehouse.
        evaluation_types: The questions to answer; default: the project's benchmark
            configuration (``task_specs/benchmark/evaluation_types.yml``).
    """
    values = read_values(conn)
    features = read_features(conn)
    if evaluation_types is None:
        evaluation_types = load_benchmark_config().evaluation_types.evaluation_types
    questions = questions_of(evaluation_types, read_question_cells(conn))
    with warnings.catch_warnings():
        # scipy warns that exact Wilcoxon p-values are unavailable with ties and falls back to
        # the normal approximation: the documented behaviour, not news for every pair.
        warnings.simplefilter("ignore", UserWarning)
        estimates = estimate_rows(values)
        comparisons = comparison_rows(values)
        by_feature = feature_estimate_rows(values, features)
        feature_comparisons = feature_comparison_rows(values, features)
        answers = question_comparison_rows(values, questions)
    conn.begin()
    try:
        replace_rows(conn, METRIC_ESTIMATES, estimates)
        replace_rows(conn, COMPARISONS, comparisons)
        replace_rows(conn, FEATURE_ESTIMATES, by_feature)
        replace_rows(conn, FEATURE_COMPARISONS, feature_comparisons)
        replace_rows(conn, QUESTIONS, question_rows(questions))
        replace_rows(conn, QUESTION_COMPARISONS, answers)
        conn.commit()
    except BaseException:
        conn.rollback()
        raise
    significant = sum(1 for row in comparisons[::2] if row["verdict"] in (st.BETTER, st.WORSE))
    return StatisticsResult(
        len(estimates),
        len(comparisons),
        significant,
        feature_estimates=len(by_feature),
        feature_comparisons=len(feature_comparisons),
        questions=len(questions),
        question_comparisons=len(answers),
    )
