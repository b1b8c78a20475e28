"""The twin's catalogue: the snapshot store, search ranking, Tabular tables, URL scheme.

``catalog.CatalogStore`` loads a snapshot from ``snapshots/``; ``urls.TwinUrls`` tells
clients where the twin answers. Nothing here serves HTTP.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from datagouv_eval_pipeline.base.faces import lazy_attributes

if TYPE_CHECKING:
    from datagouv_eval_pipeline.world.catalogue.catalog import (
        MANIFEST_NAME,
        CatalogStore,
        DatasetFilters,
        SearchPage,
        SnapshotError,
        default_snapshots_dir,
    )
    from datagouv_eval_pipeline.world.catalogue.overlay import DriftOverlay, OverlayError
    from datagouv_eval_pipeline.world.catalogue.tabular import Column, ColumnType
    from datagouv_eval_pipeline.world.catalogue.urls import EXTERNAL_PREFIX, TwinUrls

_MODULE_OF: dict[str, str] = {
    "CatalogStore": ".catalog",
    "Column": ".tabular",
    "ColumnType": ".tabular",
    "DatasetFilters": ".catalog",
    "DriftOverlay": ".overlay",
    "EXTERNAL_PREFIX": ".urls",
    "MANIFEST_NAME": ".catalog",
    "OverlayError": ".overlay",
    "SearchPage": ".catalog",
    "SnapshotError": ".catalog",
    "TwinUrls": ".urls",
    "default_snapshots_dir": ".catalog",
}
"""Each public name, and the module that defines it."""

if not TYPE_CHECKING:  # hidden from mypy, which then checks each name imported from the face
    __getattr__ = lazy_attributes(__name__, _MODULE_OF)


__all__ = [
    "EXTERNAL_PREFIX",
    "MANIFEST_NAME",
    "CatalogStore",
    "Column",
    "ColumnType",
    "DatasetFilters",
    "DriftOverlay",
    "OverlayError",
    "SearchPage",
    "SnapshotError",
    "TwinUrls",
    "default_snapshots_dir",
]
