"""Drift overlays change a copy of the catalog, seen by every API of the twin."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from datagouv_eval_pipeline.world.catalogue.catalog import CatalogStore
from datagouv_eval_pipeline.world.catalogue.overlay import DriftOverlay, OverlayError
from datagouv_eval_pipeline.world.catalogue.urls import TwinUrls

from .factories import (
    DIAG,
    DIAG_TABLE,
    DRIFT,
    PERMITS_NONRES,
    RNE_CM,
    TRANSPORTS_TABLE,
)


@pytest.fixture(scope="module")
def drifted(store: CatalogStore) -> CatalogStore:
    return DRIFT.apply(store)


def test_apply_leaves_the_original_store_untouched(
    store: CatalogStore, drifted: CatalogStore
) -> None:
    assert store.datasets[DIAG]["title"] != "Annuaire (archive)"
    assert drifted.datasets[DIAG]["title"] == "Annuaire (archive)"
    assert store.resource(PERMITS_NONRES) is not None and drifted.resource(PERMITS_NONRES) is None
    original, changed = store.table(TRANSPORTS_TABLE), drifted.table(TRANSPORTS_TABLE)
    assert original is not None and changed is not None
    assert (len(original.rows), len(changed.rows)) == (144, 100)
    assert drifted.info.manifest["overlay"] == "test-drift"
    assert "overlay" not in store.info.manifest


def test_drift_is_visible_to_search_counts_and_downloads(drifted: CatalogStore) -> None:
    assert drifted.search_datasets("annuaire archive", page_size=1).ids == [DIAG]
    table = drifted.table(DIAG_TABLE)
    assert table is not None
    header = table.source_text.splitlines()[0].split(table.separator)
    assert "numero_certificat" not in header and "code_postal" in header
    assert [c.type for c in table.columns if c.name == "code_postal"] == ["int"]
    toulouse_women = [("Code de la commune", "exact", "31555"), ("Code sexe", "exact", "F")]
    assert drifted.aggregate(RNE_CM, toulouse_women) == 34


def test_the_drifted_twin_serves_the_drift_over_http(drift_twin: TwinUrls) -> None:
    profile = httpx.get(f"{drift_twin.tabular_api}resources/{DIAG_TABLE}/profile/").json()
    assert profile["profile"]["columns"]["code_postal"]["python_type"] == "int"
    assert "numero_certificat" not in profile["profile"]["header"]
    gone = httpx.get(f"{drift_twin.datagouv_api}2/datasets/resources/{PERMITS_NONRES}/")
    assert gone.status_code == 404
    data = httpx.get(f"{drift_twin.tabular_api}resources/{TRANSPORTS_TABLE}/data/?page_size=1")
    assert data.json()["meta"]["total"] == 100


def test_an_overlay_file_with_a_bad_field_names_the_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "drift.yaml"
    path.write_text(
        "name: bad\nchanges:\n  - op: set_row_count\n    resource_id: x\n    rows: -1\n",
        encoding="utf-8",
    )
    with pytest.raises(OverlayError) as caught:
        DriftOverlay.load(path)
    assert str(path) in str(caught.value)
    assert "changes.0.set_row_count.rows" in str(caught.value)


def test_an_overlay_file_loads(tmp_path: Path, store: CatalogStore) -> None:
    path = tmp_path / "drift.yaml"
    path.write_text(
        "name: rename\nchanges:\n"
        f"  - {{op: rename_title, type: resource, id: {DIAG_TABLE}, title: Liste}}\n",
        encoding="utf-8",
    )
    drifted = DriftOverlay.load(path).apply(store)
    found = drifted.resource(DIAG_TABLE)
    assert found is not None and found[1]["title"] == "Liste"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"op": "remove_resource", "resource_id": "nope"},
            "changes[0] (remove_resource): no resource 'nope' in the catalog",
        ),
        (
            {"op": "drop_column", "resource_id": DIAG_TABLE, "column": "nope"},
            "changes[0] (drop_column): the table has no column 'nope'",
        ),
        (
            {"op": "change_column", "resource_id": DIAG_TABLE, "column": "nom", "type": "int"},
            "changes[0] (change_column): row 1:",
        ),
        (
            {"op": "remove_from_tabular", "resource_id": "3e8ed2dd-4052-4f93-ad19-ef71016ab7b4"},
            "is not in the Tabular API",
        ),
    ],
)
def test_a_change_that_does_not_fit_the_catalog_is_named(
    store: CatalogStore, change: dict[str, object], message: str
) -> None:
    overlay = DriftOverlay.from_data({"name": "bad", "changes": [change]})
    with pytest.raises(OverlayError, match="overlay 'bad'") as caught:
        overlay.apply(store)
    assert message in str(caught.value)
