"""Stage code versions come from the import graph: an edit stales what imports it, and only that.

Each test edits a copy of the package (never the checkout) and reads the fingerprints in a fresh
process that imports the copy.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from datagouv_eval_pipeline.base import project_files

_PROBE = """
import json
from datagouv_eval_pipeline.pipeline.experiment import fingerprints as f
print(json.dumps({
    "module": f.__file__,
    "agent_runs": f.shared_run_code(),
    **{stage: f.stage_code_version(stage) for stage in
       ("action_mappings", "judge_scores", "judge_calibration")},
    "catalogue": f.closure_fingerprint(("world.api", "world.catalogue", "world.mcp", "world.front"),
    ("world.mcp",)),
    "code": f.closure_fingerprint(("world.sandbox",)),
    "datagouv-cli": f.closure_fingerprint(("world.datagouv_cli",)),
    "imported": sorted({m for roots in (("pipeline.agents", "world.replay", "core.benchmark",
    "core.traces"),
        ("core.semantic", "core.traces", "core.judges"), ("core.judges", "core.metrics"),
        ("world.api", "world.catalogue", "world.mcp", "world.front"),
        ("world.sandbox",), ("world.datagouv_cli",)) for m in f.import_closure(roots)}),
}))
"""


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    shutil.copytree(
        project_files.PACKAGE_DIR,
        root / project_files.PACKAGE_DIR.name,
        ignore=shutil.ignore_patterns("__pycache__", "_project"),
    )
    return root / project_files.PACKAGE_DIR.name


def _fingerprints(package: Path) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(package.parent)}
    out = subprocess.run(
        [sys.executable, "-c", _PROBE],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=package.parent,
    ).stdout
    data: dict[str, object] = json.loads(out)
    assert Path(str(data.pop("module"))).is_relative_to(package)  # the copy, not the checkout
    return data


def _changed(before: dict[str, object], after: dict[str, object]) -> set[str]:
    return {k for k in before if k != "imported" and before[k] != after[k]}


def test_editing_text_stales_every_stage_that_imports_it_and_no_other(tmp_path: Path) -> None:
    package = _copy(tmp_path)
    before = _fingerprints(package)
    text = package / "base/text.py"
    text.write_text(text.read_text(encoding="utf-8") + "\nFOLDED = True\n", encoding="utf-8")
    after = _fingerprints(package)
    # text.fold feeds the baselines, the catalogue's search, the checks and the judges; neither
    # the sandbox nor the emulated CLI imports it.
    assert _changed(before, after) == {
        "agent_runs",
        "action_mappings",
        "judge_scores",
        "judge_calibration",
        "catalogue",
    }


def test_an_edit_to_a_module_no_stage_imports_stales_nothing(tmp_path: Path) -> None:
    package = _copy(tmp_path)
    before = _fingerprints(package)
    imported = before["imported"]
    assert isinstance(imported, list)
    assert f"{package.name}.pipeline.report" not in imported
    report = package / "pipeline" / "report" / "__init__.py"
    report.write_text(report.read_text(encoding="utf-8") + "\n\n", encoding="utf-8")
    assert _changed(before, _fingerprints(package)) == set()


def test_an_edit_to_the_sandbox_stales_only_the_code_toolset(tmp_path: Path) -> None:
    package = _copy(tmp_path)
    before = _fingerprints(package)
    base = package / "world" / "sandbox" / "base.py"
    base.write_text(base.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    # The runner imports the sandbox, yet it is the code cells' own part, not the shared code.
    assert _changed(before, _fingerprints(package)) == {"code"}


def _with_project_files(tmp_path: Path) -> Path:
    """A package copy with the judge configuration and the calibration labels beside it."""
    package = _copy(tmp_path)
    specs = project_files.task_specs_dir()
    copied = package.parent / project_files.TASK_SPECS
    (copied / "benchmark").mkdir(parents=True)
    shutil.copy(specs / "benchmark" / "judge.yml", copied / "benchmark" / "judge.yml")
    shutil.copytree(specs / "calibration", copied / "calibration")
    return package


def test_an_edit_to_the_judge_configuration_stales_the_stages_that_ask_the_judge(
    tmp_path: Path,
) -> None:
    package = _with_project_files(tmp_path)
    before = _fingerprints(package)
    judge = package.parent / project_files.TASK_SPECS / "benchmark" / "judge.yml"
    judge.write_text(judge.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    assert _changed(before, _fingerprints(package)) == {"action_mappings", "judge_scores"}


def test_an_edit_to_a_calibration_label_stales_only_the_calibration(tmp_path: Path) -> None:
    package = _with_project_files(tmp_path)
    before = _fingerprints(package)
    labels = sorted((package.parent / project_files.TASK_SPECS / "calibration").glob("*.yml"))
    labels[0].write_text(labels[0].read_text(encoding="utf-8") + "\n# edited\n", "utf-8")
    assert _changed(before, _fingerprints(package)) == {"judge_calibration"}
