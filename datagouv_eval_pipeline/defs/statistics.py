"""The ``statistics`` assets: error bars, paired comparisons and the regression gate.

Runs after the warehouse load, in the same writer pool (DuckDB allows one writer): it reads
the latest run of each cell and writes ``eval.metric_estimates`` and ``eval.comparisons``, then
compares the experiment just loaded with each cell's previous run into ``eval.gate_results``.
The ``no_regression`` check on that table fails on a significant drop (thresholds in its
config, so the launchpad and CI can tighten them); ``datagouv-eval gate`` prints the same.
"""

from collections.abc import Iterator
from typing import Any

import dagster as dg
from pydantic import Field

from datagouv_eval_pipeline.defs.resources import WarehouseResource
from datagouv_eval_pipeline.defs.warehouse import EAGER_TOLERATING_MISSING, WAREHOUSE_KEYS
from datagouv_eval_pipeline.warehouse.error_bars import compute_statistics
from datagouv_eval_pipeline.warehouse.gate import (
    HEADLINE_METRICS,
    GateError,
    GateSettings,
    evaluate_gate,
    read_gate_results,
    summary_lines,
    write_gate_results,
)
from datagouv_eval_pipeline.warehouse.loader import connect
from datagouv_eval_pipeline.warehouse.schema import SCHEMA, STATISTICS_TABLES

STATISTICS_KEYS = [dg.AssetKey([SCHEMA, table.name]) for table in STATISTICS_TABLES]
_ESTIMATES, _COMPARISONS, _GATE = STATISTICS_KEYS


class GateConfig(dg.Config):
    """What the regression gate guards and how strict it is (launchpad / run config)."""

    metrics: list[str] = Field(default_factory=lambda: list(HEADLINE_METRICS))
    tiers: list[str] = Field(default_factory=lambda: ["minimal", "optimal"])
    alpha: float = 0.05
    min_drop: float = 0.0

    def settings(self) -> GateSettings:
        """The pure settings."""
        return GateSettings(tuple(self.metrics), tuple(self.tiers), self.alpha, self.min_drop)


@dg.multi_asset(
    specs=[
        dg.AssetSpec(
            key,
            deps=WAREHOUSE_KEYS,
            group_name="warehouse",
            kinds={"duckdb", "scipy"},
            description=f"{table.qualified}: {table.grain}.",
            automation_condition=EAGER_TOLERATING_MISSING,
        )
        for key, table in zip(STATISTICS_KEYS, STATISTICS_TABLES, strict=True)
    ],
    pool="duckdb_writer",
    can_subset=False,
)
def statistics(
    context: dg.AssetExecutionContext, warehouse: WarehouseResource, config: GateConfig
) -> Iterator[dg.MaterializeResult[None]]:
    """Error bars and paired comparisons of the latest runs; the gate of the latest experiment."""
    with connect(warehouse.db_path()) as conn:
        result = compute_statistics(conn)
        try:
            report = evaluate_gate(conn, settings=config.settings())
        except GateError as error:
            context.log.warning("gate not evaluated: %s", error)
            report = None
        if report is not None:
            write_gate_results(conn, report)
    context.log.info(
        "statistics: %d estimates, %d comparisons (%d significant)%s",
        result.estimates,
        result.comparisons // 2,
        result.significant,
        "" if report is None else f"; {summary_lines(report)[0]}",
    )
    yield dg.MaterializeResult(
        asset_key=_ESTIMATES, metadata={"dagster/row_count": result.estimates}
    )
    yield dg.MaterializeResult(
        asset_key=_COMPARISONS,
        metadata={
            "dagster/row_count": result.comparisons,
            "significant_pairs": result.significant,
        },
    )
    gate_meta: dict[str, Any] = {}
    if report is not None:
        gate_meta = {
            "experiment_id": report.experiment_id,
            "passed": report.passed,
            "failed_cells": dg.MetadataValue.json(report.failed_cells),
            "dagster/row_count": len(report.comparisons),
        }
    yield dg.MaterializeResult(asset_key=_GATE, metadata=gate_meta)


@dg.asset_check(
    asset=_GATE,
    description="No cell's headline score dropped significantly since its previous run.",
)
def no_regression(warehouse: WarehouseResource) -> dg.AssetCheckResult:
    """Fail listing the cells whose latest run is worse than their previous run."""
    with connect(warehouse.db_path(), read_only=True) as conn:
        rows = read_gate_results(conn)
    failed = [r for r in rows if r["failed"]]
    cells = sorted({r["cell_key"] for r in failed})
    lines = [
        f"{r['cell_key']} {r['tier']} {r['metric']} [{r['language']}]: "
        f"{r['mean_previous']:.3f} -> {r['mean_current']:.3f}, p_adj {r['p_adjusted']:.4f}"
        for r in failed
    ]
    return dg.AssetCheckResult(
        passed=not failed,
        metadata={
            "experiment_id": rows[0]["experiment_id"] if rows else "none",
            "comparisons": len(rows),
            "failed_cells": dg.MetadataValue.json(cells),
            "details": dg.MetadataValue.md("\n".join(f"- {x}" for x in lines[:50]) or "none"),
        },
    )
