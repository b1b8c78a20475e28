"""Packages are imported through their faces: ``from core.metrics import X``, not a submodule.

A *package* here is a child of a layer (``base``, ``core``, ``world``, ``pipeline``): a
sub-package, whose ``__init__.py`` is its face, or a module, which is its own face. A module
outside a package may import the package (its face), never one of its submodules, except the
namespaces ``NAMESPACES`` of ``cli/architecture.py`` allows, each with its reason.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import grimp
import pytest

from datagouv_eval_pipeline.cli.architecture import LAYERS, NAMESPACES

pytestmark = pytest.mark.unit

ROOT_PACKAGE = "datagouv_eval_pipeline"
PACKAGE_DIR = Path(__file__).resolve().parents[1] / ROOT_PACKAGE
ALLOWED = {f"{ROOT_PACKAGE}.{module}" for module in NAMESPACES}


def package_of(module: str) -> str | None:
    """The layer's child ``module`` belongs to (``datagouv_eval_pipeline.core.metrics``)."""
    parts = module.split(".")
    if len(parts) < 3 or parts[0] != ROOT_PACKAGE or parts[1] not in LAYERS:
        return None
    return ".".join(parts[:3])


def past_the_face(imports: Iterable[tuple[str, str]]) -> list[str]:
    """The imports ``(importer, imported)`` that reach into another package's submodule."""
    found = []
    for importer, imported in imports:
        package = package_of(imported)
        if package is None or imported == package or imported in ALLOWED:
            continue
        if package_of(importer) != package:
            found.append(f"{importer} imports {imported} (import it from {package})")
    return sorted(found)


@pytest.fixture(scope="module")
def imports() -> list[tuple[str, str]]:
    graph = grimp.build_graph(ROOT_PACKAGE, cache_dir=None)
    return [
        (importer, imported)
        for importer in graph.modules
        for imported in graph.find_modules_directly_imported_by(importer)
    ]


def faces() -> list[Path]:
    return sorted(
        path / "__init__.py"
        for layer in LAYERS
        for path in (PACKAGE_DIR / layer).iterdir()
        if (path / "__init__.py").is_file()
    )


def test_no_module_reaches_past_another_package_s_face(imports: list[tuple[str, str]]) -> None:
    assert past_the_face(imports) == []


def test_each_allowed_namespace_is_still_imported_past_its_face(
    imports: list[tuple[str, str]],
) -> None:
    used = {
        imported for importer, imported in imports if package_of(importer) != package_of(imported)
    }
    assert ALLOWED - used == set(), "drop these from NAMESPACES in cli/architecture.py"


def test_the_check_catches_a_deep_import_and_lets_the_others_pass() -> None:
    found = past_the_face(
        [
            (f"{ROOT_PACKAGE}.defs.warehouse", f"{ROOT_PACKAGE}.core.metrics.scorer"),
            (f"{ROOT_PACKAGE}.defs.warehouse", f"{ROOT_PACKAGE}.core.metrics"),
            (f"{ROOT_PACKAGE}.core.metrics.scorer", f"{ROOT_PACKAGE}.core.metrics.values"),
            (f"{ROOT_PACKAGE}.core.judges.llm", f"{ROOT_PACKAGE}.base.text"),
            (f"{ROOT_PACKAGE}.pipeline.warehouse.rows", f"{ROOT_PACKAGE}.core.metrics.registry"),
            (f"{ROOT_PACKAGE}.cli.twin", "dagster"),
        ]
    )
    assert found == [
        f"{ROOT_PACKAGE}.defs.warehouse imports {ROOT_PACKAGE}.core.metrics.scorer "
        f"(import it from {ROOT_PACKAGE}.core.metrics)"
    ]


def _face_parts(path: Path) -> tuple[list[str], dict[str, str], dict[str, str]]:
    """A face's ``__all__``, its ``_MODULE_OF`` and what it imports under ``TYPE_CHECKING``."""
    package = ".".join(path.parent.relative_to(PACKAGE_DIR.parent).parts)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    declared: list[str] = []
    module_of: dict[str, str] = {}
    typed: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            if isinstance(target, ast.Name) and target.id == "__all__":
                declared = ast.literal_eval(node.value)
            elif isinstance(target, ast.Name) and target.id == "_MODULE_OF":
                relative: dict[str, str] = ast.literal_eval(node.value)
                module_of = {
                    name: package + module if module.startswith(".") else module
                    for name, module in relative.items()
                }
        elif isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom), ast.unparse(statement)
                assert statement.module is not None
                typed.update((alias.name, statement.module) for alias in statement.names)
    return declared, module_of, typed


@pytest.mark.parametrize("path", faces(), ids=lambda p: p.parent.name)
def test_a_lazy_face_declares_serves_and_types_the_same_names(path: Path) -> None:
    declared, module_of, typed = _face_parts(path)
    if not module_of:
        pytest.skip("an eager face, or none")
    assert declared == sorted(declared, key=lambda n: (not n.isupper(), n)), "__all__ sorted"
    assert set(declared) == set(module_of) == set(typed)
    assert module_of == typed, "mypy must see the module __getattr__ imports at run time"


def test_a_face_imports_nothing_and_serves_every_name() -> None:
    """In a fresh process: importing every face loads none of its submodules; each name resolves.

    Resolving every name imports the whole package, hence the separate process (other tests
    check what building the definitions leaves unimported).
    """
    script = """
import importlib, sys
faces = sys.argv[1:]
for face in faces:
    importlib.import_module(face)
deep = sorted(m for m in sys.modules for f in faces if m.startswith(f + "."))
assert not deep, f"importing the faces imported {deep}"
for face in faces:
    module = sys.modules[face]
    for name in module.__all__:
        value = getattr(module, name)
        where = importlib.import_module(module._MODULE_OF[name], face)
        assert value is getattr(where, name), (face, name)
        exec(f"from {face} import {name}")
print("ok")
"""
    lazy = [
        ".".join(path.parent.relative_to(PACKAGE_DIR.parent).parts)
        for path in faces()
        if _face_parts(path)[1]
    ]
    done = subprocess.run(
        [sys.executable, "-c", script, *lazy], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("ok")
