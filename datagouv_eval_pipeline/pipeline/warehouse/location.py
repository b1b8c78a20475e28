"""Where the warehouse file is: ``$DATAGOUV_EVAL_DUCKDB`` or ``data/warehouse.duckdb``."""

from __future__ import annotations

import os
from pathlib import Path

from datagouv_eval_pipeline.base import project_files

DUCKDB_ENV = "DATAGOUV_EVAL_DUCKDB"
"""The variable naming the DuckDB file (``dbt_metrics/profiles.yml`` reads it too)."""

DEFAULT_DUCKDB = project_files.data_dir() / "warehouse.duckdb"


def default_duckdb_path() -> str:
    """``$DATAGOUV_EVAL_DUCKDB`` or ``data/warehouse.duckdb``, absolute."""
    value = os.environ.get(DUCKDB_ENV)
    return str(Path(value).expanduser().resolve() if value else DEFAULT_DUCKDB)
