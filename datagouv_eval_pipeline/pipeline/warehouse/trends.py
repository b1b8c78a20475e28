"""Each cell's headline scores over the recorded experiments, with their intervals.

``cell_history`` (dbt) gives every experiment's plain means; a trend plot also needs each
point's 95 % interval and the tasks it rests on (a point on other tasks is not the same
measurement), which this module computes from ``eval.metrics_history`` with the statistics
stage's own estimator.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from datagouv_eval_pipeline.core.metrics import statistics as st
from datagouv_eval_pipeline.pipeline.warehouse.schema import (
    EXPERIMENTS,
    METRICS_HISTORY,
    RUNS_HISTORY,
)


@dataclass(frozen=True, slots=True)
class TrendPoint:
    """One cell's mean of one metric in one experiment.

    Attributes:
        experiment_id: The experiment.
        cell_key: The cell.
        metric: The metric.
        mean: Mean over the scored runs (None: nothing scored).
        ci_low: Lower bound of the 95 % interval (clustered by task), or None.
        ci_high: Upper bound, or None.
        scored: Runs with a value.
        runs: Runs of the cell in that experiment (skipped ones left out).
        tasks: The tasks with a scored run, sorted (what the mean rests on).
    """

    experiment_id: str
    cell_key: str
    metric: str
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    scored: int
    runs: int
    tasks: tuple[str, ...]


_VALUES_SQL = f"""
SELECT h.experiment_id, h.cell_key, h.metric, h.task_id, h.value, h.bounded
FROM {METRICS_HISTORY.qualified} AS h
JOIN {RUNS_HISTORY.qualified} AS r USING (experiment_id, run_id)
JOIN {EXPERIMENTS.qualified} AS e USING (experiment_id)
WHERE h.tier = ? AND h.metric IN (SELECT unnest(?)) AND r.status <> 'skipped'
ORDER BY e.recorded_at, h.experiment_id, h.cell_key, h.metric, h.task_id, h.repeat_index
"""


def cell_trends(
    conn: duckdb.DuckDBPyConnection, metrics: tuple[str, ...], tier: str
) -> list[TrendPoint]:
    """Every experiment × cell × metric's mean with its interval, oldest experiment first."""
    groups: dict[tuple[str, str, str], list[tuple[str, float | None, bool]]] = {}
    for experiment, cell, metric, task, value, bounded in conn.execute(
        _VALUES_SQL, [tier, list(metrics)]
    ).fetchall():
        groups.setdefault((str(experiment), str(cell), str(metric)), []).append(
            (str(task), value, bool(bounded))
        )
    out = []
    for (experiment, cell, metric), rows in groups.items():
        result = st.estimate(
            [value for _, value, _ in rows],
            [task for task, _, _ in rows],
            bounded=all(bounded for _, _, bounded in rows),
        )
        out.append(
            TrendPoint(
                experiment_id=experiment,
                cell_key=cell,
                metric=metric,
                mean=result.mean,
                ci_low=result.ci_low,
                ci_high=result.ci_high,
                scored=result.n,
                runs=result.runs,
                tasks=tuple(sorted({task for task, value, _ in rows if value is not None})),
            )
        )
    return out
