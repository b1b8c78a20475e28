"""Tabular tables are parsed on first use: once, under concurrency, with the same result."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import threading
from pathlib import Path

import pytest

from datagouv_eval_pipeline.world.catalogue.catalog import (
    CatalogStore,
    SnapshotError,
    default_snapshots_dir,
)
from datagouv_eval_pipeline.world.catalogue.overlay import DriftOverlay
from datagouv_eval_pipeline.world.catalogue.tabular import Column, LazyTables, Table

CSV = "commune;population\nAuch;22000\nCondom;6700\n"
COLUMNS = [Column("commune", "string"), Column("population", "int")]
GERS = "ea4f5879-af40-4e3e-949d-812d6eeb5e02"


class CountingParser:
    """A parse function that counts its calls and can be made to wait or fail."""

    def __init__(self, text: str = CSV, gate: threading.Event | None = None) -> None:
        self.text = text
        self.gate = gate
        self.calls = 0

    def __call__(self) -> Table:
        self.calls += 1
        if self.gate is not None:
            self.gate.wait(5)
        return Table.from_csv("t", self.text, COLUMNS, ";", origin="t.csv")


def test_a_table_is_parsed_on_first_read_only() -> None:
    parse = CountingParser()
    tables = LazyTables(parsers={"t": parse})
    assert "t" in tables and len(tables) == 1 and list(tables) == ["t"]
    assert parse.calls == 0 and not tables.is_parsed("t")
    first = tables["t"]
    assert tables["t"] is first and tables.get("t") is first
    assert parse.calls == 1 and tables.is_parsed("t")
    assert [row[1] for row in first.rows] == [22000, 6700]
    assert tables.get("missing") is None and "missing" not in tables


def test_concurrent_first_reads_parse_once_and_see_the_same_table() -> None:
    gate = threading.Event()
    parse = CountingParser(gate=gate)
    tables = LazyTables(parsers={"t": parse})
    seen: list[Table] = []
    threads = [threading.Thread(target=lambda: seen.append(tables["t"])) for _ in range(8)]
    for thread in threads:
        thread.start()
    gate.set()
    for thread in threads:
        thread.join(5)
    assert parse.calls == 1
    assert len(seen) == 8 and all(table is seen[0] for table in seen)


def test_a_failed_parse_is_raised_again_not_cached() -> None:
    parse = CountingParser(text="commune;population\nAuch;many\n")
    tables = LazyTables(parsers={"t": parse})
    for _ in range(2):
        with pytest.raises(ValueError, match=r"t\.csv: line 2, column 'population'"):
            tables["t"]
    assert parse.calls == 2 and not tables.is_parsed("t")


def test_a_copy_shares_parsing_but_not_its_names() -> None:
    parse = CountingParser()
    tables = LazyTables(parsers={"t": parse, "u": CountingParser()})
    copy = tables.copy()
    del copy["u"]
    copy["v"] = Table.from_csv("v", CSV, COLUMNS, ";", origin="v.csv")
    assert list(tables) == ["t", "u"] and list(copy) == ["t", "v"]
    assert copy["t"] is tables["t"] and parse.calls == 1


def test_loading_parses_no_table_and_a_read_parses_one() -> None:
    store = CatalogStore.load()
    assert len(store.tables) >= 12
    assert not any(store.tables.is_parsed(rid) for rid in store.tables)
    assert not any(store.metrics.is_parsed(model) for model in store.metrics)
    table = store.table(GERS)
    assert table is not None and store.tables.is_parsed(GERS)
    assert sum(store.tables.is_parsed(rid) for rid in store.tables) == 1
    # Parsing is a pure function of the snapshot: a second load gives the same rows.
    again = CatalogStore.load().table(GERS)
    assert again is not None and again.rows == table.rows and again.columns == table.columns


def test_an_overlay_parses_only_the_tables_it_changes() -> None:
    fresh = CatalogStore.load()
    overlay = DriftOverlay.from_data(
        {"name": "no-gers", "changes": [{"op": "remove_from_tabular", "resource_id": GERS}]}
    )
    drifted = overlay.apply(fresh)
    assert GERS not in drifted.tables and GERS in fresh.tables
    assert not any(fresh.tables.is_parsed(rid) for rid in fresh.tables)
    assert not any(drifted.tables.is_parsed(rid) for rid in drifted.tables)


def _copy_with_table(tmp_path: Path, rid: str, csv_text: str) -> Path:
    """Copy the snapshots with one table's CSV replaced (and its sha256 updated)."""
    source = default_snapshots_dir()
    root = tmp_path / "snapshots"
    shutil.copytree(source, root)
    data = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    entry = next(s for s in data["snapshots"] if s["snapshot_id"] == data["current"])
    schemas = json.loads((root / entry["snapshot_id"] / "tables.json").read_text("utf-8"))
    name = schemas["tabular"][rid]["file"]
    content = gzip.compress(csv_text.encode())
    (root / entry["snapshot_id"] / name).write_bytes(content)
    entry["files"][name]["sha256"] = hashlib.sha256(content).hexdigest()
    (root / "manifest.json").write_text(json.dumps(data), encoding="utf-8")
    return root


def test_a_malformed_table_fails_on_first_use_with_file_and_line(tmp_path: Path) -> None:
    store = CatalogStore.load()
    table = store.table(GERS)
    assert table is not None
    header = table.separator.join(table.header)
    bad_row = table.separator.join("x" for _ in table.columns)
    root = _copy_with_table(tmp_path, GERS, f"{header}\n{bad_row}\n")
    broken = CatalogStore.load(root)  # the schema is fine: loading succeeds
    with pytest.raises(SnapshotError, match=r"\.csv\.gz: .*line 2, column") as error:
        broken.table(GERS)
    assert "tabular/" in str(error.value)
