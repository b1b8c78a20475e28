"""The local instance's SQLite files commit without fsync; other SQLite files are untouched."""

import sqlite3
from pathlib import Path

import dagster as dg
import pytest
import sqlalchemy as sa

from datagouv_eval_pipeline.defs.instance_storage import (
    SYNC_ENV,
    relax_instance_sqlite,
    sqlite_sync_mode,
)

# PRAGMA synchronous reads back as a number: 0 OFF, 1 NORMAL, 2 FULL.
OFF, NORMAL, FULL = 0, 1, 2


def _synchronous(url: str) -> int:
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    with engine.connect() as connection:
        value: int = connection.execute(sa.text("PRAGMA synchronous")).scalar_one()
    engine.dispose()
    return int(value)


def test_the_real_instance_event_log_commits_without_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SYNC_ENV, raising=False)
    relax_instance_sqlite()
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        # instance_for_test sets DAGSTER_HOME to its directory, as a real home would.
        storage = instance.event_log_storage
        with storage.index_connection() as connection:  # type: ignore[attr-defined]
            value = connection.execute(sa.text("PRAGMA synchronous")).scalar_one()
        assert value == OFF
        # Events are still stored and read back.
        instance.report_runless_asset_event(dg.AssetMaterialization("some_asset"))
        assert instance.get_latest_materialization_event(dg.AssetKey("some_asset")) is not None


def test_files_outside_the_dagster_home_keep_sqlites_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    relax_instance_sqlite()
    (tmp_path / "home").mkdir()
    assert _synchronous(f"sqlite:///{tmp_path / 'home' / 'runs.db'}") == OFF
    assert _synchronous(f"sqlite:///{tmp_path / 'other.db'}") == FULL
    # Plain sqlite3 connections (not through SQLAlchemy) are never touched.
    with sqlite3.connect(tmp_path / "home" / "plain.db") as plain:
        assert plain.execute("PRAGMA synchronous").fetchone() == (FULL,)


def test_the_environment_chooses_the_mode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    monkeypatch.setenv(SYNC_ENV, "normal")
    relax_instance_sqlite()
    assert _synchronous(f"sqlite:///{tmp_path / 'runs.db'}") == NORMAL


def test_a_bad_mode_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SYNC_ENV, "sometimes")
    with pytest.raises(ValueError, match=f"{SYNC_ENV}='SOMETIMES': expected one of OFF"):
        sqlite_sync_mode()
