"""The statistics stage of the ``warehouse`` asset and the ``no_regression`` check.

After each load, in the same step and writer (DuckDB allows one writer, and one step keeps dbt
to one invocation after it): error bars and paired comparisons of the latest run of each cell
(``eval.metric_estimates``, ``eval.comparisons``, per toolset feature
``eval.feature_estimates``, ``eval.feature_comparisons``, and the answer to each evaluation
type's question, ``eval.questions`` and ``eval.question_comparisons``), then the gate of the
experiment just loaded against each cell's previous run (``eval.gate_results``). The
``no_regression`` check on that table fails on a significant drop, and warns when a
judge-decided score is not comparable with the previous run (another judge or prompt, or a
criterion coverage beyond the tolerance); the thresholds are the warehouse asset's
``GateConfig`` (the launchpad and CI can tighten them); ``datagouv-eval gate`` prints the same
verdict.
"""

import time
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import Field

from datagouv_eval_pipeline.core.benchmark import load_benchmark_config
from datagouv_eval_pipeline.defs.resources import WarehouseResource
from datagouv_eval_pipeline.pipeline.warehouse import (
    COMPARISONS,
    COVERAGE_TOLERANCE,
    FEATURE_COMPARISONS,
    FEATURE_ESTIMATES,
    GATE_RESULTS,
    HEADLINE_METRICS,
    METRIC_ESTIMATES,
    QUESTION_COMPARISONS,
    QUESTIONS,
    SCHEMA,
    GateError,
    GateSettings,
    compute_statistics,
    connect,
    evaluate_gate,
    read_gate_results,
    summary_lines,
    write_gate_results,
)

GATE_KEY = dg.AssetKey([SCHEMA, GATE_RESULTS.name])


class GateConfig(dg.Config):
    """What the regression gate guards and how strict it is (launchpad / run config)."""

    metrics: list[str] = Field(default_factory=lambda: list(HEADLINE_METRICS))
    tiers: list[str] = Field(default_factory=lambda: ["minimal", "optimal"])
    alpha: float = 0.05
    min_drop: float = 0.0
    scored: bool = True
    coverage_tolerance: float = COVERAGE_TOLERANCE

    def settings(self) -> GateSettings:
        """The pure settings."""
        return GateSettings(
            tuple(self.metrics),
            tuple(self.tiers),
            self.alpha,
            self.min_drop,
            self.scored,
            self.coverage_tolerance,
        )


def run_statistics(
    context: dg.AssetExecutionContext, db: Path, config: GateConfig
) -> dict[str, dict[str, Any]]:
    """Compute the statistics tables and the gate; metadata per table name."""
    started = time.perf_counter()
    with connect(db) as conn:
        result = compute_statistics(conn, load_benchmark_config().evaluation_types.evaluation_types)
        computed = time.perf_counter()
        try:
            report = evaluate_gate(conn, settings=config.settings())
        except GateError as error:
            context.log.warning("gate not evaluated: %s", error)
            report = None
        if report is not None:
            write_gate_results(conn, report)
    finished = time.perf_counter()
    context.log.info(
        "statistics: %d estimates, %d comparisons (%d significant) in %.2f s; gate in %.2f s%s",
        result.estimates,
        result.comparisons // 2,
        result.significant,
        computed - started,
        finished - computed,
        "" if report is None else f": {summary_lines(report)[0]}",
    )
    gate: dict[str, Any] = {"dagster/row_count": 0}
    if report is not None:
        gate = {
            "experiment_id": report.experiment_id,
            "passed": report.passed,
            "outcome": report.outcome,
            "failed_cells": dg.MetadataValue.json(report.failed_cells),
            "not_comparable_cells": dg.MetadataValue.json(report.not_comparable_cells),
            "dagster/row_count": len(report.comparisons),
            "seconds": round(finished - computed, 3),
        }
    return {
        METRIC_ESTIMATES.name: {
            "dagster/row_count": result.estimates,
            "seconds": round(computed - started, 3),
        },
        COMPARISONS.name: {
            "dagster/row_count": result.comparisons,
            "significant_pairs": result.significant,
        },
        FEATURE_ESTIMATES.name: {"dagster/row_count": result.feature_estimates},
        FEATURE_COMPARISONS.name: {"dagster/row_count": result.feature_comparisons},
        QUESTIONS.name: {"dagster/row_count": result.questions},
        QUESTION_COMPARISONS.name: {"dagster/row_count": result.question_comparisons},
        GATE_RESULTS.name: gate,
    }


@dg.asset_check(
    asset=GATE_KEY,
    description=(
        "No cell's headline score dropped significantly since its previous run (fails); "
        "warns when a judge-decided score is not comparable (judge, prompt or coverage changed)."
    ),
)
def no_regression(warehouse: WarehouseResource) -> dg.AssetCheckResult:
    """Fail listing the cells whose latest run is worse than their previous run.

    Without a failed cell but with comparisons that are not comparable (the judge changed, or
    the criterion coverage moved beyond the tolerance), the check does not pass either, at WARN
    severity: the gate cannot vouch for those cells, and they are not called worse.
    """
    with connect(warehouse.db_path(), read_only=True) as conn:
        rows = read_gate_results(conn)
    failed = [r for r in rows if r["failed"]]
    cells = sorted({r["cell_key"] for r in failed})
    incomparable = [r for r in rows if r["comparable"] is False and r["cell_key"] not in cells]
    lines = [
        f"{r['cell_key']} {r['tier']} {r['metric']} [{r['language']}]: "
        f"{r['mean_previous']:.3f} -> {r['mean_current']:.3f}, p_adj {r['p_adjusted']:.4f}"
        for r in failed
    ] + [
        f"{r['cell_key']} {r['tier']} {r['metric']} [{r['language']}]: {r['reason']}"
        for r in incomparable
    ]
    return dg.AssetCheckResult(
        passed=not failed and not incomparable,
        severity=dg.AssetCheckSeverity.ERROR if failed else dg.AssetCheckSeverity.WARN,
        metadata={
            "experiment_id": rows[0]["experiment_id"] if rows else "none",
            "comparisons": len(rows),
            "failed_cells": dg.MetadataValue.json(cells),
            "not_comparable_cells": dg.MetadataValue.json(
                sorted({r["cell_key"] for r in incomparable})
            ),
            "details": dg.MetadataValue.md("\n".join(f"- {x}" for x in lines[:50]) or "none"),
        },
    )
