"""The ``dbt_metrics`` dbt project as Dagster sees it (no assets here).

This module is the ``--file`` of ``dagster-dbt project prepare-and-package``, which imports it
before any manifest exists: it must not define ``@dbt_assets`` nor use relative imports.

``prepare-and-package`` copies the project with its manifest to
``datagouv_eval_pipeline/dbt-project/`` (git-ignored); outside ``dagster dev`` the ``DbtProject``
then points there. Delete that directory (or run the command again) after editing the models, or
the code location keeps the packaged copy.
"""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from dagster_dbt import DbtProject

from datagouv_eval_pipeline.base import project_files

DBT_PROJECT_DIR = project_files.dbt_project_dir()
"""The dbt project: the checkout's ``dbt_metrics/``, else a writable copy of the wheel's."""

DBT_PACKAGED_DIR = project_files.PACKAGE_DIR / "dbt-project"
"""Where ``prepare-and-package`` copies the project (git-ignored)."""

# Files ``dbt parse`` writes that later invocations read: the manifest (asset definitions) and
# the partial-parse cache (dagster-dbt copies it into each run's target directory).
_PARSE_ARTEFACTS = ("manifest.json", "partial_parse.msgpack")


def _dbt_executable() -> str:
    # The venv's dbt, found next to the running interpreter: scripts such as
    # `.venv/bin/dagster` are often run without activating the venv, so PATH may lack it.
    beside_python = Path(sys.executable).parent / "dbt"
    if beside_python.exists():
        return str(beside_python)
    return shutil.which("dbt") or "dbt"


DBT_EXECUTABLE = _dbt_executable()
"""The dbt CLI to run: the venv's ``dbt`` when present, else the one on PATH."""

dbt_metrics_project = DbtProject(
    project_dir=DBT_PROJECT_DIR,
    packaged_project_dir=DBT_PACKAGED_DIR,
)


def prepare_manifest(project: DbtProject = dbt_metrics_project) -> Path:
    """Write the project's ``manifest.json`` with ``dbt parse``.

    Unlike ``DbtProject.prepare_if_dev``, this runs outside ``dagster dev`` too and calls the venv's
    dbt by path. The parse goes to a temporary directory and its artefacts are moved into place
    one by one (``os.replace`` is atomic), so a concurrent reader never sees a half-written file.

    Args:
        project: The dbt project to parse.

    Returns:
        The path of the manifest.

    Raises:
        RuntimeError: ``dbt parse`` failed; the message carries dbt's output.
    """
    # Imported here: the resources module is heavy, and prepare-and-package imports this file.
    from datagouv_eval_pipeline.defs.resources import DUCKDB_ENV, default_duckdb_path

    target = project.project_dir / project.target_path
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="parse-", dir=target) as scratch:
        command = [
            DBT_EXECUTABLE,
            "parse",
            "--quiet",
            "--project-dir",
            str(project.project_dir),
            "--profiles-dir",
            str(project.profiles_dir),
            "--target-path",
            scratch,
            "--log-path",
            scratch,
        ]
        env = {
            **os.environ,
            "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
            # The path the runs will use by default: dbt hashes the connection (path included)
            # into partial_parse.msgpack, and a different path makes every run re-parse fully.
            DUCKDB_ENV: default_duckdb_path(),
        }
        done = subprocess.run(
            command, cwd=project.project_dir, env=env, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"`dbt parse` of {project.project_dir} failed (exit {done.returncode}):\n"
                f"{done.stdout}{done.stderr}"
            )
        for name in _PARSE_ARTEFACTS:
            produced = Path(scratch) / name
            if produced.exists():
                os.replace(produced, target / name)
    return project.manifest_path


def ensure_manifest(project: DbtProject = dbt_metrics_project) -> Path:
    """Return the manifest path, parsing first when it is missing or stale.

    A fresh clone has no manifest (``target/`` is git-ignored), and ``@dbt_assets`` needs one at
    import; parsing once makes ``pytest``, ``dagster definitions validate`` and ``dagster asset
    materialize`` work without a build step. A model, macro, test or project file edited, added
    or deleted since the parse makes it stale, under ``dagster dev`` too: edits show up on
    reload, and a load that changed nothing (each run worker's, each reload's) parses nothing.

    Args:
        project: The dbt project.

    Returns:
        The path of the manifest.
    """
    if not project.manifest_path.exists() or _sources_newer_than(
        project.manifest_path, Path(project.project_dir)
    ):
        return prepare_manifest(project)
    return project.manifest_path


_SOURCE_FOLDERS = ("models", "macros", "tests", "seeds", "snapshots", "analyses")
"""The project's folders dbt parses (those that exist)."""
_PROJECT_FILES = ("dbt_project.yml", "profiles.yml", "packages.yml", "dependencies.yml")


def _sources_newer_than(manifest: Path, project_dir: Path) -> bool:
    """Whether a model, macro, test or project file changed after the manifest was parsed.

    A checkout that gains or loses a model (a pull, a branch switch) would otherwise keep
    building the old set of models from a stale manifest. The folders count too: deleting a
    file changes its folder's time, not any remaining file's.
    """
    built = manifest.stat().st_mtime_ns
    sources = [project_dir / name for name in _PROJECT_FILES]
    for name in _SOURCE_FOLDERS:
        folder = project_dir / name
        sources.append(folder)
        sources.extend(
            p for p in folder.rglob("*") if p.is_dir() or p.suffix in (".sql", ".yml", ".csv")
        )
    return any(path.exists() and path.stat().st_mtime_ns > built for path in sources)
