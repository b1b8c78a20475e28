"""The built wheel, installed in a fresh virtualenv, works from a directory outside the checkout.

Builds the wheel with ``uv build``, installs the locked dependencies (``uv export`` as
``pylock.toml``) and the wheel into a virtualenv under the test's temporary directory, then runs
the installed commands from another temporary directory with a scrubbed environment. uv installs
from its cache, offline first (the lock pins every file, so a synced checkout needs no network);
only when that fails does it go to the index (PyPI, through the machine's proxy if any). About a
minute, most of it ``dbt parse`` and the twin's preflight. Skipped only when uv is not installed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pytest

from datagouv_eval_pipeline.world.mcp_builds.install import BuildError, uv_command

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Installed:
    """The wheel's virtualenv and where commands run."""

    wheel: Path
    bin: Path
    package: Path
    """The installed ``datagouv_eval_pipeline`` directory in the venv's site-packages."""
    cwd: Path
    env: dict[str, str]

    def run(self, *argv: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            argv,
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


def _uv(uv: list[str], *args: str) -> None:
    offline = subprocess.run(
        [*uv, *args, "--offline"], cwd=REPO, capture_output=True, text=True, check=False
    )
    if offline.returncode == 0:
        return
    online = subprocess.run([*uv, *args], cwd=REPO, capture_output=True, text=True, check=False)
    assert online.returncode == 0, (
        f"uv {' '.join(args)} failed offline:\n{offline.stderr}\nand online:\n{online.stderr}"
    )


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    try:
        uv = uv_command()
    except BuildError as error:
        pytest.skip(f"uv is not installed, so the wheel cannot be built: {error}")
    root = tmp_path_factory.mktemp("wheel")
    dist, venv = root / "dist", root / "venv"
    _uv(uv, "build", "--wheel", "--quiet", "--out-dir", str(dist))
    (wheel,) = dist.glob("*.whl")
    lock = root / "pylock.toml"
    _uv(
        uv,
        "export",
        "--frozen",
        "--no-dev",
        "--no-emit-project",
        "--format",
        "pylock.toml",
        "--quiet",
        "-o",
        str(lock),
    )
    _uv(uv, "venv", "--quiet", "--python", sys.executable, str(venv))
    python = str(venv / "bin" / "python")
    _uv(uv, "pip", "install", "--quiet", "--python", python, "-r", str(lock))
    # Installed last, so that its `datagouv` command is the one in bin/ (datagouv-client has one).
    _uv(uv, "pip", "install", "--quiet", "--no-deps", "--python", python, str(wheel))
    (site_packages,) = (venv / "lib").glob("python3*/site-packages")
    outside = root / "outside"
    outside.mkdir()
    env = {
        name: value
        for name, value in os.environ.items()
        # Nothing may point back at the checkout or at another environment.
        if name not in {"PYTHONPATH", "VIRTUAL_ENV", "DAGSTER_HOME", "UV_PROJECT_ENVIRONMENT"}
        and not name.startswith("DATAGOUV_EVAL_")
    }
    env |= {"XDG_CACHE_HOME": str(root / "cache"), "PATH": f"{venv / 'bin'}:{env['PATH']}"}
    yield Installed(wheel, venv / "bin", site_packages / "datagouv_eval_pipeline", outside, env)
    # Hundreds of MB (copies when the uv cache is on another file system): pytest keeps the
    # temporary directories of the last runs, so the venv goes now.
    shutil.rmtree(venv, ignore_errors=True)


def test_the_wheel_ships_the_project_files_and_nothing_generated(installed: Installed) -> None:
    with zipfile.ZipFile(installed.wheel) as wheel:
        names = wheel.namelist()
    packaged = "datagouv_eval_pipeline/_project/"
    shipped_kinds = (
        "task_specs/",
        "snapshots/",
        "dbt_metrics/models/",
        "docs/trace.schema.json",
        "docker/sandbox/Dockerfile",
        "dagster_home/dagster.yaml",
    )
    for shipped in shipped_kinds:
        assert any(name.startswith(packaged + shipped) for name in names), shipped
    generated = ("/target/", "/logs/", "/dbt_packages/", "__pycache__", ".pyc", "/dbt-project/")
    assert not [name for name in names if any(part in name for part in generated)]
    # The snapshots are most of it (about 10 MB); much more means something unintended ships.
    assert installed.wheel.stat().st_size < 25_000_000


def _assert_inside(path: str | Path, installed: Installed) -> None:
    resolved = Path(path).resolve()
    assert resolved.is_relative_to(installed.package), f"{resolved} is not in the installed wheel"
    assert not resolved.is_relative_to(REPO), f"{resolved} is in the checkout"


def test_the_installed_package_finds_its_files_in_site_packages(installed: Installed) -> None:
    script = """
import json
import datagouv_eval_pipeline
from datagouv_eval_pipeline.base import project_files as pf
from datagouv_eval_pipeline.defs.dbt_project import DBT_PROJECT_DIR, prepare_manifest
from datagouv_eval_pipeline.core.metrics.provenance import code_version, working_tree_dirty
from datagouv_eval_pipeline.world.catalogue.catalog import CatalogStore

catalog = CatalogStore.load(warm=False)
version = code_version()
print(json.dumps({
    "module": datagouv_eval_pipeline.__file__,
    "checkout": pf.checkout_root() is not None,
    "read": [str(p) for p in (pf.task_specs_dir(), pf.snapshots_dir(), pf.trace_schema_path(),
             pf.example_traces_dir(), pf.sandbox_dockerfile())],
    "workspace": pf.workspace_file(),
    "exist": all(p.exists() for p in (pf.trace_schema_path(), pf.sandbox_dockerfile())),
    "snapshot": str(catalog.info.directory),
    "data": str(pf.data_dir()),
    "dbt": str(DBT_PROJECT_DIR),
    "manifest": str(prepare_manifest()),
    "version": [version.package, version.git_sha, working_tree_dirty()],
}))
"""
    done = installed.run(str(installed.bin / "python"), "-c", script)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    _assert_inside(found["module"], installed)
    assert found["checkout"] is False
    for path in found["read"]:
        _assert_inside(path, installed)
    assert found["exist"]
    assert found["workspace"] is None
    _assert_inside(found["snapshot"], installed)
    # What the pipeline writes goes to the current directory and the cache, never the package.
    assert Path(found["data"]) == installed.cwd / "data"
    cache = Path(installed.env["XDG_CACHE_HOME"])
    assert Path(found["dbt"]).is_relative_to(cache)
    assert Path(found["manifest"]).is_file()
    # No git checkout around the package: the version is the package's, dirtiness unknown.
    assert found["version"] == [metadata.version("datagouv-eval-pipeline"), None, None]


def test_validate_loads_the_packaged_task_specs(installed: Installed) -> None:
    done = installed.run(str(installed.bin / "datagouv-eval"), "validate")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("OK: ")
    _assert_inside(done.stdout.split("benchmark configuration ")[1].split(":")[0], installed)


def test_preflight_checks_the_tasks_on_the_packaged_snapshot(installed: Installed) -> None:
    done = installed.run(str(installed.bin / "datagouv-eval"), "preflight", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["source"].startswith("twin ")
    assert report["quarantined"] == []
    assert len(report["ok"]) == len(report["tasks"]) > 0
    _assert_inside(report["baselines_dir"], installed)


def test_the_dagster_instance_starts_in_the_current_directory(installed: Installed) -> None:
    done = installed.run(str(installed.bin / "datagouv-eval"), "dagster", "ui", "--print-command")
    assert done.returncode == 0, done.stdout + done.stderr
    home = installed.cwd / "dagster_home"
    assert f"DAGSTER_HOME={home}" in done.stdout
    assert (home / "dagster.yaml").is_file()
    assert (home / "pools.yaml").is_file()
    # No workspace.yaml ships; the instance gets one with the checkout's code location.
    assert done.stdout.split(" -w ")[1].split()[0] == str(home / "workspace.yaml")
    assert "datagouv_eval_pipeline.definitions" in (home / "workspace.yaml").read_text()
