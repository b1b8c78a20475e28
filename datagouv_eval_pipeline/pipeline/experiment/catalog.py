"""Catalog lookups (slug ↔ id) for the scoring stage: the twin's store, or the live API.

The metrics only know :class:`~datagouv_eval_pipeline.core.metrics.catalog.CatalogLookup`; these are
the two implementations the pipeline passes in, chosen by where the run's catalog was.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import quote

import httpx

from datagouv_eval_pipeline.core.metrics import CatalogObject, ObjectKind
from datagouv_eval_pipeline.pipeline.preflight import USER_AGENT


class CatalogRecords(Protocol):
    """The part of the twin's catalog store a lookup reads (its public API, by id or slug)."""

    def dataset(self, id_or_slug: str) -> dict[str, Any] | None: ...  # noqa: D102

    def dataservice(self, id_or_slug: str) -> dict[str, Any] | None: ...  # noqa: D102

    def organization(self, id_or_slug: str) -> dict[str, Any] | None: ...  # noqa: D102


def _object(kind: ObjectKind, record: Mapping[str, Any] | None) -> CatalogObject | None:
    if not isinstance(record, Mapping) or not isinstance(record.get("id"), str):
        return None
    slug = record.get("slug")
    return CatalogObject(kind, str(record["id"]), str(slug) if isinstance(slug, str) else None)


@dataclass(frozen=True)
class StoreCatalogLookup:
    """Resolves through a twin catalog store (``CatalogStore.dataset`` and friends).

    Attributes:
        store: The store of the snapshot the run used.
    """

    store: CatalogRecords

    def resolve(self, kind: ObjectKind, id_or_slug: str) -> CatalogObject | None:
        """Return the object whose id or slug is ``id_or_slug``, or None."""
        key = id_or_slug.strip()
        if not key:
            return None
        if kind == "dataset":
            return _object(kind, self.store.dataset(key))
        if kind == "dataservice":
            return _object(kind, self.store.dataservice(key))
        return _object(kind, self.store.organization(key))


_PATHS: dict[ObjectKind, str] = {
    "dataset": "datasets",
    "dataservice": "dataservices",
    "organization": "organizations",
}


@dataclass
class ApiCatalogLookup:
    """Resolves through the main API v1 (``GET {api}1/datasets/{id or slug}/``), memoised.

    The API answers the same record for an id and for a slug, so one request resolves either.
    A request that fails resolves to None (the check then accepts the id only).

    Attributes:
        api_base: The API base URL, e.g. ``https://www.data.gouv.fr/api/``.
        timeout: Seconds per request.
    """

    api_base: str
    timeout: float = 15.0
    _memo: dict[tuple[str, str], CatalogObject | None] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def resolve(self, kind: ObjectKind, id_or_slug: str) -> CatalogObject | None:
        """Return the object whose id or slug is ``id_or_slug``, or None."""
        key = (kind, id_or_slug.strip().casefold())
        if not key[1]:
            return None
        with self._lock:
            if key in self._memo:
                return self._memo[key]
        url = f"{self.api_base.rstrip('/')}/1/{_PATHS[kind]}/{quote(id_or_slug.strip(), safe='')}/"
        try:
            response = httpx.get(
                url, timeout=self.timeout, headers={"User-Agent": USER_AGENT}, follow_redirects=True
            )
            found = _object(kind, response.json()) if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None  # not memoised: the next question may get through
        with self._lock:
            self._memo[key] = found
        return found


def twin_catalog_lookup(snapshot_id: str | None = None) -> StoreCatalogLookup:
    """A lookup in a twin snapshot (default: the manifest's current one), loaded once."""
    from datagouv_eval_pipeline.world.catalogue import CatalogStore

    return StoreCatalogLookup(CatalogStore.load(None, snapshot_id))
