"""The metric registry: one entry per metric, and every number a stored score carries is one."""

from __future__ import annotations

import types
import typing

import pytest

from datagouv_eval_pipeline.core.metrics import registry
from datagouv_eval_pipeline.core.metrics import statistics as st
from datagouv_eval_pipeline.core.metrics.score_record import TierRecord
from datagouv_eval_pipeline.core.metrics.values import MetricValue
from datagouv_eval_pipeline.core.tasks.spec import TIERS


def test_names_are_unique_snake_case_and_each_entry_is_documented() -> None:
    names = [entry.name for entry in registry.METRICS]
    assert len(names) == len(set(names))
    for entry in registry.METRICS:
        assert entry.name.isidentifier() and entry.name == entry.name.lower(), entry.name
        assert entry.doc.endswith(".") and "\n" not in entry.doc, entry.name
        # A count is never bounded: it is summed, and a sum of counts leaves [0, 1].
        assert not (entry.aggregation == "sum" and entry.bounded), entry.name


def _number_fields(model: type[TierRecord]) -> set[str]:
    """Fields holding one number of the tier: a stored MetricValue or a count."""
    out = set()
    for name, info in model.model_fields.items():
        kinds = (
            set(typing.get_args(info.annotation))
            if isinstance(info.annotation, types.UnionType)
            else {info.annotation}
        )
        if kinds - {type(None)} in ({MetricValue}, {int}):
            out.add(name)
    return out


def test_every_number_of_the_score_tier_block_is_a_registered_tiered_metric() -> None:
    # The miss this catches used to pass every test: a metric computed and stored, never loaded.
    tiered_scorer = {m.name for m in registry.METRICS if m.source == "scorer" and m.tiered}
    assert _number_fields(TierRecord) <= tiered_scorer
    assert len(_number_fields(TierRecord)) == 16


def test_a_run_without_documents_reads_none_in_every_tier() -> None:
    # None: the warehouse then writes NULL with "not scored", "not judged" or the run's failure.
    empty = registry.ScoredRun(None, None)
    for entry in registry.METRICS:
        for tier in TIERS if entry.tiered else (None,):
            assert entry.read(empty, tier) is None, (entry.name, tier)


def test_tiers_labels_and_directions() -> None:
    assert registry.metric("action_f1").tiers == ("minimal", "optimal")
    assert registry.metric("latency_ms").tiers == ("all",)
    assert registry.label("action_f1") == "action F1"
    assert registry.label("trajectory_adherence") == "trajectory adherence"
    assert registry.label("not_registered") == "not registered"
    assert {"latency_ms"} == st.LOWER_IS_BETTER
    assert st.higher_is_better("accuracy") and not st.higher_is_better("latency_ms")
    assert {"token_efficiency", "time_efficiency"} == registry.USES_JUDGE
    with pytest.raises(KeyError, match="no metric named 'nope'"):
        registry.metric("nope")
