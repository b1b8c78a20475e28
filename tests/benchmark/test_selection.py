"""Choosing models and cells by name (``--models``, ``--cells``), inactive ones included."""

from __future__ import annotations

import pytest

from datagouv_eval_pipeline.core.benchmark.cells import expand_cells
from datagouv_eval_pipeline.core.benchmark.loader import BENCHMARK_CONFIG_DIR, load_benchmark_config
from datagouv_eval_pipeline.core.benchmark.selection import (
    SelectionError,
    model_names,
    select_cells,
    select_models,
)
from datagouv_eval_pipeline.defs.partitions import ACTIVE_KEYS, CELLS_BY_KEY

CONFIG = load_benchmark_config(BENCHMARK_CONFIG_DIR)
SMALL = "mistral/mistral-small-2603"
INACTIVE_KEY = "mistral~mistral-small-2603__mcp@0.2.26__data_gouv_context"


def test_models_are_named_provider_slash_model_and_globs_name_several() -> None:
    assert "albert/openai/gpt-oss-120b" in model_names(CONFIG)
    assert select_models(CONFIG, ["albert/*"]) == [
        name for name in model_names(CONFIG) if name.startswith("albert/")
    ]
    assert select_models(CONFIG, [SMALL, SMALL]) == [SMALL]


def test_an_inactive_model_has_the_cells_of_an_active_one() -> None:
    active = expand_cells(CONFIG)
    chosen = select_cells(CONFIG, models=[SMALL])
    oneshot = [c for c in active if c.model.name == "baseline-oneshot"]
    assert len(chosen) == len(oneshot) == 8
    assert {c.setup_key for c in chosen} == {c.setup_key for c in oneshot}
    assert {c.model.name for c in chosen} == {"mistral-small-2603"}


def test_cells_are_kept_by_exact_key_of_any_model_or_by_glob_among_the_selection() -> None:
    (exact,) = select_cells(CONFIG, cells=[INACTIVE_KEY])
    assert exact.key == INACTIVE_KEY and exact.model.name == "mistral-small-2603"
    globbed = select_cells(CONFIG, cells=["offline~baseline-oneshot__*"])
    assert {c.model.name for c in globbed} == {"baseline-oneshot"} and len(globbed) == 8
    # A glob reaches only the selected models: no inactive model sneaks in.
    assert not select_cells(CONFIG, cells=["*__none__*"])[0].model.is_llm
    assert {c.model.provider for c in select_cells(CONFIG, cells=["*__none__*"])} == {"offline"}


@pytest.mark.parametrize(
    ("models", "cells", "option", "message"),
    [
        (["mistral/mistral-smal"], [], "--models", "did you mean 'mistral/mistral-small-2603'"),
        ([], ["offline~baseline-onesht__none__data_gouv_context"], "--cells", "did you mean"),
        ([], ["nothing*"], "--cells", "no selected cell matches 'nothing*'"),
    ],
)
def test_a_name_that_matches_nothing_is_an_error_naming_it(
    models: list[str], cells: list[str], option: str, message: str
) -> None:
    with pytest.raises(SelectionError) as raised:
        select_cells(CONFIG, models=models, cells=cells)
    assert raised.value.option == option and message in str(raised.value)


def test_every_model_is_a_partition_and_only_active_ones_run_by_default() -> None:
    assert INACTIVE_KEY in CELLS_BY_KEY and INACTIVE_KEY not in ACTIVE_KEYS
    assert {cell.key for cell in expand_cells(CONFIG)} == ACTIVE_KEYS


def test_an_exact_key_outside_the_named_evaluation_types_is_refused() -> None:
    key = "offline~baseline-oneshot__none__data_gouv_context"
    assert [c.key for c in select_cells(CONFIG, cells=[key])] == [key]
    assert "mcp_versions" not in CELLS_BY_KEY[key].evaluation_types
    with pytest.raises(SelectionError, match="no cell matches"):
        select_cells(CONFIG, evaluation_types=["mcp_versions"], cells=[key])
