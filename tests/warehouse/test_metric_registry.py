"""A metric added to the registry reaches the warehouse, its docs and dbt; the committed docs are
the registry's.

The throw-away metric ``value_check_passed`` is one registry entry plus its reading function,
nothing else: the loader writes its rows, ``docs/warehouse.md`` would list it, dbt would accept
its name and document a mart column named after it.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from datagouv_eval_pipeline.core.judges.judgement_record import TierJudgementRecord
from datagouv_eval_pipeline.core.metrics import registry
from datagouv_eval_pipeline.core.metrics.score_record import ScoreRecord
from datagouv_eval_pipeline.core.metrics.values import MetricValue
from datagouv_eval_pipeline.core.tasks.spec import TIERS, Tier
from datagouv_eval_pipeline.pipeline.warehouse import connect, load_experiment
from datagouv_eval_pipeline.pipeline.warehouse.dbt_docs import column_doc, docs_files
from datagouv_eval_pipeline.pipeline.warehouse.metric_docs import (
    WAREHOUSE_DOCS,
    MarkersMissingError,
    metric_table,
    with_metric_table,
)
from tests.warehouse.warehouse_factories import (
    HAND,
    HAND_B,
    hand_cell,
    hand_cell_b,
    hand_judgement,
    hand_score,
)

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
DBT_PROJECT = ROOT / "dbt_metrics"
SOURCES = DBT_PROJECT / "models" / "sources.yml"


def _value_check(score: ScoreRecord) -> registry.Reading:
    """1 when the answer's value check passed, 0 when it failed; None when it did not apply."""
    check = score.checks.get("value")
    if check is None or check.passed is None:
        return None, "the value check does not apply"
    return float(check.passed), None


THROWAWAY = registry.Metric(
    name="value_check_passed",
    source="scorer",
    tiered=False,
    aggregation="avg",
    bounded=True,
    doc="Whether the answer states the expected value (1) or not (0).",
    read=registry.from_score(_value_check),
    label="value check",
)


@pytest.fixture
def throwaway(monkeypatch: pytest.MonkeyPatch) -> registry.Metric:
    monkeypatch.setattr(registry, "METRICS", (*registry.METRICS, THROWAWAY))
    return THROWAWAY


def test_the_warehouse_loads_a_new_metric_of_the_registry(
    throwaway: registry.Metric, tmp_path: Path
) -> None:
    conn = connect(tmp_path / "w.duckdb")
    load_experiment(conn, [hand_cell(), hand_cell_b()])
    rows = conn.execute(
        "SELECT cell_key, task_id, tier, value, reason, aggregation, bounded, source "
        "FROM eval.metrics WHERE metric = 'value_check_passed' ORDER BY cell_key, task_id"
    ).fetchall()
    # Worked by hand from hand_cell: the value check passed on task_0001 and task_0002, did not
    # apply on task_0003, and task_0004 failed (its score is ignored); hand_cell_b: both passed.
    assert rows == [
        (HAND, "task_0001", "all", 1.0, None, "avg", True, "scorer"),
        (HAND, "task_0002", "all", 1.0, None, "avg", True, "scorer"),
        (HAND, "task_0003", "all", None, "the value check does not apply", "avg", True, "scorer"),
        (HAND, "task_0004", "all", None, "run error: boom", "avg", True, "scorer"),
        (HAND_B, "task_0001", "all", 1.0, None, "avg", True, "scorer"),
        (HAND_B, "task_0002", "all", 1.0, None, "avg", True, "scorer"),
    ]
    # The standard aggregate over the loaded rows: 2 scored of 4 runs in the hand cell, mean 1.
    summary = conn.execute(
        "SELECT count(*), count(value), avg(value) FROM eval.metrics "
        "WHERE metric = 'value_check_passed' AND cell_key = ?",
        [HAND],
    ).fetchone()
    assert summary == (4, 2, 1.0)


def test_the_generated_docs_list_a_new_metric(throwaway: registry.Metric) -> None:
    row = (
        "| `value_check_passed` | all | avg | yes | scorer "
        "| Whether the answer states the expected value (1) or not (0). |"
    )
    assert row in metric_table().splitlines()
    committed = WAREHOUSE_DOCS.read_text(encoding="utf-8")
    regenerated = with_metric_table(committed)
    # `datagouv-eval schema --check` reports the page stale until it is regenerated.
    assert regenerated != committed and row in regenerated
    assert with_metric_table(regenerated) == regenerated


def test_dbt_accepts_and_documents_a_new_metric(throwaway: registry.Metric) -> None:
    (sources,) = [f for f in docs_files(DBT_PROJECT) if f.path == SOURCES]
    assert "value_check_passed" in _accepted_metric_names(sources.generated)
    assert "value_check_passed" not in _accepted_metric_names(sources.current)
    # A mart column named after it is its mean over the runs.
    assert column_doc("value_check_passed", ["metrics"], computed=True) == (
        "Mean value check over the scored runs (NULL when none is scored; never 0)."
    )


def _accepted_metric_names(text: str) -> list[str]:
    (source,) = yaml.safe_load(text)["sources"]
    (table,) = [t for t in source["tables"] if t["name"] == "metrics"]
    (column,) = [c for c in table["columns"] if c["name"] == "metric"]
    (test,) = [t for t in column["data_tests"] if "accepted_values" in t]
    return list(test["accepted_values"]["arguments"]["values"])


def test_the_committed_docs_are_the_registry() -> None:
    committed = WAREHOUSE_DOCS.read_text(encoding="utf-8")
    assert with_metric_table(committed) == committed, "run `datagouv-eval schema`"
    names = [entry.name for entry in registry.METRICS]
    assert _accepted_metric_names(SOURCES.read_text(encoding="utf-8")) == names
    for docs in docs_files(DBT_PROJECT):
        assert docs.current == docs.generated, f"{docs.path}: run `datagouv-eval schema`"


def test_a_page_without_the_markers_is_refused() -> None:
    with pytest.raises(MarkersMissingError, match="no marker"):
        with_metric_table("# Warehouse\n\nno generated table here\n")


def test_every_number_of_the_judged_tier_block_is_a_registered_metric() -> None:
    judged = {m.name for m in registry.METRICS if m.source == "judge" and m.tiered}
    values = {
        name
        for name, info in TierJudgementRecord.model_fields.items()
        if info.annotation is MetricValue
    }
    assert {f"judged_{name}" for name in values} <= judged
    assert {"accuracy", "accuracy_coverage", "criteria_total", "criteria_scored"} <= judged


def test_each_metric_reads_the_document_of_its_source() -> None:
    # A judge metric reading the score (or the reverse) would get the wrong NULL reason.
    score = hand_score("task_0001", 1.0, 3)
    judged = hand_judgement("task_0001", [True, None]).tiers
    only_score, only_judged = registry.ScoredRun(score, None), registry.ScoredRun(None, judged)
    for entry in registry.METRICS:
        for tier in TIERS if entry.tiered else (None,):
            has, lacks = (only_score, only_judged)[:: 1 if entry.source == "scorer" else -1]
            assert entry.read(has, tier) is not None, (entry.name, tier)
            assert entry.read(lacks, tier) is None, (entry.name, tier)


def test_a_per_tier_efficiency_is_read_by_its_tier() -> None:
    # Worked by hand: the optimal tier's token efficiency is 0.25, the minimal one's 0.5; a
    # stored score whose mapping lacks the tier reads as missing.
    score = hand_score("task_0001", 1.0, 3)
    per_tier: dict[Tier, MetricValue] = {"minimal": MetricValue(0.5), "optimal": MetricValue(0.25)}
    efficiency = replace(score.efficiency, token_efficiency=per_tier)
    run = registry.ScoredRun(score.model_copy(update={"efficiency": efficiency}))
    entry = registry.metric("token_efficiency")
    assert [entry.read(run, tier) for tier in TIERS] == [(0.5, None), (0.25, None)]
    partial = replace(efficiency, token_efficiency={"minimal": MetricValue(0.5)})
    run = registry.ScoredRun(score.model_copy(update={"efficiency": partial}))
    assert entry.read(run, "optimal") == (None, "missing")
    with pytest.raises(ValueError, match="a tiered metric is read in a tier"):
        entry.read(run, None)
