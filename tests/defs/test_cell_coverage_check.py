"""The ``cell_coverage`` check asks the warehouse's own coverage query (a real DuckDB file)."""

from pathlib import Path

import dagster as dg

from datagouv_eval_pipeline.defs.checks import cell_coverage
from datagouv_eval_pipeline.defs.partitions import ACTIVE_CELLS
from datagouv_eval_pipeline.defs.resources import WarehouseResource
from datagouv_eval_pipeline.pipeline.warehouse import CellLoad, connect, load_cell


def test_the_check_lists_the_active_cells_the_warehouse_lacks(tmp_path: Path) -> None:
    assert len(ACTIVE_CELLS) >= 2
    loaded, *lacking = ACTIVE_CELLS
    db = tmp_path / "w.duckdb"
    with connect(db) as conn:
        load_cell(conn, CellLoad(loaded.to_record(), []))
    result = cell_coverage(warehouse=WarehouseResource(path=str(db)))
    assert isinstance(result, dg.AssetCheckResult)
    assert not result.passed and result.severity == dg.AssetCheckSeverity.WARN
    assert result.metadata["expected"] == dg.IntMetadataValue(len(ACTIVE_CELLS))
    assert result.metadata["present"] == dg.IntMetadataValue(1)
    missing = result.metadata["missing"]
    assert isinstance(missing, dg.MarkdownMetadataValue)
    assert missing.md_str is not None
    assert loaded.key not in missing.md_str
    assert f"- {lacking[0].key}" in missing.md_str
