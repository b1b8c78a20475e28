"""The cell's identity is declared once (``CellRecord``); ``eval.cells`` holds every field of it."""

from datagouv_eval_pipeline.core.benchmark.cells import CellRecord
from datagouv_eval_pipeline.pipeline.warehouse.schema import CELLS


def test_every_field_of_the_cell_identity_is_a_column_of_eval_cells() -> None:
    fields = {"cell_key" if name == "key" else name for name in CellRecord.model_fields}
    columns = set(CELLS.column_names)
    assert fields <= columns
    # What the warehouse adds: the derived name of the capabilities and the load's own facts.
    assert columns - fields == {"capability_set", "loaded_at", "stale_reason"}
