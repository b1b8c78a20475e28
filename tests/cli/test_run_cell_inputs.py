"""`datagouv-eval run-cell` on an unusable output directory or snapshot: one clear line, no run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from datagouv_eval_pipeline.base import project_files
from datagouv_eval_pipeline.cli import main
from datagouv_eval_pipeline.world.catalogue import catalog

CELL = "offline~baseline-oneshot__mcp@0.2.26__data_gouv_context"


def _run_cell(*args: str) -> Result:
    return CliRunner().invoke(
        main, ["run-cell", CELL, "--tasks", "task_0002", *args], catch_exceptions=False
    )


def _one_error(result: Result) -> str:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, result.output
    assert "r0: " not in result.output  # no agent ran
    return errors[0]


def test_an_output_directory_under_a_file_fails_before_any_run(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    line = _one_error(_run_cell("--out", str(blocker / "traces")))
    assert line == (
        f"Error: {blocker / 'traces'}: the output directory cannot be created (Not a "
        "directory); choose another with --out"
    )


@pytest.fixture
def snapshots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    copy = tmp_path / "snapshots"
    shutil.copytree(project_files.snapshots_dir(), copy)
    monkeypatch.setattr(catalog, "default_snapshots_dir", lambda: copy)
    return copy


def test_a_missing_manifest(snapshots: Path, tmp_path: Path) -> None:
    (snapshots / "manifest.json").unlink()
    line = _one_error(_run_cell("--out", str(tmp_path / "out")))
    assert line.startswith(f"Error: {snapshots / 'manifest.json'}: no snapshot manifest")


def test_a_manifest_that_is_not_json(snapshots: Path, tmp_path: Path) -> None:
    (snapshots / "manifest.json").write_text('{"current": ', encoding="utf-8")
    line = _one_error(_run_cell("--out", str(tmp_path / "out")))
    assert line.startswith(f"Error: {snapshots / 'manifest.json'}: invalid JSON")


def test_a_snapshot_file_that_changed(snapshots: Path, tmp_path: Path) -> None:
    manifest = json.loads((snapshots / "manifest.json").read_text(encoding="utf-8"))
    current = manifest["current"]
    (snapshots / current / "tables.json").write_text("{}", encoding="utf-8")
    line = _one_error(_run_cell("--out", str(tmp_path / "out")))
    assert "tables.json" in line


def test_a_cell_none_of_whose_runs_finished_exits_non_zero_naming_why(tmp_path: Path) -> None:
    # A live model whose API key is not set: every run is skipped before any request.
    config = tmp_path / "benchmark"
    shutil.copytree(project_files.project_file("task_specs") / "benchmark", config)
    models = config / "models.yml"
    text = models.read_text(encoding="utf-8")
    small = "      - name: mistral-small-2603\n        label: small\n        active: false"
    assert small in text
    models.write_text(text.replace(small, small.replace("false", "true")), encoding="utf-8")
    result = CliRunner().invoke(
        main,
        [
            "run-cell",
            "mistral~mistral-small-2603__none__data_gouv_context",
            "--tasks",
            "task_0002",
            "--config-dir",
            str(config),
            "--out",
            str(tmp_path / "out"),
        ],
        env={"MISTRAL_API_KEY": None},
        catch_exceptions=False,
    )
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    last = result.output.strip().splitlines()[-1]
    assert last.startswith(
        "Error: no run of mistral~mistral-small-2603__none__data_gouv_context finished "
        "(1 ended skipped); 1 because: "
    )
    assert "MISTRAL_API_KEY" in last
    assert (tmp_path / "out" / "task_0002__r0.json").is_file()  # the trace is still written
