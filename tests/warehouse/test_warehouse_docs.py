from __future__ import annotations

from pathlib import Path

import yaml

from datagouv_eval_pipeline.pipeline.warehouse import ALL_TABLES, SCHEMA
from datagouv_eval_pipeline.pipeline.warehouse.schema import HISTORY_TABLES

ROOT = Path(__file__).resolve().parents[2]


def test_docs_list_every_table_and_column() -> None:
    text = (ROOT / "docs" / "warehouse.md").read_text(encoding="utf-8")
    for table in ALL_TABLES:
        section = text.split(f"### `eval.{table.name}`", 1)
        assert len(section) == 2, f"docs/warehouse.md has no section for eval.{table.name}"
        body = section[1].split("\n### ", 1)[0]
        copied = {history.name: name for name, history in HISTORY_TABLES.items()}
        if table.name in copied:
            # A history table repeats its cell table's columns: documented once, there.
            assert "| `experiment_id` | VARCHAR |" in body, table.name
            assert f"Every column of `eval.{copied[table.name]}`" in body, table.name
            continue
        for column in table.columns:
            assert f"| `{column.name}` | {column.type} |" in body, (table.name, column.name)


def test_dbt_sources_are_the_warehouse_tables_named_like_asset_keys() -> None:
    sources = yaml.safe_load((ROOT / "dbt_metrics" / "models" / "sources.yml").read_text())
    (source,) = sources["sources"]
    assert (source["name"], source["schema"]) == (SCHEMA, SCHEMA)
    assert [t["name"] for t in source["tables"]] == [t.name for t in ALL_TABLES]


def test_dbt_profile_reads_the_duckdb_path_from_the_environment() -> None:
    profile = yaml.safe_load((ROOT / "dbt_metrics" / "profiles.yml").read_text())
    output = profile["dbt_metrics"]["outputs"]["dev"]
    assert output["type"] == "duckdb"
    assert "env_var('DATAGOUV_EVAL_DUCKDB'" in output["path"]
