"""The branch example of docs/mcp-builds.md passes `datagouv-eval validate` as written."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from click.testing import CliRunner

from datagouv_eval_pipeline.cli import main

REPO = Path(__file__).resolve().parents[2]


def _blocks(text: str) -> dict[str, str]:
    """The doc's YAML blocks by the file their first comment names."""
    found = {}
    for block in re.findall(r"```yaml\n(.*?)```", text, flags=re.S):
        first, _, rest = block.partition("\n")
        found[first.removeprefix("# ").strip()] = rest
    return found


def test_the_branch_example_validates(tmp_path: Path) -> None:
    blocks = _blocks((REPO / "docs" / "mcp-builds.md").read_text(encoding="utf-8"))
    specs = tmp_path / "repo" / "task_specs"
    shutil.copytree(REPO / "task_specs", specs)
    for name in (
        "task_specs/benchmark/mcp_versions.yml",
        "task_specs/benchmark/evaluation_types.yml",
    ):
        target = tmp_path / "repo" / name
        target.write_text(target.read_text(encoding="utf-8") + blocks[name], encoding="utf-8")
    # The checkout the example points at (../../datagouv-mcp from task_specs/benchmark/).
    checkout = tmp_path / "repo" / "datagouv-mcp"
    checkout.mkdir()
    (checkout / "pyproject.toml").write_text(
        '[project]\nname = "datagouv-mcp"\nversion = "0.2.27.dev0"\n', encoding="utf-8"
    )
    result = CliRunner().invoke(
        main, ["validate", str(specs), "--config-dir", str(specs / "benchmark")]
    )
    assert result.exit_code == 0, result.output
    assert result.output.startswith("OK:")
