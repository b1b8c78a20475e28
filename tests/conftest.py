"""Session-wide guards (a test leaves the process's global switches as it found them) and tiers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pydantic_ai.models
import pytest


@pytest.fixture(autouse=True)
def _model_requests_switch_restored() -> Iterator[None]:
    # pydantic-ai's ALLOW_MODEL_REQUESTS is process-global: a test that set it and did not put it
    # back made every later test's model requests fail at once, far from the cause.
    before = pydantic_ai.models.ALLOW_MODEL_REQUESTS
    yield
    after = pydantic_ai.models.ALLOW_MODEL_REQUESTS
    pydantic_ai.models.ALLOW_MODEL_REQUESTS = before
    assert after == before, (
        f"the test left pydantic_ai.models.ALLOW_MODEL_REQUESTS={after} (was {before}): "
        "set it with monkeypatch.setattr so that it is restored"
    )


# Test tiers. A module's tier is its own `pytestmark` when it sets one, else the first entry of
# TIER_PATHS its path starts with, else "integration". `./dev test --fast` runs the unit tier.
TIERS: dict[str, str] = {
    "unit": "in-process and seconds: no server, no Dagster run, no browser, no real build",
    "integration": "starts servers, Dagster runs, dbt, the sandbox or subprocesses",
    "browser": "opens pages in headless Chromium",
    "real_build": "runs a real datagouv-mcp release (a PyPI build or one built from git)",
}
TIER_PATHS: tuple[tuple[str, str], ...] = (
    ("report/test_report_chromium.py", "browser"),
    ("mcp_builds/test_conformance.py", "real_build"),
    ("mcp_builds/test_real_build.py", "real_build"),
    ("defs/test_real_build_cell.py", "real_build"),
    ("tasks/", "unit"),
    ("metrics/", "unit"),
    ("semantic/", "unit"),
    ("benchmark/", "unit"),
    ("test_architecture.py", "unit"),
    ("test_chain_grammar.py", "unit"),
    ("test_text.py", "unit"),
    ("test_traces.py", "unit"),
)
_TESTS = Path(__file__).parent

# The longest modules, longest first: pytest-xdist (`./dev test`: `--dist loadfile
# --no-loadscope-reorder`) hands out whole modules in collection order, so these start first
# and the short modules fill both workers at the end, instead of one long module starting last
# while the other worker idles. Roughly seconds per module in CI (`--durations`), 2026-12-08;
# only the order matters. A wrong figure costs balance, never a result.
SLOW_MODULES: dict[str, int] = {
    "agents/runner/test_baseline_paraphrases.py": 200,
    "cli/test_experiment_hybrid_judge.py": 165,
    "cli/test_experiment_interrupts_late.py": 155,
    "mcp_builds/test_conformance.py": 155,  # with the releases built from git (DATAGOUV_MCP_GIT)
    "cli/test_experiment_recovery.py": 125,
    "cli/test_experiment_hybrid_judge_failures.py": 110,
    "cli/test_dagster_ui_chromium.py": 70,
    "cli/test_experiment_interrupts_early.py": 65,
    "cli/test_inactive_models.py": 65,
    "cli/test_cli_sweep.py": 60,
    "cli/test_experiment_cells.py": 45,
    "experiment/test_citation_passes.py": 45,
    "defs/test_pipeline_judges.py": 45,
    "defs/test_weekly_live.py": 40,
    "report/test_report_chromium.py": 40,
    "defs/test_pipeline_classification.py": 35,
    "cli/test_experiment_interrupts.py": 30,
    "local_models/test_plumbing_end_to_end.py": 30,
    "dbt/test_dbt_build.py": 25,
}


def tier_of(path: Path) -> str:
    """The tier a test module belongs to by its path (see TIER_PATHS)."""
    relative = path.relative_to(_TESTS).as_posix()
    return next((tier for prefix, tier in TIER_PATHS if relative.startswith(prefix)), "integration")


def _may_hold_unit_tests(module: Path) -> bool:
    """Whether a test module is of the unit tier by its path or names the marker itself."""
    return tier_of(module) == "unit" or "mark.unit" in module.read_text(encoding="utf-8")


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under ``-m unit`` (``./dev test --fast``), leave out what cannot hold a unit test.

    Collecting a module imports it, and Dagster, the twin or the browser behind it, only for
    every test in it to be deselected: 20 s of CPU, most of the fast tier's collection. A
    folder without such a module is left out whole (its ``conftest.py`` is not imported).
    """
    if config.getoption("markexpr") != "unit" or not collection_path.is_relative_to(_TESTS):
        return None
    if collection_path.is_dir():
        modules = collection_path.rglob("test_*.py")
        return None if any(_may_hold_unit_tests(m) for m in modules) else True
    if collection_path.name.startswith("test_") and collection_path.suffix == ".py":
        return None if _may_hold_unit_tests(collection_path) else True
    return None


def pytest_configure(config: pytest.Config) -> None:
    for name, meaning in TIERS.items():
        config.addinivalue_line("markers", f"{name}: {meaning}")


def slow_first(path: Path) -> int:
    """Sort key of a test module: the longest known modules first, the rest as collected."""
    relative = path.relative_to(_TESTS).as_posix() if path.is_relative_to(_TESTS) else ""
    return -SLOW_MODULES.get(relative, 0)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if not any(item.get_closest_marker(name) for name in TIERS):
            item.add_marker(getattr(pytest.mark, tier_of(item.path)))
    # Stable: each module's tests keep their order (and their module fixtures, one build each).
    items.sort(key=lambda item: slow_first(item.path))
