"""The cross-product: counts worked out by hand on the configuration of benchmark_fixtures."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from datagouv_eval_pipeline.core.benchmark.cells import (
    UnknownEvaluationTypeError,
    expand_cells,
)
from datagouv_eval_pipeline.core.benchmark.config import ProviderKind
from datagouv_eval_pipeline.core.benchmark.cost import token_cost
from datagouv_eval_pipeline.core.benchmark.loader import load_benchmark_config
from tests.benchmark.benchmark_fixtures import SKILLS_TEXT, write_config


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_default_expansion_counts_and_merges_identical_setups(tmp_path: Path) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    cells = expand_cells(load_benchmark_config(config_dir))
    # 3 active models (m1, m2, albert's); m3 is inactive.
    # t1: [] -> 1 + [mcp] x 2 active versions -> 2, per model: 3 x 3 = 9
    # t2: [mcp, skills] x 1 version x 1 skills x 2 prompts (all): 2 x 3 = 6
    # t3: [mcp] at 0.2.26 with prompt a: 3 cells, all already produced by t1 -> merged
    # t4: inactive
    assert len(cells) == 15
    assert sum(len(cell.evaluation_types) for cell in cells) == 18
    merged = [cell for cell in cells if len(cell.evaluation_types) > 1]
    assert [cell.key for cell in merged] == [
        "offline~m1__mcp@0.2.26__a",
        "offline~m2__mcp@0.2.26__a",
        "albert~openai~gpt-oss-120b__mcp@0.2.26__a",
    ]
    for cell in merged:
        assert cell.evaluation_types == ("t1", "t3")
        # union of t1 [result_accuracy] and t3 [action_usage, efficiency], in enum order
        assert cell.metrics == ("result_accuracy", "efficiency", "action_usage")


def test_order_follows_the_files(tmp_path: Path) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    keys = [cell.key for cell in expand_cells(load_benchmark_config(config_dir))]
    assert keys[:4] == [
        "offline~m1__none__a",
        "offline~m2__none__a",
        "albert~openai~gpt-oss-120b__none__a",
        "offline~m1__mcp@0.2.19__a",
    ]
    assert keys[-2:] == [
        "albert~openai~gpt-oss-120b__mcp@0.2.26+skills@0.0.1__a",
        "albert~openai~gpt-oss-120b__mcp@0.2.26+skills@0.0.1__b",
    ]


def test_cell_fields(tmp_path: Path) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    cells = {cell.key: cell for cell in expand_cells(load_benchmark_config(config_dir))}
    bare = cells["offline~m1__none__a"]
    assert bare.capabilities == ()
    assert (bare.mcp_version, bare.mcp_url, bare.skills_version, bare.skills_sha256) == (
        None,
        None,
        None,
        None,
    )
    assert bare.model.kind == ProviderKind.OFFLINE and not bare.model.is_llm
    assert bare.model.base_url is None and bare.model.api_key_env is None
    assert bare.system_prompt_sha256 == sha("You help.")
    full = cells["albert~openai~gpt-oss-120b__mcp@0.2.26+skills@0.0.1__b"]
    assert full.capabilities == ("mcp", "skills")
    assert full.model.is_llm
    assert (full.model.base_url, full.model.api_key_env) == (
        "https://albert.example/v1",
        "ALBERT_API_KEY",
    )
    assert (full.model.input_price_per_mtok, full.model.output_price_per_mtok) == (2.0, 8.0)
    assert full.mcp_version == "0.2.26"
    assert full.mcp_url_for(8123) == "http://127.0.0.1:8123/mcp/v0.2.26/mcp"
    assert full.skills_version == "0.0.1"
    assert full.skills_text == SKILLS_TEXT and full.skills_sha256 == sha(SKILLS_TEXT)
    assert (full.system_prompt, full.system_prompt_sha256) == ("b", sha(""))
    assert full.evaluation_types == ("t2",)
    assert full.metrics == ("result_accuracy", "action_usage")
    assert full.model_key == "albert~openai~gpt-oss-120b"
    assert full.setup_key == "mcp@0.2.26+skills@0.0.1__b"


def test_mcp_url_needs_the_twin_port(tmp_path: Path) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    cell = expand_cells(load_benchmark_config(config_dir), ["t3"])[0]
    with pytest.raises(ValueError, match="needs the twin's port"):
        cell.mcp_url_for(None)


def test_named_types_include_inactive_ones(tmp_path: Path) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    cells = expand_cells(load_benchmark_config(config_dir), ["t4"])
    # [code] x 3 active models x the named (inactive) prompt b
    assert [cell.key for cell in cells] == [
        "offline~m1__code__b",
        "offline~m2__code__b",
        "albert~openai~gpt-oss-120b__code__b",
    ]


def test_unknown_type_suggests_a_close_name(tmp_path: Path) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    config = load_benchmark_config(config_dir)
    with pytest.raises(UnknownEvaluationTypeError, match=r"'tt1' \(did you mean t1\?\)"):
        expand_cells(config, ["t1", "tt1"])
    with pytest.raises(UnknownEvaluationTypeError, match="defined: t1, t2, t3, t4"):
        expand_cells(config, ["zzz"])


def test_expansion_is_deterministic(tmp_path: Path) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    first = expand_cells(load_benchmark_config(config_dir))
    second = expand_cells(load_benchmark_config(config_dir))
    assert first == second


def test_record_is_json_ready_and_has_no_texts(tmp_path: Path) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    cell = expand_cells(load_benchmark_config(config_dir), ["t2"])[0]
    record = cell.to_record().model_dump(mode="json")
    assert record["key"] == "offline~m1__mcp@0.2.26+skills@0.0.1__a"
    assert record["model_is_llm"] is False
    assert record["currency"] == "EUR"
    assert "skills_text" not in record and "system_prompt_text" not in record


def test_token_cost_by_hand(tmp_path: Path) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    cells = {c.key: c for c in expand_cells(load_benchmark_config(config_dir), ["t3"])}
    albert = cells["albert~openai~gpt-oss-120b__mcp@0.2.26__a"].model
    # albert: 0.1 M input x 2.0 + 0.01 M output x 8.0 = 0.28
    assert token_cost(albert, 100_000, 10_000) == pytest.approx(0.28)
    assert token_cost(cells["offline~m1__mcp@0.2.26__a"].model, 100_000, 10_000) == 0.0


def test_unpriced_models_cost_none_never_zero(tmp_path: Path) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    models = config_dir / "models.yml"
    models.write_text(
        models.read_text().replace("input_price_per_mtok: 2.0", "input_price_per_mtok: null")
    )
    cells = {c.key: c for c in expand_cells(load_benchmark_config(config_dir), ["t3"])}
    assert token_cost(cells["albert~openai~gpt-oss-120b__mcp@0.2.26__a"].model, 1, 1) is None
