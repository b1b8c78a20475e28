"""Cell keys: readable, injective, valid Dagster partition keys, decoded by lookup only."""

from __future__ import annotations

import re
from pathlib import Path

import dagster as dg
import pytest
from hypothesis import given
from hypothesis import strategies as st

from datagouv_eval_pipeline.core.benchmark.cells import expand_cells
from datagouv_eval_pipeline.core.benchmark.config import Capability, ModelEntry
from datagouv_eval_pipeline.core.benchmark.keys import (
    UnknownCellKeyError,
    capability_set,
    cell_key,
    decode_cell_key,
    encode_cell_key,
    is_valid_partition_key,
    run_id,
)
from datagouv_eval_pipeline.core.benchmark.loader import BENCHMARK_CONFIG_DIR, load_benchmark_config
from tests.benchmark.benchmark_fixtures import write_config


def test_key_examples() -> None:
    assert (
        cell_key("mistral", "mistral-small-2603", ["web_search", "mcp"], "0.2.26", None, "ctx")
        == "mistral~mistral-small-2603__mcp@0.2.26+web_search__ctx"
    )
    assert (
        cell_key("albert", "openai/gpt-oss-120b", ["skills", "code"], None, "0.0.1", "ctx")
        == "albert~openai~gpt-oss-120b__code+skills@0.0.1__ctx"
    )
    assert cell_key("offline", "baseline-oneshot", [], None, None, "ctx") == (
        "offline~baseline-oneshot__none__ctx"
    )
    # A named MCP source (a real build) follows its version; unnamed entries keep the bare one.
    assert cell_key("offline", "b", ["mcp"], "0.2.14", None, "ctx", "build") == (
        "offline~b__mcp@0.2.14~build__ctx"
    )
    with pytest.raises(ValueError, match="source name needs an MCP version"):
        cell_key("offline", "b", [], None, None, "ctx", "build")


def test_a_capability_set_is_spelled_once_for_keys_the_warehouse_and_the_cli() -> None:
    assert capability_set(["web_search", "mcp", "mcp"]) == "mcp+web_search"
    assert capability_set([]) == "none"  # as in stored keys (``…__none__ctx``), never "-"
    assert capability_set(["skills", "code"], {"skills": "0.0.1", "mcp": None}) == (
        "code+skills@0.0.1"
    )
    config = load_benchmark_config(BENCHMARK_CONFIG_DIR)
    for cell in expand_cells(config):
        assert cell.capability_set == capability_set(cell.capabilities)
        if cell.mcp_version is None and cell.skills_version is None:
            assert cell.setup_key.startswith(cell.capability_set + "__")


def test_versions_must_match_capabilities() -> None:
    with pytest.raises(ValueError, match="mcp version"):
        cell_key("p", "m", ["mcp"], None, None, "a")
    with pytest.raises(ValueError, match="skills version"):
        cell_key("p", "m", ["code"], None, "0.0.1", "a")


def test_round_trip_on_every_cell_of_every_type(tmp_path: Path) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    config = load_benchmark_config(config_dir)
    names = [etype.name for etype in config.evaluation_types.evaluation_types]
    cells = expand_cells(config, names)
    assert len({cell.key for cell in cells}) == len(cells)
    for cell in cells:
        assert encode_cell_key(cell) == cell.key
        assert decode_cell_key(cell.key, cells) is cell


def test_run_ids_split_back_into_cell_task_and_repeat(tmp_path: Path) -> None:
    config = load_benchmark_config(write_config(tmp_path / "benchmark"))
    cells = expand_cells(config, [e.name for e in config.evaluation_types.evaluation_types])
    for cell in cells:
        assert run_id(cell.key, "task_0001", 2).split("|") == [cell.key, "task_0001", "2"]


def test_unknown_key_is_an_error_with_close_matches(tmp_path: Path) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    cells = expand_cells(load_benchmark_config(config_dir))
    with pytest.raises(UnknownCellKeyError, match=r"did you mean 'offline~m1__none__a'"):
        decode_cell_key("offline~m1__none__b", cells)


def test_real_configuration_keys_are_valid_dagster_partition_keys() -> None:
    config = load_benchmark_config(BENCHMARK_CONFIG_DIR)
    names = [etype.name for etype in config.evaluation_types.evaluation_types]
    cells = expand_cells(config, names)
    keys = [cell.key for cell in cells]
    assert all(is_valid_partition_key(key) for key in keys)
    assert dg.StaticPartitionsDefinition(keys).get_partition_keys() == keys
    # The two-dimensional alternative (model x setup) is valid too.
    two_d = dg.MultiPartitionsDefinition(
        {
            "model": dg.StaticPartitionsDefinition(sorted({c.model_key for c in cells})),
            "setup": dg.StaticPartitionsDefinition(sorted({c.setup_key for c in cells})),
        }
    )
    assert len(two_d.get_partition_keys()) >= len(cells)


def test_forbidden_substrings_are_rejected() -> None:
    for bad in ("a|b", "a,b", "a[b", "a]b", "a...b", "a/b", "a\nb", ""):
        assert not is_valid_partition_key(bad)
    assert is_valid_partition_key("offline~m__mcp@0.2.26+web_search__ctx")


_ALNUM = st.text("abcXYZ019", min_size=1, max_size=3)
MODEL_NAMES = st.lists(
    st.tuples(st.sampled_from([".", "-", "_", "/"]), _ALNUM), max_size=3
).flatmap(lambda parts: _ALNUM.map(lambda head: head + "".join(s + p for s, p in parts)))
PROVIDERS = st.from_regex(re.compile(r"[a-z][a-z0-9]{0,2}(?:-[a-z0-9]{1,2})?"), fullmatch=True)
PROMPTS = st.from_regex(re.compile(r"[a-z][a-z0-9]{0,2}(?:_[a-z0-9]{1,2}){0,2}"), fullmatch=True)
VERSIONS = st.sampled_from(["0.2.5", "0.2.19", "0.2.26", "1.0", "1.0rc1", "1.0.post1"])
CAPABILITY_SETS = st.frozensets(st.sampled_from([c.value for c in Capability]))
SOURCE_NAMES = st.none() | st.sampled_from(["build", "pr-12", "live"])
IDENTITIES = st.tuples(
    PROVIDERS, MODEL_NAMES, CAPABILITY_SETS, VERSIONS, VERSIONS, PROMPTS, SOURCE_NAMES
).map(
    lambda t: (
        t[0],
        t[1],
        tuple(sorted(t[2])),
        t[3] if "mcp" in t[2] else None,
        t[4] if "skills" in t[2] else None,
        t[5],
        t[6] if "mcp" in t[2] else None,
    )
)
Identity = tuple[str, str, tuple[str, ...], str | None, str | None, str, str | None]


@given(IDENTITIES, IDENTITIES)
def test_different_identities_never_share_a_key(first: Identity, second: Identity) -> None:
    # The generated names are ones the configuration accepts.
    ModelEntry(name=first[1], active=True, input_price_per_mtok=None, output_price_per_mtok=None)
    key_one, key_two = cell_key(*first), cell_key(*second)
    assert is_valid_partition_key(key_one)
    assert (key_one == key_two) == (first == second)
