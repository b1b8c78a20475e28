"""``datagouv-eval cells``: the dry run of the cross-product."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from datagouv_eval_pipeline.cli import main
from datagouv_eval_pipeline.core.benchmark.cells import expand_cells
from datagouv_eval_pipeline.core.benchmark.loader import load_benchmark_config
from tests.benchmark.benchmark_fixtures import write_config


def test_cells_prints_a_table_and_a_total(tmp_path: Path) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    result = CliRunner().invoke(main, ["cells", "--config-dir", str(config_dir)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == [
        "key",
        "evaluation",
        "types",
        "model",
        "capabilities",
        "mcp",
        "skills",
        "prompt",
    ]
    assert lines[1].split() == [
        "offline~m1__none__a",
        "t1",
        "offline/m1",
        "*",
        "none",  # no capability, spelled as in the key
        "-",
        "-",
        "a",
    ]
    assert any(line.split()[:2] == ["offline~m1__mcp@0.2.26__a", "t1,t3"] for line in lines)
    assert lines[-1] == (
        "15 cells (18 evaluation-type memberships, identical setups merged); "
        "10 on offline baselines (* = not an LLM)"
    )


def test_cells_json_matches_expand_cells(tmp_path: Path) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    result = CliRunner().invoke(
        main, ["cells", "--config-dir", str(config_dir), "--json", "-e", "t4"]
    )
    assert result.exit_code == 0, result.output
    records = json.loads(result.output)
    expected = expand_cells(load_benchmark_config(config_dir), ["t4"])
    assert records == [cell.to_record().model_dump(mode="json") for cell in expected]
    assert [r["key"] for r in records] == [
        "offline~m1__code__b",
        "offline~m2__code__b",
        "albert~openai~gpt-oss-120b__code__b",
    ]


def test_unknown_evaluation_type_is_a_usage_error(tmp_path: Path) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    result = CliRunner().invoke(main, ["cells", "--config-dir", str(config_dir), "-e", "t9"])
    assert result.exit_code == 2
    assert "unknown evaluation type(s) 't9'" in result.output


def test_a_broken_configuration_prints_its_errors(tmp_path: Path) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    models = config_dir / "models.yml"
    models.write_text(models.read_text().replace("currency: EUR", "currency: 12"))
    result = CliRunner().invoke(main, ["cells", "--config-dir", str(config_dir)])
    assert result.exit_code == 1
    assert f"{models}:1: currency: " in result.stderr


def test_cells_defaults_to_the_project_configuration() -> None:
    result = CliRunner().invoke(main, ["cells"])
    assert result.exit_code == 0, result.output
    assert "offline~baseline-oneshot__mcp@0.2.26__data_gouv_context" in result.output
