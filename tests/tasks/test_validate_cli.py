"""``datagouv-eval validate``."""

from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner

from datagouv_eval_pipeline.cli import main
from datagouv_eval_pipeline.core.benchmark.loader import BENCHMARK_CONFIG_DIR

GOOD = """\
task_id: task_0001
version: 1
task_name: n
meta: {status: active, source: forum}
prompt: p
evaluation_criteria:
  minimal: [{criteria: c}]
action_chain:
  minimal:
    chain: search.datasets
    required_actions: [{name: search.datasets}]
"""


def test_validate_prints_a_summary_and_exits_0(tmp_path: Path) -> None:
    (tmp_path / "task_0001.yml").write_text(GOOD)
    (tmp_path / "task_0002.yml").write_text(
        GOOD.replace("task_0001", "task_0002").replace("active", "draft")
    )
    result = CliRunner().invoke(main, ["validate", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("OK: 2 tasks (1 active); benchmark configuration ")
    assert "cells" in result.output


def test_validate_prints_every_error_as_file_line_field_message(tmp_path: Path) -> None:
    (tmp_path / "task_0001.yml").write_text(GOOD.replace("version: 1", "version: zero"))
    (tmp_path / "task_0002.yml").write_text(
        GOOD.replace("task_0001", "task_0002").replace("source: forum", "source: blog")
    )
    result = CliRunner().invoke(main, ["validate", str(tmp_path)])
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"{tmp_path / 'task_0001.yml'}:2: version: ")
    assert lines[1].startswith(f"{tmp_path / 'task_0002.yml'}:4: meta.source: Input should be")
    assert "2 error(s) in 2 file(s)" in result.stderr


def test_validate_checks_the_benchmark_configuration_too(tmp_path: Path) -> None:
    (tmp_path / "task_0001.yml").write_text(GOOD)
    config = tmp_path / "benchmark"
    shutil.copytree(BENCHMARK_CONFIG_DIR, config)
    models = config / "models.yml"
    models.write_text(models.read_text().replace("currency: EUR", "currency: euros"))
    result = CliRunner().invoke(main, ["validate", str(tmp_path), "--config-dir", str(config)])
    assert result.exit_code == 1
    assert f"{models}:" in result.stdout and ": currency: " in result.stdout


def test_validate_defaults_to_the_project_task_specs() -> None:
    result = CliRunner().invoke(main, ["validate"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("OK: ")
