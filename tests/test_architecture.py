"""The pure core never imports Dagster: only ``defs/`` (and the CLI entry that launches it) may."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "datagouv_eval_pipeline"
# Modules allowed to import dagster: the orchestration layer and the Dagster entry points.
ORCHESTRATION = {"defs", "definitions.py", "cli/experiment.py", "cli/dagster_home.py"}
FORBIDDEN_ROOTS = {"dagster", "dagster_dbt", "dagster_duckdb", "dagster_duckdb_pandas"}


def _pure_modules() -> list[Path]:
    modules = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] in ORCHESTRATION or relative.as_posix() in ORCHESTRATION:
            continue
        modules.append(path)
    return modules


def _imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_the_walk_sees_the_core_packages() -> None:
    seen = {"/".join(path.relative_to(PACKAGE).parts[:2]) for path in _pure_modules()}
    assert {"core/tasks", "core/semantic", "core/metrics", "core/benchmark"} <= seen


@pytest.mark.parametrize("path", _pure_modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_pure_module_does_not_import_dagster(path: Path) -> None:
    assert not (_imported_roots(path) & FORBIDDEN_ROOTS), f"{path} imports Dagster"


def test_the_check_catches_a_dagster_import(tmp_path: Path) -> None:
    offender = tmp_path / "offender.py"
    offender.write_text("import os\nfrom dagster import asset\n", encoding="utf-8")
    assert "dagster" in _imported_roots(offender)


def _semantic_modules() -> list[Path]:
    return sorted((PACKAGE / "core" / "semantic").rglob("*.py"))


@pytest.mark.parametrize("path", _semantic_modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_the_semantic_layer_imports_nothing_from_the_twin(path: Path) -> None:
    """It maps production URLs only; how the twin lays out its routes is none of its business."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    modules = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0
    }
    assert not {m for m in modules if m.startswith("datagouv_eval_pipeline.world")}, path


def test_the_import_contracts_hold() -> None:
    """The layers and forbidden imports of ``[tool.importlinter]`` in pyproject.toml."""
    root = PACKAGE.parent
    done = subprocess.run(
        [str(Path(sys.executable).with_name("lint-imports")), "--no-cache"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def test_the_architecture_page_is_current() -> None:
    """docs/architecture.md is what `datagouv-eval architecture` writes from the contracts."""
    from datagouv_eval_pipeline.cli.architecture import ARCHITECTURE_PAGE, render_architecture

    assert ARCHITECTURE_PAGE.read_text(encoding="utf-8") == render_architecture(), (
        "docs/architecture.md is stale: run `datagouv-eval architecture`"
    )


def test_the_page_lists_layers_top_down_with_docstrings(tmp_path: Path) -> None:
    from datagouv_eval_pipeline.cli.architecture import render_architecture

    package = tmp_path / "pkg"
    (package / "top").mkdir(parents=True)
    (package / "top" / "__init__.py").write_text('"""The top.\n\nMore."""\n', encoding="utf-8")
    (package / "low.py").write_text('"""A | low module."""\n', encoding="utf-8")
    (package / "side.py").write_text("x = 1\n", encoding="utf-8")
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        '[[tool.importlinter.contracts]]\nname = "Two layers"\ntype = "layers"\n'
        'containers = ["pkg"]\nlayers = ["top", "low | side"]\n'
        '[[tool.importlinter.contracts]]\nname = "No web"\ntype = "forbidden"\n'
        'source_modules = ["pkg.low"]\nforbidden_modules = ["httpx"]\n',
        encoding="utf-8",
    )
    page = render_architecture(pyproject, package)
    assert page.endswith(
        "## Two layers\n\n| Layer | Module | What it is |\n| --- | --- | --- |\n"
        "| 1 | `top` | The top. |\n| 2 | `low` | A \\| low module. |\n| 2 | `side` |  |\n\n"
        "## No web\n\nThese modules:\n\n- `pkg.low`\n\nimport none of:\n\n- `httpx`\n"
    )


def test_a_pyproject_without_contracts_is_a_clear_error(tmp_path: Path) -> None:
    import click

    from datagouv_eval_pipeline.cli.architecture import render_architecture

    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[tool.ruff]\n", encoding="utf-8")
    with pytest.raises(click.ClickException, match=r"pyproject.toml: no \[\[tool.importlinter"):
        render_architecture(pyproject, tmp_path)
