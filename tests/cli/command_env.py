"""The real ``datagouv-eval`` command, and an environment of its own for each test that runs it.

Each test gets its own Dagster instance (a copy of the tracked ``dagster.yaml``), run store and
warehouse under its ``tmp_path``, so runs never meet the user's defaults or another test's.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from datagouv_eval_pipeline.cli.dagster_home import DEFAULT_HOME

CLI = str(Path(sys.executable).parent / "datagouv-eval")


def experiment_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """This process's environment with the instance, run store and warehouse under ``tmp_path``.

    Args:
        tmp_path: The test's directory.
        **extra: Variables set on top (keys of a local server, short back-offs).
    """
    home = tmp_path / "dagster_home"
    home.mkdir(exist_ok=True)
    shutil.copy(DEFAULT_HOME / "dagster.yaml", home / "dagster.yaml")
    return {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "DATAGOUV_EVAL_RUN_STORE": str(tmp_path / "run_store"),
        "DATAGOUV_EVAL_DUCKDB": str(tmp_path / "warehouse.duckdb"),
        **extra,
    }
