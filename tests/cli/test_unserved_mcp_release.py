"""A twin-served MCP release the twin does not emulate: `validate` and `run-cell` refuse it.

Before, `validate` said OK and `run-cell` skipped every run ("the MCP server 0.2.20 is
unreachable: Not Found"), one line per task.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from datagouv_eval_pipeline.base import project_files
from datagouv_eval_pipeline.cli import main

UNSERVED = "0.2.20"  # covered by the action registry, not emulated by the twin
EXPECTED = (
    f"mcp_versions[2].version: MCP version '{UNSERVED}' is not emulated by the twin (it serves "
    "0.2.5, 0.2.14, 0.2.19, 0.2.26): pick one of those, or give the real server as `build:` "
    "(or `url:` for a deployed one)"
)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """The default configuration with 0.2.26 replaced by an unserved release, on the twin."""
    config = tmp_path / "benchmark"
    shutil.copytree(project_files.project_file("task_specs") / "benchmark", config)
    for name in ("mcp_versions.yml", "evaluation_types.yml"):
        path = config / name
        text = path.read_text(encoding="utf-8")
        assert '"0.2.26"' in text
        path.write_text(text.replace("0.2.26", UNSERVED), encoding="utf-8")
    return config


def _line_of(config: Path) -> str:
    lines = (config / "mcp_versions.yml").read_text(encoding="utf-8").splitlines()
    return str(lines.index(f'  - version: "{UNSERVED}"') + 1)


def test_validate_names_the_file_and_field(config: Path) -> None:
    result = CliRunner().invoke(
        main, ["validate", "--config-dir", str(config)], catch_exceptions=False
    )
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if "mcp_versions.yml" in line]
    assert len(errors) == 1, result.output
    path, line, message = errors[0].split(":", 2)
    assert (path, line) == (str(config / "mcp_versions.yml"), _line_of(config))
    assert message.strip() == EXPECTED


def test_run_cell_refuses_it_in_one_line_before_any_run(config: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        [
            "run-cell",
            f"offline~baseline-oneshot__mcp@{UNSERVED}__data_gouv_context",
            "--tasks",
            "task_0002",
            "--config-dir",
            str(config),
            "--out",
            str(tmp_path / "out"),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 1, result.output
    assert result.output.strip().splitlines() == [
        f"{config / 'mcp_versions.yml'}:{_line_of(config)}: {EXPECTED}"
    ]
    assert not (tmp_path / "out").exists()


def test_a_build_of_that_release_is_accepted(config: Path) -> None:
    # Only the twin's own releases are limited: a build serves whatever version it is.
    path = config / "mcp_versions.yml"
    text = path.read_text(encoding="utf-8")
    twin = (
        f'  - version: "{UNSERVED}"\n    url: http://127.0.0.1:{{twin_port}}/mcp/v{UNSERVED}/mcp\n'
    )
    assert twin in text
    path.write_text(
        text.replace(twin, f'  - version: "{UNSERVED}"\n    build: {{package: "srv==1"}}\n'),
        encoding="utf-8",
    )
    result = CliRunner().invoke(
        main, ["validate", "--config-dir", str(config)], catch_exceptions=False
    )
    assert "not emulated" not in result.output
