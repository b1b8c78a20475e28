"""Write and read the label tables: ``eval.judge_calibration`` and ``eval.review_labels``.

A calibration row is keyed by judge, prompt hash(es), verdict kind and the content hash of the
labels it rests on (all of them, or the blind ones: ``label_set``): computing the same judge on
the same labels again replaces its rows, a new label set or a new prompt adds rows (earlier
figures stay queryable). The report shows the latest row per judge, label set and kind
(:func:`latest_calibration`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from datagouv_eval_pipeline.core.judges import (
    KAPPA_REQUIRED,
    CalibrationReport,
    KindAgreement,
    kappa_interval,
    refused_kappa,
)
from datagouv_eval_pipeline.core.metrics import MetricValue
from datagouv_eval_pipeline.pipeline.warehouse.schema import (
    JUDGE_CALIBRATION,
    REVIEW_LABELS,
    SCHEMA,
)

if TYPE_CHECKING:
    import duckdb

    from datagouv_eval_pipeline.pipeline.warehouse.review import LabelRow


def _pooled(report: CalibrationReport) -> KindAgreement:
    """Every kind together, as one more row (``verdict_kind = 'all'``)."""
    pairs = [
        (row.human == "pass", row.judge == "pass") for row in report.rows if row.judge != "unscored"
    ]
    first = next(iter(report.kinds.values()))
    return KindAgreement(
        verdict_kind=first.verdict_kind,  # replaced by 'all' in the row
        items=report.total,
        scored=report.scored,
        agreements=sum(1 for h, j in pairs if h == j),
        human_pass=sum(1 for row in report.rows if row.human == "pass"),
        judge_pass=sum(1 for _, j in pairs if j),
        coverage=report.coverage,
        accuracy=report.accuracy,
        kappa=refused_kappa(pairs, report.total),
        interval=kappa_interval(pairs, report.total, resamples=first.interval.resamples),
        prompt_hashes=tuple(sorted({row.verdict.prompt_hash for row in report.rows})),
    )


def calibration_rows(
    report: CalibrationReport,
    *,
    set_sha: str,
    files: Sequence[str],
    computed_at: datetime | None = None,
) -> list[dict[str, Any]]:
    """The report's rows of ``eval.judge_calibration``: one per verdict kind, plus ``all``."""
    at = computed_at or datetime.now(UTC)
    kinds: list[tuple[str, KindAgreement]] = list(report.kinds.items())
    if kinds:
        kinds.append(("all", _pooled(report)))
    rows = []
    for name, k in kinds:
        reasons = [r for r in (k.kappa.reason, _interval_reason(k)) if r]
        rows.append(
            {
                "judge_id": report.judge_id,
                "prompt_hash": ",".join(k.prompt_hashes),
                "verdict_kind": name,
                "set_sha": set_sha,
                "calibration_files": ",".join(files),
                "label_set": report.label_set,
                "label_methods": ",".join(report.label_methods),
                "items": k.items,
                "scored": k.scored,
                "coverage": _value(k.coverage),
                "agreements": k.agreements,
                "accuracy": _value(k.accuracy),
                "human_pass": k.human_pass,
                "judge_pass": k.judge_pass,
                "kappa": _value(k.kappa),
                "ci_low": k.interval.low,
                "ci_high": k.interval.high,
                "confidence": k.interval.confidence,
                "bootstrap_resamples": k.interval.resamples,
                "bootstrap_defined": k.interval.defined,
                "kappa_required": KAPPA_REQUIRED,
                "meets_requirement": k.meets_requirement,
                "reason": "; ".join(reasons) or None,
                "computed_at": at,
            }
        )
    return rows


def _value(metric: MetricValue) -> float | None:
    return metric.value


def _interval_reason(k: KindAgreement) -> str | None:
    refused = (k.kappa.reason or "").startswith("fewer than")  # no interval was drawn
    if k.interval.low is None and not refused:
        return "no bootstrap resample defines kappa"
    return None


def write_calibration(conn: duckdb.DuckDBPyConnection, rows: Sequence[dict[str, Any]]) -> int:
    """Replace the rows of the same judge, prompt hash, kind and set; returns rows written."""
    columns = JUDGE_CALIBRATION.column_names
    conn.execute("BEGIN TRANSACTION")
    try:
        for row in rows:
            conn.execute(
                f"DELETE FROM {JUDGE_CALIBRATION.qualified} WHERE judge_id = ? "
                "AND prompt_hash = ? AND verdict_kind = ? AND set_sha = ?",
                [row["judge_id"], row["prompt_hash"], row["verdict_kind"], row["set_sha"]],
            )
            conn.execute(
                f"INSERT INTO {JUDGE_CALIBRATION.qualified} ({', '.join(columns)}) "
                f"VALUES ({', '.join('?' for _ in columns)})",
                [row[c] for c in columns],
            )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return len(rows)


def write_review_labels(conn: duckdb.DuckDBPyConnection, rows: Sequence[LabelRow]) -> int:
    """Replace the labels of the review files the rows come from; returns rows written."""
    columns = REVIEW_LABELS.column_names
    conn.execute("BEGIN TRANSACTION")
    try:
        for review_id in sorted({row.review_id for row in rows}):
            conn.execute(f"DELETE FROM {REVIEW_LABELS.qualified} WHERE review_id = ?", [review_id])
        for row in rows:
            values = asdict(row)
            conn.execute(
                f"INSERT INTO {REVIEW_LABELS.qualified} ({', '.join(columns)}) "
                f"VALUES ({', '.join('?' for _ in columns)})",
                [values[c] for c in columns],
            )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return len(rows)


def latest_calibration(conn: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """The latest row per judge, label set and verdict kind (what the report shows)."""
    cursor = conn.execute(
        f"SELECT * FROM {SCHEMA}.{JUDGE_CALIBRATION.name} "
        "QUALIFY row_number() OVER (PARTITION BY judge_id, label_set, verdict_kind "
        "ORDER BY computed_at DESC) = 1 "
        "ORDER BY judge_id, label_set, CASE verdict_kind WHEN 'criterion' THEN 0 "
        "WHEN 'arguments' THEN 1 WHEN 'trajectory' THEN 2 WHEN 'failure_mode' THEN 3 ELSE 4 END"
    )
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]
