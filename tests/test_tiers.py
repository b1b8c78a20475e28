"""The test tiers: each path of the tier table exists, and the markers select what it says."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import SLOW_MODULES, TIER_PATHS, TIERS, slow_first, tier_of

TESTS = Path(__file__).parent


def test_every_path_of_the_tier_table_exists() -> None:
    # A renamed module would silently fall back to "integration" and leave the fast loop.
    missing = [prefix for prefix, _ in TIER_PATHS if not (TESTS / prefix.rstrip("/")).exists()]
    assert missing == []
    assert {tier for _, tier in TIER_PATHS} <= set(TIERS)


def test_every_slow_module_exists_and_sorts_before_the_others() -> None:
    # A renamed module would silently lose its early start under xdist.
    assert [path for path in SLOW_MODULES if not (TESTS / path).is_file()] == []
    longest = max(SLOW_MODULES, key=lambda path: SLOW_MODULES[path])
    quick = TESTS / "metrics" / "test_passk.py"
    assert sorted([quick, TESTS / longest], key=slow_first) == [TESTS / longest, quick]


def test_a_module_takes_the_tier_of_its_first_matching_path() -> None:
    assert tier_of(TESTS / "metrics" / "test_passk.py") == "unit"
    assert tier_of(TESTS / "report" / "test_report_chromium.py") == "browser"
    assert tier_of(TESTS / "mcp_builds" / "test_real_build.py") == "real_build"
    assert tier_of(TESTS / "defs" / "test_anything.py") == "integration"


def test_the_unit_marker_selects_the_unit_modules_only() -> None:
    collected = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-m",
            "unit",
            "-p",
            "no:cacheprovider",
            str(TESTS / "test_text.py"),
            str(TESTS / "test_loopback.py"),
        ],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    assert "tests/test_text.py::" in collected
    assert "tests/test_loopback.py::" not in collected


def _collected(markexpr: str, folder: Path) -> str:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-m",
            markexpr,
            "-p",
            "no:cacheprovider",
            str(folder),
        ],
        capture_output=True,
        text=True,
        check=False,
    ).stdout


def test_the_unit_tier_leaves_out_the_modules_without_unit_tests_and_loses_none() -> None:
    # tests/warehouse mixes a module marked unit with integration modules by path.
    fast = _collected("unit", TESTS / "warehouse")
    # The same selection spelled otherwise: every module is imported, then deselected.
    everything = _collected("unit or unit", TESTS / "warehouse")

    def ids(output: str) -> list[str]:
        return sorted(line for line in output.splitlines() if "::" in line)

    assert ids(fast) == ids(everything)
    assert any(line.startswith("tests/warehouse/test_metric_registry.py::") for line in ids(fast))
    assert "deselected" in everything
    assert "deselected" not in fast
