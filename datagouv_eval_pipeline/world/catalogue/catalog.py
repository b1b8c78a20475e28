"""The catalog store: loads a twin snapshot, verifies it, and answers lookups and searches.

The store is the one place that knows the snapshot layout. The HTTP app, and later the MCP
servers and the resource validator, read the catalog through it:

    store = CatalogStore.load()                 # current snapshot of ./snapshots
    store.dataset("5d13a8b6634f41070a43dff3")   # record (v1 shape, real URLs) or None
    store.search_datasets("équipements sportifs", page=1, page_size=20)

Records are plain dicts in the udata v1 shape with the real data.gouv.fr URLs and an internal
``_twin`` key; :mod:`datagouv_eval_pipeline.world.api.render` turns them into API responses.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from datagouv_eval_pipeline.base import project_files
from datagouv_eval_pipeline.base.text import fold
from datagouv_eval_pipeline.world.catalogue import (
    catalogue_export,
    facts,
    generated,
    search,
    tabular,
)
from datagouv_eval_pipeline.world.catalogue.search import FieldIndex, Segment
from datagouv_eval_pipeline.world.catalogue.urls import external_key

_T = TypeVar("_T")
SNAPSHOTS_ENV = "DATAGOUV_EVAL_SNAPSHOTS"
_STATIC_PREFIX = "static.data.gouv.fr/resources/"
MANIFEST_NAME = "manifest.json"
# The v2 dataset search's facets, in udata_search_service's order.
_FACETS = (
    "format_family",
    "access_type",
    "producer_type",
    "organization_id_with_name",
    "last_update",
    "tag",
    "license",
    "format",
    "schema",
    "geozone",
    "granularity",
    "badge",
    "topics",
)
# The v2 dataservice search's facets, in udata_search_service's order.
_DATASERVICE_FACETS = (
    "access_type",
    "producer_type",
    "organization_id_with_name",
    "tag",
    "badge",
    "last_update",
)
# Dataservice facet -> the filter it leaves out of its own counts (udata_search_service
# query_dataservices, get_filters_except). ``tag`` has none: udata's ``tag`` is a list filter,
# which the service files under the filters every facet counts; ``badge`` is not a filter.
_DATASERVICE_OWN_FILTERS = {
    "access_type": "access_type",
    "producer_type": "producer_type",
    "organization_id_with_name": "organization",
    "last_update": "last_update_range",
}
# Organization badges that are producer types (udata's PRODUCER_BADGE_TYPES).
PRODUCER_BADGES = frozenset({"public-service", "association", "company", "local-authority"})
DATASET_FIELDS = ("title", "acronym", "organization", "tags", "description", "resources")
DATASERVICE_FIELDS = ("title", "organization", "description")
ORGANIZATION_FIELDS = ("title", "acronym", "description")
API_VERSIONS = (1, 2)

LAST_UPDATE_RANGES = {
    "last_30_days": timedelta(days=30),
    "last_12_months": timedelta(days=365),
    "last_3_years": timedelta(days=3 * 365),
}
_DATASET_SORTS: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "created": lambda d: d["created_at"],
    "last_update": lambda d: d["last_update"],
    "reuses": lambda d: d["metrics"].get("reuses", 0),
    "followers": lambda d: d["metrics"].get("followers", 0),
    "views": lambda d: d["metrics"].get("views", 0),
}
_DATASERVICE_SORTS: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "title": lambda d: fold(d["title"]),
    "base_api_url": lambda d: d.get("base_api_url") or "",
    "created": lambda d: d.get("created_at") or "",
    "last_modified": lambda d: d.get("metadata_modified_at") or "",
    "followers": lambda d: (d.get("metrics") or {}).get("followers", 0),
    "views": lambda d: (d.get("metrics") or {}).get("views", 0),
}
_ORG_SORTS: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "name": lambda o: fold(o["name"]),
    "datasets": lambda o: o["metrics"].get("datasets", 0),
    "reuses": lambda o: o["metrics"].get("reuses", 0),
    "followers": lambda o: o["metrics"].get("followers", 0),
    "views": lambda o: o["metrics"].get("views", 0),
    "created": lambda o: o["created_at"],
    "last_modified": lambda o: o["last_modified"],
}


@dataclass(frozen=True)
class DatasetFilters:
    """The dataset filters udata declares beyond those the MCP servers send (all optional).

    Each one is applied as udata applies it (``core/dataset/api.py`` ``parse_filters`` for v1,
    ``udata_search_service`` ``query_datasets`` filters for v2); a filter on data the
    catalogue export does not carry (zones, owners, schemas, topics, temporal coverage) keeps
    only the curated records that have it.

    Attributes:
        license: A licence id; ``a|b`` is either (v2 ``ModelTermsFilter``).
        featured: Only featured datasets (True) or only the others (False).
        granularity: Spatial granularities, any of them.
        geozone: A zone id the dataset covers.
        access_type: ``open``, ``open_with_account`` or ``restricted``.
        format_family: A resource format family (udata ``FormatFamily``).
        producer_type: The publisher's producer type (udata ``get_producer_type``).
        organization_badge: A badge of the publishing organization.
        organization_name: The publishing organization's exact name.
        owner: The owning user's id.
        schema: Resource schema names, any of them.
        topic: A topic id.
        temporal_coverage: ``YYYY-MM-DD-YYYY-MM-DD``.
    """

    license: str | None = None
    featured: bool | None = None
    granularity: tuple[str, ...] = ()
    geozone: str | None = None
    access_type: str | None = None
    format_family: str | None = None
    producer_type: str | None = None
    organization_badge: str | None = None
    organization_name: str | None = None
    owner: str | None = None
    schema: tuple[str, ...] = ()
    topic: str | None = None
    temporal_coverage: str | None = None

    def key(self) -> tuple[Any, ...]:
        """A hashable summary (facet cache key)."""
        return tuple(getattr(self, f) for f in self.__dataclass_fields__)


NO_FILTERS = DatasetFilters()


@dataclass(frozen=True, slots=True)
class _Chosen:
    """The filters of one v2 dataset search, to drop a facet's own filter when counting it."""

    last_update_range: str | None
    organization: str | None
    tag: str | None
    more_tags: tuple[str, ...]
    format: str | None
    badge: str | None
    filters: DatasetFilters

    def tags(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(([self.tag] if self.tag else []) + list(self.more_tags)))

    def key(self) -> tuple[Any, ...]:
        return (*(getattr(self, f) for f in self.__slots__ if f != "filters"), self.filters.key())

    def own_filters(self) -> dict[str, _Chosen]:
        """Facet name -> a choice holding only that facet's own filter (for facets filtered)."""
        blank = _Chosen(None, None, None, (), None, None, NO_FILTERS)
        own: dict[str, _Chosen] = {}
        if self.last_update_range in LAST_UPDATE_RANGES:
            own["last_update"] = replace(blank, last_update_range=self.last_update_range)
        if self.organization:
            own["organization_id_with_name"] = replace(blank, organization=self.organization)
        if self.format:
            own["format"] = replace(blank, format=self.format)
        for name, field_name in _OWN_FILTER_FIELDS:
            value = getattr(self.filters, field_name)
            if value:
                only = replace(NO_FILTERS, **{field_name: value})
                own[name] = replace(blank, filters=only)
        return own

    def relaxed(self) -> _Chosen:
        """These filters without the badge and without every facet's own filter."""
        cleared: dict[str, Any] = {
            field_name: () if isinstance(getattr(NO_FILTERS, field_name), tuple) else None
            for _, field_name in _OWN_FILTER_FIELDS
        }
        return replace(
            self,
            last_update_range=None,
            organization=None,
            format=None,
            badge=None,
            filters=replace(self.filters, **cleared),
        )


# Dataset facets whose own filter is one of DatasetFilters' fields (facet, field).
_OWN_FILTER_FIELDS = (
    ("license", "license"),
    ("granularity", "granularity"),
    ("geozone", "geozone"),
    ("access_type", "access_type"),
    ("format_family", "format_family"),
    ("producer_type", "producer_type"),
    ("schema", "schema"),
    ("topics", "topic"),
)


class SnapshotError(Exception):
    """The snapshot cannot be loaded; the message names the file (and record) at fault."""


def default_snapshots_dir() -> Path:
    """Return ``$DATAGOUV_EVAL_SNAPSHOTS``, else ``snapshots/`` (the checkout's or the wheel's)."""
    override = os.environ.get(SNAPSHOTS_ENV)
    if override:
        return Path(override)
    return project_files.snapshots_dir()


@dataclass(frozen=True)
class SnapshotInfo:
    """Identity of the loaded snapshot.

    Attributes:
        snapshot_id: Directory name under ``snapshots/``.
        created_at: When the content is dated; the twin's "now" for relative dates.
        directory: Absolute path of the snapshot directory.
        manifest: The snapshot's manifest entry (files, counts, facts, record provenance).
    """

    snapshot_id: str
    created_at: datetime
    directory: Path
    manifest: dict[str, Any]


@dataclass(frozen=True)
class SearchPage:
    """One page of search results: ids in rank order and the total number of matches."""

    total: int
    ids: list[str]
    page: int
    page_size: int
    facets: dict[str, list[dict[str, Any]]] | None = None


@dataclass(frozen=True)
class ExternalFile:
    """A file the catalog locates on another host and the twin serves itself."""

    kind: str  # "resource" or "spec"
    ref: str  # resource id or dataservice id


@dataclass
class CatalogStore:
    """A loaded, verified snapshot with its indexes. Build it with :meth:`load`."""

    info: SnapshotInfo
    organizations: dict[str, dict[str, Any]]
    datasets: dict[str, dict[str, Any]]
    dataservices: dict[str, dict[str, Any]]
    tables: tabular.LazyTables
    downloads: dict[str, str]
    metrics: tabular.LazyTables
    crawler_exceptions: list[dict[str, Any]]
    specs: dict[str, tuple[str, bytes]]
    catalogue: facts.CatalogueDatasets | None = None
    tabular_deleted: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Resources deleted by their producer that api-tabular still indexes: resource id ->
    (``deleted_at``, dataset id). Its routes answer 410 for them."""
    _slugs: dict[str, dict[str, str]] = field(default_factory=dict, repr=False)
    _resources: dict[str, tuple[str, int]] = field(default_factory=dict, repr=False)
    _external: dict[str, ExternalFile] = field(default_factory=dict, repr=False)
    _segments: dict[str, list[Segment]] = field(default_factory=dict, repr=False)
    _profiles: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    _facets: dict[tuple[Any, ...], dict[str, list[dict[str, Any]]]] = field(
        default_factory=dict, repr=False
    )
    _facet_orders: dict[tuple[Any, ...], tuple[tuple[object, ...], Any]] = field(
        default_factory=dict, repr=False
    )

    # ----------------------------------------------------------------------------- loading

    @classmethod
    def load(
        cls,
        snapshots_dir: Path | str | None = None,
        snapshot_id: str | None = None,
        *,
        verify: bool = True,
        warm: bool = True,
    ) -> CatalogStore:
        """Load and index a snapshot.

        Args:
            snapshots_dir: The ``snapshots/`` directory; defaults to :func:`default_snapshots_dir`.
            snapshot_id: Which snapshot; defaults to the manifest's ``current``.
            verify: Check every file's sha256 against the manifest first.
            warm: Prepare the catalogue's search index and columns in a background thread, so
                the first search does not pay for them (the load itself stays fast).

        Raises:
            SnapshotError: missing manifest or file, sha256 mismatch, or a malformed record;
                the message names the file (and the record or line).
        """
        root = Path(snapshots_dir) if snapshots_dir is not None else default_snapshots_dir()
        manifest_path = root / MANIFEST_NAME
        if not manifest_path.is_file():
            raise SnapshotError(
                f"{manifest_path}: no snapshot manifest (build one with "
                "`datagouv-eval twin build-snapshot`)"
            )
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise SnapshotError(f"{manifest_path}: invalid JSON: {error}") from error
        wanted = snapshot_id or manifest.get("current")
        entries = {s.get("snapshot_id"): s for s in manifest.get("snapshots", [])}
        if wanted not in entries:
            raise SnapshotError(
                f"{manifest_path}: snapshot {wanted!r} is not listed "
                f"(available: {sorted(k for k in entries if k)})"
            )
        entry = entries[wanted]
        directory = root / str(wanted)
        files: dict[str, bytes] = {}
        for name, meta in sorted(entry.get("files", {}).items()):
            path = directory / name
            if not path.is_file():
                raise SnapshotError(f"{path}: listed in the manifest but missing")
            content = path.read_bytes()
            if verify:
                actual = hashlib.sha256(content).hexdigest()
                if actual != meta.get("sha256"):
                    raise SnapshotError(
                        f"{path}: sha256 mismatch (manifest {meta.get('sha256')}, file {actual}); "
                        "the file was edited or corrupted — rebuild it with "
                        "`datagouv-eval twin build-snapshot`"
                    )
            files[name] = content
        info = SnapshotInfo(
            snapshot_id=str(wanted),
            created_at=datetime.fromisoformat(str(entry["created_at"]).replace("Z", "+00:00")),
            directory=directory,
            manifest=entry,
        )
        store = cls._from_files(info, files)
        if warm and store.catalogue is not None:
            threading.Thread(target=store._warm, name="catalogue-warm-up", daemon=True).start()
        return store

    def _warm(self) -> None:
        # Errors surface on the first search instead, where a request can report them.
        with contextlib.suppress(Exception):
            self._dataset_segments()
            if self.catalogue is not None:
                self.catalogue.warm()
                for _, column, multi in _CATALOGUE_FACETS:
                    self.catalogue.codes(column, multi)

    @classmethod
    def _from_files(cls, info: SnapshotInfo, files: Mapping[str, bytes]) -> CatalogStore:
        def need(name: str) -> bytes:
            if name not in files:
                raise SnapshotError(f"{info.directory / name}: required file not in the manifest")
            return files[name]

        organizations = _read_records(
            info.directory / "organizations.jsonl.gz",
            need("organizations.jsonl.gz"),
            ("id", "name", "slug", "metrics", "badges"),
        )
        datasets = _read_records(
            info.directory / "datasets.jsonl.gz",
            need("datasets.jsonl.gz"),
            ("id", "title", "slug", "resources", "organization", "created_at", "last_update"),
        )
        dataservices = _read_records(
            info.directory / "dataservices.jsonl.gz",
            need("dataservices.jsonl.gz"),
            ("id", "title", "slug", "organization", "datasets"),
        )
        schemas_path = info.directory / "tables.json"
        try:
            schemas = json.loads(need("tables.json"))
        except json.JSONDecodeError as error:
            raise SnapshotError(f"{schemas_path}: invalid JSON: {error}") from error
        metric_parsers = {
            model: _table_parser(info.directory, model, schema, files)
            for model, schema in schemas.get("metrics", {}).items()
        }
        if "organizations" in metric_parsers and "site" not in metric_parsers:
            # Derived from the organizations model on first use (``metrics`` is bound by then).
            metric_parsers["site"] = lambda: site_metrics(metrics["organizations"])
        metrics = tabular.LazyTables(parsers=metric_parsers)
        downloads: dict[str, str] = {}
        for rid, schema in schemas.get("downloads", {}).items():
            name = str(schema.get("file"))
            if name not in files:
                raise SnapshotError(
                    f"{info.directory / name}: download listed in tables.json, not in the manifest"
                )
            downloads[rid] = gzip.decompress(files[name]).decode("utf-8")
        crawler_path = info.directory / "crawler/resources-exceptions.json"
        try:
            exceptions = json.loads(need("crawler/resources-exceptions.json"))
        except json.JSONDecodeError as error:
            raise SnapshotError(f"{crawler_path}: invalid JSON: {error}") from error
        specs = {}
        for name, content in files.items():
            if name.startswith("specs/"):
                stem, _, fmt = name[len("specs/") :].rpartition(".")
                specs[stem] = (fmt, content)
        org_map = {o["id"]: o for o in organizations}
        catalogue = None
        if facts.FILE_NAME in files:
            try:
                columns = facts.decode(
                    files[facts.FILE_NAME], str(info.directory / facts.FILE_NAME)
                )
            except facts.FactsError as error:
                raise SnapshotError(str(error)) from error
            catalogue = facts.CatalogueDatasets(columns, org_map)
        # A tabular table is named like api-tabular's parsing table (md5 of the resource id).
        # Parsed on first use (most of the load time otherwise); schemas are checked now.
        parsers: dict[str, Callable[[], tabular.Table]] = {}
        for rid, schema in schemas.get("tabular", {}).items():
            name = hashlib.md5(rid.encode()).hexdigest()
            if "derived" in schema:
                parsers[rid] = _derived_parser(info.directory, name, schema, catalogue, datasets)
            else:
                parsers[rid] = _table_parser(info.directory, name, schema, files)
        tables = tabular.LazyTables(parsers=parsers)
        store = cls(
            info=info,
            organizations=org_map,
            datasets={d["id"]: d for d in datasets},
            dataservices={s["id"]: s for s in dataservices},
            tables=tables,
            downloads=downloads,
            metrics=metrics,
            crawler_exceptions=exceptions,
            specs=specs,
            catalogue=catalogue,
        )
        store._index(info.directory)
        return store

    def _index(self, directory: Path) -> None:
        self._slugs = {
            "organization": {o["slug"]: i for i, o in self.organizations.items()},
            "dataset": {d["slug"]: i for i, d in self.datasets.items()},
            "dataservice": {s["slug"]: i for i, s in self.dataservices.items()},
        }
        for dataset_id, record in self.datasets.items():
            for position, resource in enumerate(record["resources"]):
                if resource["id"] in self._resources:
                    raise SnapshotError(
                        f"{directory / 'datasets.jsonl.gz'}: resource {resource['id']} appears "
                        f"in two datasets"
                    )
                self._resources[resource["id"]] = (dataset_id, position)
                self._add_external(resource.get("url"), ExternalFile("resource", resource["id"]))
        for service_id, record in self.dataservices.items():
            if service_id in self.specs:
                self._add_external(
                    record.get("machine_documentation_url"), ExternalFile("spec", service_id)
                )
        for rid in self.tables:
            if rid not in self._resources:
                raise SnapshotError(
                    f"{directory / 'tables.json'}: table {rid} has no resource in datasets.jsonl.gz"
                )
        # Search segments are built on the first search (the catalogue's index is cached on disk).
        self._segments = {}

    def _add_external(self, url: str | None, target: ExternalFile) -> None:
        if not url or url.startswith(("https://www.data.gouv.fr/", "http://www.data.gouv.fr/")):
            return
        key = external_key(url)
        previous = self._external.get(key)
        if previous is not None and previous != target:
            raise SnapshotError(
                f"{self.info.directory}: URL {url} is used by both {previous} and {target}"
            )
        self._external[key] = target

    # ----------------------------------------------------------------------------- lookups

    @property
    def snapshot_id(self) -> str:
        """Return the loaded snapshot's id."""
        return self.info.snapshot_id

    @property
    def now(self) -> datetime:
        """Return the twin's clock: the snapshot's creation time (UTC)."""
        return self.info.created_at

    def _by_id_or_slug(
        self, kind: str, records: Mapping[str, dict[str, Any]], key: str
    ) -> dict[str, Any] | None:
        record = records.get(key)
        if record is None:
            ident = self._slugs[kind].get(key)
            record = records.get(ident) if ident else None
        return record

    def dataset(self, id_or_slug: str) -> dict[str, Any] | None:
        """Return the dataset record (deleted ones included) or ``None``.

        Curated records (``store.datasets``) first, then the real catalogue's
        (``store.catalogue``, built on demand).
        """
        record = self._by_id_or_slug("dataset", self.datasets, id_or_slug)
        if record is None and self.catalogue is not None:
            if id_or_slug in self.catalogue:
                return self.catalogue[id_or_slug]
            ident = self.catalogue.by_slug(id_or_slug)
            record = self.catalogue[ident] if ident else None
        return record

    def dataset_count(self) -> tuple[int, int]:
        """Return ``(all datasets, searchable ones)``; searchable = not archived/deleted/private."""
        curated = sum(1 for d in self.datasets.values() if self._visible_dataset(d))
        if self.catalogue is None:
            return len(self.datasets), curated
        live = int((~self.catalogue.archived()).sum())
        return len(self.datasets) + len(self.catalogue), curated + live

    def organization(self, id_or_slug: str) -> dict[str, Any] | None:
        """Return the organization record or ``None``."""
        return self._by_id_or_slug("organization", self.organizations, id_or_slug)

    def dataservice(self, id_or_slug: str) -> dict[str, Any] | None:
        """Return the dataservice record or ``None``."""
        return self._by_id_or_slug("dataservice", self.dataservices, id_or_slug)

    def resource(self, rid: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """Return ``(dataset, resource)`` for a resource id, or ``None``."""
        located = self._resources.get(rid)
        if located is None:
            return self._generated(rid)
        dataset_id, position = located
        dataset = self.datasets[dataset_id]
        return dataset, dataset["resources"][position]

    def tabular_gone(self, rid: str) -> tuple[str, str] | None:
        """Return (``deleted_at``, dataset id) if the Tabular API knows ``rid`` as deleted.

        A resource removed from its dataset (a drift overlay), or a table of a deleted dataset.
        """
        if rid in self.tabular_deleted:
            return self.tabular_deleted[rid]
        if rid in self.tables and rid in self._resources:
            dataset_id, _ = self._resources[rid]
            deleted = self.datasets[dataset_id].get("deleted")
            if deleted:
                return str(deleted), dataset_id
        return None

    def table(self, rid: str) -> tabular.Table | None:
        """Return the Tabular API table of a resource, or ``None`` if it is not in Tabular."""
        return self.tables.get(rid)

    def profile(self, rid: str) -> dict[str, Any] | None:
        """Return (and cache) the csv_detective-style profile of a tabular resource."""
        table = self.tables.get(rid)
        if table is None:
            return None
        if rid not in self._profiles:
            self._profiles[rid] = tabular.profile(table)
        return self._profiles[rid]

    def aggregate(
        self,
        resource_id: str,
        filters: Iterable[tuple[str, str, str | int | float]],
        how: tabular.Aggregate = "count",
        column: str | None = None,
    ) -> float | None:
        """Recompute a value from a tabular resource, as ``expected_values[].recompute`` says.

        Args:
            resource_id: The tabular resource.
            filters: ``(column, operator, value)`` triples, ANDed (Tabular API semantics).
            how: ``count``, ``sum``, ``avg``, ``min``, ``max`` or ``count_distinct``.
            column: The aggregated column (not needed for ``count``).

        Returns:
            The value, or ``None`` when SQL would return NULL (no non-NULL value).

        Raises:
            KeyError: the resource is not in the Tabular API.
            tabular.QueryError: unknown column, operator or a value of the wrong type.
        """
        table = self.tables.get(resource_id)
        if table is None:
            raise KeyError(f"resource {resource_id} is not in the twin's Tabular API")
        parsed = [tabular.make_filter(table, c, op, str(v)) for c, op, v in filters]
        return tabular.aggregate(table, parsed, how, column)

    def external_file(self, key: str) -> ExternalFile | None:
        """Return what the twin serves for an external ``host/path`` key (``urls.external_key``).

        Generated resources' files (``static.data.gouv.fr/resources/<slug>/<date>/<id>.<ext>``)
        are found from the id in their name.
        """
        found = self._external.get(key)
        if found is None and key.startswith(_STATIC_PREFIX):
            name = key.rsplit("/", 1)[-1].split(".", 1)[0]
            if self._generated(name) is not None:
                return ExternalFile("resource", name)
        return found

    def is_external_served(self, url: str | None) -> bool:
        """Return whether the twin serves ``url`` under ``/_ext/``."""
        return bool(url) and self.external_file(external_key(str(url))) is not None

    def _generated(self, rid: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """``(dataset, resource)`` of a generated resource id, or None."""
        parsed = generated.parse_resource_id(rid)
        if parsed is None or self.catalogue is None or parsed[0] not in self.catalogue:
            return None
        dataset = self.catalogue[parsed[0]]
        if parsed[1] >= len(dataset["resources"]):
            return None
        return dataset, dataset["resources"][parsed[1]]

    def crawler_exception_ids(self) -> set[str]:
        """Return the resource ids of the crawler's large-file exceptions."""
        return {str(e["resource_id"]) for e in self.crawler_exceptions}

    def dataservice_datasets(self, service_id: str) -> list[str]:
        """Return the ids of the datasets a dataservice serves."""
        record = self.dataservices.get(service_id)
        return list(record["_twin"]["dataset_ids"]) if record else []

    # ----------------------------------------------------------------------------- search

    @staticmethod
    def _visible_dataset(record: Mapping[str, Any]) -> bool:
        # udata's Dataset.objects.visible(): not private, not deleted, not archived.
        return (
            not record.get("deleted") and not record.get("private") and not record.get("archived")
        )

    def _dataset_segments(self) -> list[Segment]:
        segments = self._segments.get("dataset")
        if segments is None:
            segments = []
            if self.catalogue is not None:
                segments.append(_catalogue_segment(self.catalogue, self.info))
            curated = list(self.datasets.values())
            segments.append(
                Segment(
                    FieldIndex.build([_dataset_doc(d) for d in curated], DATASET_FIELDS),
                    search.popularity_boost(
                        [d["metrics"].get("views", 0) for d in curated],
                        [d["metrics"].get("followers", 0) for d in curated],
                        public_service=[
                            _public_service(self.organizations, d.get("organization"))
                            for d in curated
                        ],
                        featured=[bool(d.get("featured")) for d in curated],
                        org_followers=[
                            _org_followers(self.organizations, d.get("organization"))
                            for d in curated
                        ],
                    ),
                )
            )
            self._segments["dataset"] = segments
        return segments

    def _segment_ids(self, kind: str, segment: int) -> list[str]:
        if kind == "dataset":
            if self.catalogue is not None and segment == 0:
                return self.catalogue.ids
            return list(self.datasets)
        return list(self.dataservices if kind == "dataservice" else self.organizations)

    def search_datasets(
        self,
        query: str | None,
        *,
        page: int = 1,
        page_size: int = 20,
        sort: str | None = None,
        last_update_range: str | None = None,
        organization: str | None = None,
        tag: str | None = None,
        dataservice: str | None = None,
        format: str | None = None,
        badge: str | None = None,
        api: int = 2,
        facets: bool = False,
        filters: DatasetFilters = NO_FILTERS,
        tags: Sequence[str] = (),
    ) -> SearchPage:
        """Search visible datasets (not archived, deleted or private) as production does.

        ``api=1`` is ``/api/1/datasets/?q=``: every word of ``q`` in the title (MongoDB text
        index), ordered by text score, newest first without ``q``. ``api=2`` is
        ``/api/2/datasets/search/``: every term across title, acronym, organization, tags and
        description, or every term in the title within ``AUTO:4,6`` edits, scored by BM25 times
        the popularity and public-service boosts; without ``q`` ordered by the boosts.
        ``sort`` (``created``, ``last_update``, ``reuses``, ``followers``, ``views``, v1 also
        ``title``; ``-`` for descending) orders by that key, then score; the HTTP layer refuses
        other values first (:mod:`~datagouv_eval_pipeline.world.api.query_args`). v2 also applies
        production's synonyms and its ``id`` / ``resources_ids`` clauses. See
        :mod:`datagouv_eval_pipeline.world.catalogue.search`.
        ``facets=True`` adds the v2 search's ``facets`` (:meth:`_dataset_facets`).
        ``filters`` are udata's other declared filters; ``tags`` more tags, all required.
        """
        segments = self._dataset_segments()
        chosen = _Chosen(last_update_range, organization, tag, tuple(tags), format, badge, filters)

        def masks_of(wanted: _Chosen) -> list[npt.NDArray[np.bool_]]:
            masks = self._dataset_masks(
                segments,
                wanted.last_update_range,
                wanted.organization,
                wanted.tags(),
                dataservice,
                wanted.format,
                wanted.badge,
            )
            if wanted.filters != NO_FILTERS:
                extras = self._filter_masks(wanted.filters)
                masks = [mask & extra for mask, extra in zip(masks, extras, strict=True)]
            return masks

        def find(wanted: _Chosen) -> list[search.Matches]:
            masks = masks_of(wanted)
            if query and query.strip():
                if api == 1:
                    return search.match_v1(segments, query, masks)
                return search.add_matches(
                    _match_v2_synonyms(segments, query, search.DATASET_MODEL, masks),
                    self._dataset_id_clause(segments, query, masks),
                )
            return search.browse(segments, masks, by_boost=api != 1)

        matches = find(chosen)
        keys = None
        if not (query and query.strip()) and api == 1:
            keys = self._dataset_keys(segments, "created")
        descending = True
        if sort and (
            sort.lstrip("-") in _DATASET_SORTS or (api == 1 and sort.lstrip("-") == "title")
        ):
            keys = self._dataset_keys(segments, sort.lstrip("-"))
            descending = sort.startswith("-")
        seg, rows = search.order(matches, keys, descending=descending)
        result = self._page("dataset", seg, rows, page, page_size)
        if facets:
            key = (query, dataservice, api, chosen.key())
            cached = self._facets.get(key)
            if cached is None:
                cached = self._own_filter_facets(chosen, matches, find, masks_of)
                if len(self._facets) > 256:
                    self._facets.clear()
                self._facets[key] = cached
            result = replace(result, facets=cached)
        return result

    def _dataset_id_clause(
        self, segments: list[Segment], query: str, masks: Sequence[npt.NDArray[np.bool_]]
    ) -> list[search.Matches]:
        """The ``id`` and ``resources_ids`` keyword clauses of ``query_datasets``.

        The whole query equal to a dataset id scores ``id^15`` (phrase) + ``id^7`` (cross
        fields); equal to one of its resources' ids, ``resources_ids^8`` + ``resources_ids^4``;
        each times the dataset's boosts, as the other clauses.
        """
        key = query.strip()
        lookups = ([self.catalogue.row] if self.catalogue is not None else []) + [
            _row_lookup(self.datasets)
        ]
        by_dataset = _id_clause(segments, lookups, key, masks, 15 + 7)
        owner = self.resource_owner(key)
        if owner is None:
            return by_dataset
        return search.add_matches(by_dataset, _id_clause(segments, lookups, owner, masks, 8 + 4))

    def resource_owner(self, rid: str) -> str | None:
        """The id of the dataset holding resource ``rid``, if the snapshot knows it."""
        found = self._resources.get(rid)
        if found is None:
            made = self._generated(rid)
            return str(made[0]["id"]) if made else None
        return found[0]

    def _own_filter_facets(
        self,
        chosen: _Chosen,
        matches: list[search.Matches],
        find: Callable[[_Chosen], list[search.Matches]],
        masks_of: Callable[[_Chosen], list[npt.NDArray[np.bool_]]],
    ) -> dict[str, list[dict[str, Any]]]:
        """The v2 ``facets`` as udata_search_service counts them: without their own filter.

        Production (``udata_search_service/search_clients.py``, ``query_datasets``) counts each
        facet in a filter aggregation of the query and every filter but that facet's own
        (``get_filters_except``), and applies the filters to the hits only afterwards
        (``post_filter``): ``license: lov2 1885`` next to ``?license=odc-odbl`` says how many
        Licence Ouverte datasets picking that licence instead would give. Two exceptions
        follow from the same code: the ``badge`` filter is not in ``get_filters_except``'s
        list, so no facet counts it; and ``tag`` reaches the service renamed ``tags``
        (``services.py`` ``DatasetService.filter_renames``), an "other" filter that every
        facet counts, the ``tag`` facet included.

        One text match serves every facet: a row matches the query or not whatever the
        filters (they only mask rows), so the query is matched once without the badge and the
        facets' own filters, and each facet keeps the rows of every own filter but its own.
        """
        own = chosen.own_filters()
        if not own and not chosen.badge:
            return self._dataset_facets(matches)
        relaxed = find(chosen.relaxed())
        parts = {name: masks_of(only) for name, only in own.items()}

        def narrowed(skip: str | None) -> list[search.Matches]:
            out = []
            for position, found in enumerate(relaxed):
                keep = np.ones(found.rows.size, dtype=bool)
                for name, masks in parts.items():
                    if name != skip:
                        keep &= masks[position][found.rows]
                out.append(search.Matches(found.rows[keep], found.scores[keep]))
            return out

        facets = self._dataset_facets(narrowed(None))
        for name in own:
            facets[name] = self._dataset_facets(narrowed(name), (name,))[name]
        return facets

    def _dataset_facets(
        self, matches: list[search.Matches], names: Sequence[str] = _FACETS
    ) -> dict[str, list[dict[str, Any]]]:
        """Return udata's v2 ``facets`` over ``matches``: per facet, ``all`` then the 50 largest.

        Facets the snapshot has no data for (``producer_type``, ``format_family``, ``schema``,
        ``geozone``, ``topics``) hold only ``all``. Which filters each facet counts:
        :meth:`_own_filter_facets`. ``names`` limits the catalogue's counting to those facets.
        """
        counters: dict[str, Counter[str]] = {name: Counter() for name in _FACETS}
        total = sum(int(m.rows.size) for m in matches)
        now = self.now.timestamp()
        ranges = {k: now - v.total_seconds() for k, v in LAST_UPDATE_RANGES.items()}
        catalogue_rows = None
        for position, found in enumerate(matches):
            if self.catalogue is not None and position == 0:
                catalogue_rows = found.rows  # counted last: its cut depends on these counts
                continue
            records = list(self.datasets.values())
            for r in found.rows.tolist():
                d = records[r]
                counters["license"][d.get("license") or "notspecified"] += 1
                granularity = (d.get("spatial") or {}).get("granularity")
                if granularity:
                    counters["granularity"][granularity] += 1
                org = d.get("organization")
                if org:
                    counters["organization_id_with_name"][f"{org['id']}|{org['name']}"] += 1
                counters["tag"].update(d.get("tags", []))
                counters["format"].update(
                    {str(x["format"]).lower() for x in d["resources"] if x.get("format")}
                )
                counters["badge"].update(b["kind"] for b in d.get("badges", []))
                counters["access_type"][d.get("access_type") or "open"] += 1
                stamp = _sortable(d["last_update"])
                for name, since in ranges.items():
                    if stamp >= since:
                        counters["last_update"][name] += 1
        if self.catalogue is not None and catalogue_rows is not None:
            cat = self.catalogue
            rows = catalogue_rows
            for name, column, multi in _CATALOGUE_FACETS:
                if name in names:
                    # Only the 50 largest are listed: the catalogue's 50 + k largest, k the
                    # curated records' values, and those values' own catalogue counts, hold
                    # every value the sums can rank there.
                    curated = list(counters[name])
                    if name == "organization_id_with_name":
                        curated = [label.partition("|")[0] for label in curated]
                    top = self._top_codes(name, column, multi, rows, 50 + len(curated), curated)
                    for value, count in top:
                        counters[name][value] += count
            counters["access_type"]["open"] += int(rows.size)
            modified = (
                cat.last_modified
                if cat.last_modified is not None
                else cat.dates("last_modified").astype(np.float64)
            )
            updated = modified[rows]
            for name, since in ranges.items():
                counters["last_update"][name] += int((updated >= since).sum())
        return _facet_buckets(names, counters, total)

    def _top_codes(
        self,
        name: str,
        column: str,
        multi: bool,
        rows: npt.NDArray[np.int64],
        need: int,
        also: Sequence[str],
    ) -> list[tuple[str, int]]:
        """The ``need`` values of a catalogue column most held by ``rows``, and ``also``.

        "Most" as udata orders buckets (count, then name), with each value's count among
        ``rows``; organizations the snapshot does not know are skipped, the others named
        ``id|name``.
        """
        assert self.catalogue is not None
        values, codes, offsets = self.catalogue.codes(column, multi)
        counts = _count_codes(codes, offsets, rows, len(values))
        is_org = name == "organization_id_with_name"
        if is_org:
            counts[~self._known_organizations(values)] = 0
        present = np.flatnonzero(counts)
        if present.size > need:
            ranks = self._name_ranks(column, values, suffix="|" if is_org else "")
            key = ranks[present] - counts[present] * len(values)
            present = present[np.argpartition(key, need - 1)[:need]]
            if also:
                index = self._value_index(column, values)
                wanted = [index[v] for v in also if v in index]
                # A mark rather than np.union1d, whose first call imports numpy.ma (0.4 s).
                marked = np.zeros(len(values), dtype=bool)
                marked[present] = True
                marked[np.array(wanted, dtype=np.int64)] = True
                present = np.flatnonzero(marked & (counts > 0))
        orgs = self.organizations
        out = []
        for i in present.tolist():
            value = values[i]
            out.append((f"{value}|{orgs[value]['name']}" if is_org else value, int(counts[i])))
        return out

    def _name_ranks(self, column: str, values: list[str], suffix: str) -> npt.NDArray[np.int64]:
        """Each value's rank by name (``value + suffix``, as Python orders strings), cached."""

        def build() -> npt.NDArray[np.int64]:
            order = sorted(range(len(values)), key=lambda i: values[i] + suffix)
            ranks = np.empty(len(values), dtype=np.int64)
            ranks[np.array(order, dtype=np.int64)] = np.arange(len(values), dtype=np.int64)
            return ranks

        return self._facet_cached(("ranks", column, suffix), (values,), build)

    def _value_index(self, column: str, values: list[str]) -> dict[str, int]:
        """Each value's code in a coded catalogue column, cached."""
        return self._facet_cached(
            ("index", column), (values,), lambda: {v: i for i, v in enumerate(values)}
        )

    def _known_organizations(self, values: list[str]) -> npt.NDArray[np.bool_]:
        """Which organization ids of a catalogue column the snapshot knows, cached."""
        orgs = self.organizations
        return self._facet_cached(
            ("known", len(orgs)),
            (values, orgs),
            lambda: np.array([v in orgs for v in values], dtype=bool),
        )

    def _facet_cached(
        self, key: tuple[Any, ...], anchors: tuple[object, ...], build: Callable[[], _T]
    ) -> _T:
        """``build()``, cached under ``key`` for as long as ``anchors`` are the same objects.

        The entry keeps its anchors alive, so a new column or organization table (an overlay,
        a reloaded catalogue) can never be taken for the one the entry was built from.
        """
        entry = self._facet_orders.get(key)
        if entry is None or any(a is not b for a, b in zip(entry[0], anchors, strict=True)):
            entry = (anchors, build())
            self._facet_orders[key] = entry
        value: _T = entry[1]
        return value

    def _page(
        self,
        kind: str,
        seg: npt.NDArray[np.int64],
        rows: npt.NDArray[np.int64],
        page: int,
        page_size: int,
    ) -> SearchPage:
        start = max(0, (page - 1) * page_size)
        ids_by_segment: dict[int, list[str]] = {}
        ids = []
        for s, r in zip(
            seg[start : start + page_size], rows[start : start + page_size], strict=True
        ):
            if int(s) not in ids_by_segment:
                ids_by_segment[int(s)] = self._segment_ids(kind, int(s))
            ids.append(ids_by_segment[int(s)][int(r)])
        return SearchPage(int(rows.size), ids, page, page_size)

    def _dataset_keys(
        self, segments: list[Segment], name: str
    ) -> list[npt.NDArray[np.float64] | None]:
        keys: list[npt.NDArray[np.float64] | None] = []
        if name == "title":
            # v1's ``sort=title``: one order over both segments (MongoDB compares the strings).
            titles = [str(d["title"]) for d in self.datasets.values()]
            if self.catalogue is not None:
                titles = list(self.catalogue.columns["title"]) + titles
            ranks = _rank_key(titles)
            if self.catalogue is not None:
                return [ranks[: len(self.catalogue)], ranks[len(self.catalogue) :]]
            return [ranks]
        for position in range(len(segments)):
            if self.catalogue is not None and position == 0:
                keys.append(_catalogue_key(self.catalogue, name))
            else:
                getter = _DATASET_SORTS[name]
                keys.append(np.array([_sortable(getter(d)) for d in self.datasets.values()]))
        return keys

    def _dataset_masks(
        self,
        segments: list[Segment],
        last_update_range: str | None,
        organization: str | None,
        tags: tuple[str, ...],
        dataservice: str | None,
        fmt: str | None,
        badge: str | None,
    ) -> list[npt.NDArray[np.bool_]]:
        since = None
        if last_update_range in LAST_UPDATE_RANGES:
            since = self.now - LAST_UPDATE_RANGES[last_update_range]
        served = set(self.dataservice_datasets(dataservice)) if dataservice else None

        def keep(dataset_id: str) -> bool:
            record = self.datasets[dataset_id]
            if not self._visible_dataset(record):
                return False
            if organization and (record.get("organization") or {}).get("id") != organization:
                return False
            if any(t not in record.get("tags", []) for t in tags):
                return False
            if served is not None and dataset_id not in served:
                return False
            if fmt and not any(r.get("format") == fmt for r in record["resources"]):
                return False
            if badge and not any(b.get("kind") == badge for b in record.get("badges", [])):
                return False
            return not (since and datetime.fromisoformat(record["last_update"]) < since)

        masks = []
        if self.catalogue is not None:
            cat = self.catalogue
            mask = ~(cat.hidden if cat.hidden is not None else cat.archived())
            if organization:
                mask &= cat.organization_mask(organization)
            for tag in tags:
                mask &= cat.tag_mask(tag)
            if fmt:
                mask &= cat.format_mask(fmt)
            if served is not None or badge:
                mask &= False  # the export has no dataservice links and no dataset badges
            if since:
                modified = (
                    cat.last_modified
                    if cat.last_modified is not None
                    else cat.dates("last_modified").astype(np.float64)
                )
                mask &= modified >= since.timestamp()
            masks.append(mask)
        masks.append(np.array([keep(i) for i in self.datasets], dtype=bool))
        return masks

    def _filter_masks(self, filters: DatasetFilters) -> list[npt.NDArray[np.bool_]]:
        """Per segment, the rows :class:`DatasetFilters` keep (visibility aside)."""
        orgs = self.organizations
        f = filters

        def producer_types(org_id: str | None) -> list[str]:
            org = orgs.get(org_id) if org_id else None
            if org is None:
                return ["not-specified"] if org_id else ["user"]
            return _org_producer_types(org)

        def org_ids(test: Callable[[Mapping[str, Any]], bool]) -> set[str]:
            return {i for i, o in orgs.items() if test(o)}

        badge_orgs = (
            org_ids(lambda o: any(b["kind"] == f.organization_badge for b in o.get("badges", [])))
            if f.organization_badge
            else None
        )
        named_orgs = (
            org_ids(lambda o: o["name"] == f.organization_name) if f.organization_name else None
        )
        licenses = set(f.license.split("|")) if f.license else None
        masks: list[npt.NDArray[np.bool_]] = []
        if self.catalogue is not None:
            cat = self.catalogue
            mask = np.ones(len(cat), dtype=bool)
            if licenses is not None:
                mask &= np.logical_or.reduce([cat.license_mask(x) for x in licenses])
            if f.featured is not None:
                mask &= cat.featured() == f.featured
            if f.granularity:
                mask &= np.logical_or.reduce([cat.granularity_mask(g) for g in f.granularity])
            if f.access_type is not None and f.access_type != "open":
                mask &= False  # the export's datasets are all open (udata's default)
            if f.format_family:
                mask &= cat.format_family_mask(f.format_family)
            if f.producer_type:
                if f.producer_type == "user":
                    mask &= cat.without_organization()
                else:
                    typed = org_ids(lambda o: f.producer_type in producer_types(o["id"]))
                    mask &= cat.organization_rows(typed)
            if badge_orgs is not None:
                mask &= cat.organization_rows(badge_orgs)
            if named_orgs is not None:
                mask &= cat.organization_rows(named_orgs)
            if f.geozone or f.owner or f.schema or f.topic or f.temporal_coverage:
                mask &= False  # the export has no zones, owners, schemas, topics or coverage
            masks.append(mask)

        def keep(record: Mapping[str, Any]) -> bool:
            org_id = (record.get("organization") or {}).get("id")
            spatial = record.get("spatial") or {}
            if licenses is not None and (record.get("license") or "notspecified") not in licenses:
                return False
            if f.featured is not None and bool(record.get("featured")) != f.featured:
                return False
            if f.granularity and spatial.get("granularity") not in f.granularity:
                return False
            if f.geozone and f.geozone not in [
                z if isinstance(z, str) else z.get("id") for z in spatial.get("zones") or []
            ]:
                return False
            if f.access_type and (record.get("access_type") or "open") != f.access_type:
                return False
            formats = [r.get("format") for r in record.get("resources", []) if r.get("format")]
            families = {facts.format_family(x) for x in formats} or {"other"}
            if f.format_family and f.format_family not in families:
                return False
            if f.producer_type and f.producer_type not in producer_types(org_id):
                return False
            if badge_orgs is not None and org_id not in badge_orgs:
                return False
            if named_orgs is not None and org_id not in named_orgs:
                return False
            if f.owner and (record.get("owner") or {}).get("id") != f.owner:
                return False
            schemas = {(r.get("schema") or {}).get("name") for r in record.get("resources", [])}
            if f.schema and not schemas & set(f.schema):
                return False
            return not (f.topic or f.temporal_coverage)

        masks.append(np.array([keep(d) for d in self.datasets.values()], dtype=bool))
        return masks

    def search_dataservices(
        self,
        query: str | None,
        *,
        page: int = 1,
        page_size: int = 20,
        api: int = 2,
        facets: bool = False,
        filters: Mapping[str, Any] | None = None,
        sort: str | None = None,
    ) -> SearchPage:
        """Search dataservices (not archived or deleted): v1 title words, v2 Elasticsearch-like.

        Without ``q``: v1 newest first, v2 by the popularity boost. ``facets=True`` adds the
        v2 search's ``facets`` (:meth:`_dataservice_facets`). ``filters`` are udata's
        declared filters by name (:mod:`~datagouv_eval_pipeline.world.api.query_args`), ``sort``
        one of its sorts (``created``, ``views``, ``followers``, ``title``, ``last_modified``).
        """
        segments = self._segments.get("dataservice")
        records = list(self.dataservices.values())
        if segments is None:
            segments = [
                Segment(
                    FieldIndex.build(
                        [
                            {
                                "title": d["title"],
                                "description": d.get("description") or "",
                                "organization": _org_text(d.get("organization")),
                            }
                            for d in records
                        ],
                        DATASERVICE_FIELDS,
                    ),
                    search.popularity_boost(
                        [(d.get("metrics") or {}).get("views", 0) for d in records],
                        [(d.get("metrics") or {}).get("followers", 0) for d in records],
                        org_followers=[
                            _org_followers(self.organizations, d.get("organization"))
                            for d in records
                        ],
                    )
                    * np.sqrt(np.log([len(d.get("description") or "") + 2.0 for d in records])),
                )
            ]
            self._segments["dataservice"] = segments
        wanted = {
            k: v for k, v in (filters or {}).items() if v is not None and k not in ("q", "sort")
        }
        masks = [
            np.array(
                [
                    not d.get("deleted_at")
                    and not d.get("archived_at")
                    and self._dataservice_kept(d, wanted)
                    for d in records
                ],
                dtype=bool,
            )
        ]
        matches, seg, rows = _ranked(
            segments,
            masks,
            self.dataservices,
            query,
            api,
            sort,
            model=search.DATASERVICE_MODEL,
            id_weight=15 + 7,
            sorts=_DATASERVICE_SORTS,
        )
        result = self._page("dataservice", seg, rows, page, page_size)
        if facets:
            found = [records[r] for m in matches for r in m.rows.tolist()]
            counted = self._dataservice_facets(found)
            own = {f: k for f, k in _DATASERVICE_OWN_FILTERS.items() if k in wanted}
            if own:
                # The facets whose own filter is set count the query without it: match once
                # with no filter, then keep per facet what every other filter keeps.
                indexed = np.array(
                    [not d.get("deleted_at") and not d.get("archived_at") for d in records],
                    dtype=bool,
                )
                unfiltered, _, _ = _ranked(
                    segments,
                    [indexed],
                    self.dataservices,
                    query,
                    api,
                    None,
                    model=search.DATASERVICE_MODEL,
                    id_weight=15 + 7,
                    sorts=_DATASERVICE_SORTS,
                )
                candidates = [records[r] for m in unfiltered for r in m.rows.tolist()]
                for name, key in own.items():
                    others = {k: v for k, v in wanted.items() if k != key}
                    kept = [d for d in candidates if self._dataservice_kept(d, others)]
                    counted[name] = self._dataservice_facets(kept)[name]
            result = replace(result, facets=counted)
        return result

    def _dataservice_kept(self, record: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
        """Whether a dataservice passes udata's declared filters (unknown data: no match)."""
        org = record.get("organization") or {}
        for name, value in wanted.items():
            if name == "tag":
                if any(t not in record.get("tags", []) for t in value):
                    return False
            elif name == "organization":
                if org.get("id") != value:
                    return False
            elif name in ("featured", "archived"):
                present = bool(record.get("featured" if name == "featured" else "archived_at"))
                if present != value:
                    return False
            elif name == "access_type":
                if (record.get("access_type") or "open") != value:
                    return False
            elif name == "is_restricted":
                # The index holds access_type == restricted (DataserviceSearch.serialize).
                if ((record.get("access_type") or "open") == "restricted") != value:
                    return False
            elif name == "producer_type":
                if value not in self._producer_types(record):
                    return False
            elif name == "organization_badge":
                badges = (self.organizations.get(org.get("id", "")) or org).get("badges", [])
                if not any(b.get("kind") == value for b in badges):
                    return False
            elif name == "last_update_range":
                since = self.now - LAST_UPDATE_RANGES[value]
                if datetime.fromisoformat(record["metadata_modified_at"]) < since:
                    return False
            else:  # topic, reuse: links the snapshot does not hold
                return False
        return True

    def _producer_types(self, owned: Mapping[str, Any]) -> list[str]:
        """Udata's ``get_producer_type``: the organization's producer badges, or a default."""
        ref = owned.get("organization")
        if ref:
            org = self.organizations.get(ref["id"]) or ref
            kinds = [b["kind"] for b in org.get("badges", []) if b["kind"] in PRODUCER_BADGES]
            return kinds or ["not-specified"]
        return ["user"] if owned.get("owner") else []

    def _dataservice_facets(
        self, found: Sequence[Mapping[str, Any]]
    ) -> dict[str, list[dict[str, Any]]]:
        """Return udata-search-service's dataservice facets over the matched dataservices.

        ``access_type``, ``producer_type``, ``organization_id_with_name``, ``tag``, ``badge``
        then ``last_update`` (on ``metadata_modified_at``). ``badge`` holds only ``all``: the
        search index's dataservice documents carry no badges. :meth:`search_dataservices`
        counts a facet whose own filter is set without that filter
        (``_DATASERVICE_OWN_FILTERS``), as ``query_dataservices``' ``get_filters_except`` does.
        """
        counters: dict[str, Counter[str]] = {name: Counter() for name in _DATASERVICE_FACETS}
        ranges = {k: self.now - v for k, v in LAST_UPDATE_RANGES.items()}
        for d in found:
            counters["access_type"][d.get("access_type") or "open"] += 1
            counters["producer_type"].update(self._producer_types(d))
            org = d.get("organization")
            if org:
                counters["organization_id_with_name"][f"{org['id']}|{org['name']}"] += 1
            counters["tag"].update(d.get("tags", []))
            modified = datetime.fromisoformat(d["metadata_modified_at"])
            for name, since in ranges.items():
                if modified >= since:
                    counters["last_update"][name] += 1
        return _facet_buckets(_DATASERVICE_FACETS, counters, len(found))

    def search_organizations(
        self,
        query: str | None,
        *,
        page: int = 1,
        page_size: int = 20,
        sort: str | None = None,
        badge: str | None = None,
        name: str | None = None,
        business_number_id: str | None = None,
        producer_type: str | None = None,
        api: int = 2,
        facets: bool = False,
    ) -> SearchPage:
        """Search organizations by name, acronym and description, with the MCP's filters.

        v1: every word of ``q`` in the name (MongoDB text index on ``name``); v2: every term
        across name, acronym and description, boosted by public service, followers and views.
        ``facets=True`` adds the v2 search's ``facets``: ``producer_type`` only, counted over
        what ``q`` matches before the filters (udata-search-service filters organizations
        with an Elasticsearch ``post_filter``, which aggregations do not see).
        """
        segments = self._segments.get("organization")
        records = list(self.organizations.values())
        if segments is None:
            segments = [
                Segment(
                    FieldIndex.build(
                        [
                            {
                                "title": o["name"],
                                "acronym": o.get("acronym") or "",
                                "description": o.get("description") or "",
                            }
                            for o in records
                        ],
                        ORGANIZATION_FIELDS,
                    ),
                    search.popularity_boost(
                        [o["metrics"].get("views", 0) for o in records],
                        [o["metrics"].get("followers", 0) for o in records],
                        public_service=[_is_public_service(o) for o in records],
                        views_factor=1.0,
                    ),
                )
            ]
            self._segments["organization"] = segments

        def keep(record: Mapping[str, Any]) -> bool:
            if record.get("deleted"):
                return False
            if badge and not any(b.get("kind") == badge for b in record.get("badges", [])):
                return False
            if name and fold(record["name"]) != fold(name):
                return False
            if producer_type and producer_type not in _org_producer_types(record):
                return False
            return not (
                business_number_id and record.get("business_number_id") != business_number_id
            )

        masks = [np.array([keep(o) for o in records], dtype=bool)]
        _, seg, rows = _ranked(
            segments,
            masks,
            self.organizations,
            query,
            api,
            sort,
            model=search.ORGANIZATION_MODEL,
            id_weight=15 + 15,
            sorts=_ORG_SORTS,
        )
        result = self._page("organization", seg, rows, page, page_size)
        if facets:
            indexed = [np.array([not o.get("deleted") for o in records], dtype=bool)]
            if query and query.strip():
                if api == 1:
                    unfiltered = search.match_v1(segments, query, indexed)
                else:
                    unfiltered = search.match_v2(
                        segments, query, search.ORGANIZATION_MODEL, indexed
                    )
            else:
                unfiltered = search.browse(segments, indexed, by_boost=api != 1)
            found = [records[r] for m in unfiltered for r in m.rows.tolist()]
            counters: dict[str, Counter[str]] = {"producer_type": Counter()}
            for o in found:
                counters["producer_type"].update(
                    b["kind"] for b in o.get("badges", []) if b["kind"] in PRODUCER_BADGES
                )
            result = replace(
                result, facets=_facet_buckets(("producer_type",), counters, len(found))
            )
        return result


def _ranked(
    segments: Sequence[Segment],
    masks: Sequence[npt.NDArray[np.bool_]],
    by_id: Mapping[str, Mapping[str, Any]],
    query: str | None,
    api: int,
    sort: str | None,
    *,
    model: search.TextModel,
    id_weight: float,
    sorts: Mapping[str, Callable[[Mapping[str, Any]], Any]],
) -> tuple[list[search.Matches], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Match and order the records of a one-segment search (dataservices, organizations).

    With ``query``: v1's text match, or v2's (synonyms included) plus the record whose id is the
    query (``id_weight``). Without: every kept record, v1 newest first, v2 by popularity boost.
    A known ``sort`` (``-`` for descending) orders by its key instead.

    Returns:
        The matches, then the segment and the row of each match, best first.
    """
    records = list(by_id.values())
    keys: list[npt.NDArray[np.float64] | None] | None = None
    if query and query.strip():
        if api == 1:
            matches = search.match_v1(segments, query, masks)
        else:
            matches = search.add_matches(
                _match_v2_synonyms(segments, query, model, masks),
                _id_clause(segments, [_row_lookup(by_id)], query, masks, id_weight),
            )
    else:
        matches = search.browse(segments, masks, by_boost=api != 1)
        if api == 1:
            keys = [np.array([_sortable(r.get("created_at", "")) for r in records])]
    descending = True
    if sort and sort.lstrip("-") in sorts:
        getter = sorts[sort.lstrip("-")]
        keys = [_rank_key([getter(r) for r in records])]
        descending = sort.startswith("-")
    seg, rows = search.order(matches, keys, descending=descending)
    return matches, seg, rows


def _row_lookup(records: Mapping[str, Any]) -> Callable[[str], int | None]:
    """The row of an id among ``records`` (their order is the segment's)."""
    rows = {key: row for row, key in enumerate(records)}
    return rows.get


def _match_v2_synonyms(
    segments: Sequence[Segment],
    query: str,
    model: search.TextModel,
    masks: Sequence[npt.NDArray[np.bool_]],
) -> list[search.Matches]:
    """The v2 text clauses of ``query`` and of its synonym rewrites, each row's best score."""
    variants = search.synonym_variants(query)
    results = [search.match_v2(segments, v, model, masks) for v in variants]
    return results[0] if len(results) == 1 else search.best_of(results)


def _id_clause(
    segments: Sequence[Segment],
    rows_of: Sequence[Callable[[str], int | None]],
    key: str,
    masks: Sequence[npt.NDArray[np.bool_]],
    weight: float,
) -> list[search.Matches]:
    """A keyword clause: the row whose id is ``key`` (whole query), ``weight · idf · boost``.

    ``rows_of`` gives each segment's row of an id (None when it has none).
    """
    key = key.strip()
    n_docs = sum(s.index.n_docs for s in segments)
    out = []
    for segment, mask, row_of in zip(segments, masks, rows_of, strict=True):
        row = row_of(key) if key else None
        if row is None or not mask[row]:
            out.append(search.Matches(np.zeros(0, np.int64), np.zeros(0)))
            continue
        score = weight * search.keyword_idf(n_docs) * float(segment.boost[row])
        out.append(search.Matches(np.array([row], dtype=np.int64), np.array([score])))
    return out


def _facet_buckets(
    names: Sequence[str], counters: Mapping[str, Counter[str]], total: int
) -> dict[str, list[dict[str, Any]]]:
    """Lay counters out as udata-search-service does: ``all``, then the 50 largest buckets.

    Terms buckets come by count, then name (Elasticsearch's order); ``last_update`` keeps
    its three ranges in the twin's order, as in the dataset facets.
    """
    out: dict[str, list[dict[str, Any]]] = {}
    for name in names:
        if name == "last_update":
            buckets = [(k, counters[name][k]) for k in LAST_UPDATE_RANGES]
        else:
            buckets = sorted(counters[name].items(), key=lambda kv: (-kv[1], kv[0]))[:50]
        out[name] = [{"name": "all", "count": total}] + [
            {"name": k, "count": v} for k, v in buckets
        ]
    return out


# Facet, catalogue column, whether the column holds comma-separated lists.
_CATALOGUE_FACETS = (
    ("license", "license", False),
    ("granularity", "granularity", False),
    ("organization_id_with_name", "organization_id", False),
    ("tag", "tags", True),
    ("format", "formats", True),
)


def _count_codes(
    codes: npt.NDArray[np.int64],
    offsets: npt.NDArray[np.int64],
    rows: npt.NDArray[np.int64],
    n_values: int,
) -> npt.NDArray[np.int64]:
    """Count, per value of a coded column, how many ``rows`` hold it (a fresh array).

    ``codes`` and ``offsets`` are :meth:`facts.CatalogueDatasets.codes`' CSR form.
    """
    if not rows.size or not codes.size:
        return np.zeros(n_values, dtype=np.int64)
    starts, ends = offsets[rows], offsets[rows + 1]
    lengths = ends - starts
    keep = lengths > 0
    starts, lengths = starts[keep], lengths[keep]
    if not lengths.size:
        return np.zeros(n_values, dtype=np.int64)
    # Positions of every code of the rows: each row's start, then +1 within the row.
    first = np.repeat(starts - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
    positions = first + np.arange(int(lengths.sum()))
    return np.bincount(codes[positions], minlength=n_values).astype(np.int64)


def _sortable(value: Any) -> float:
    """Return a number that orders like ``value`` (ISO dates become POSIX seconds)."""
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and value:
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return 0.0
    return 0.0


def _rank_key(values: list[Any]) -> npt.NDArray[np.float64]:
    """Return each value's rank among ``values`` (for keys that are not numbers, like names)."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = np.zeros(len(values))
    for rank, position in enumerate(order):
        ranks[position] = rank
    return ranks


def _org_producer_types(org: Mapping[str, Any]) -> list[str]:
    """An organization's producer badges, or ``not-specified`` (udata ``get_producer_type``)."""
    kinds = [b["kind"] for b in org.get("badges", []) if b["kind"] in PRODUCER_BADGES]
    return kinds or ["not-specified"]


def _is_public_service(org: Mapping[str, Any]) -> bool:
    # udata Organization.public_service: certified and public-service badges.
    kinds = {b.get("kind") for b in org.get("badges", [])}
    return "public-service" in kinds and "certified" in kinds


def _public_service(orgs: Mapping[str, Mapping[str, Any]], ref: Mapping[str, Any] | None) -> bool:
    org = orgs.get(ref["id"]) if ref else None
    return bool(org) and _is_public_service(org or {})


def _org_followers(orgs: Mapping[str, Mapping[str, Any]], ref: Mapping[str, Any] | None) -> int:
    org = orgs.get(ref["id"]) if ref else None
    return int((org or {}).get("metrics", {}).get("followers", 0) or 0)


def _dataset_doc(record: Mapping[str, Any]) -> dict[str, str]:
    return {
        "title": record["title"],
        "acronym": record.get("acronym") or "",
        "organization": _org_text(record.get("organization")),
        "tags": ",".join(record.get("tags", [])),
        "description": record.get("description") or "",
        "resources": " ".join(r.get("title") or "" for r in record.get("resources", [])),
    }


_CATALOGUE_KEYS = {"created": "created_at", "last_update": "last_modified"}


def _catalogue_key(catalogue: facts.CatalogueDatasets, name: str) -> npt.NDArray[np.float64]:
    if name in _CATALOGUE_KEYS:
        return catalogue.dates(_CATALOGUE_KEYS[name]).astype(np.float64)
    return catalogue.ints(name).astype(np.float64)


def _catalogue_segment(catalogue: facts.CatalogueDatasets, info: SnapshotInfo) -> Segment:
    """Return the catalogue's search segment; index and boosts are cached on disk.

    The cache key is the digests of the catalogue and organizations files (the boosts read
    the organizations' badges and followers), so a rebuilt snapshot never reads a stale index.
    """
    with catalogue.lock:
        if catalogue.segment is not None:
            return catalogue.segment
        files = info.manifest.get("files", {})
        digest = ":".join(
            str(files.get(name, {}).get("sha256", ""))
            for name in (facts.FILE_NAME, "organizations.jsonl.gz")
        )
        columns = catalogue.columns
        orgs = catalogue.organizations

        def build() -> FieldIndex:
            org_names = {org_id: _org_text(org) for org_id, org in orgs.items()}
            docs = [
                {
                    "title": columns["title"][row],
                    "acronym": columns["acronym"][row],
                    "organization": org_names.get(columns["organization_id"][row], "")
                    or columns["organization"][row],
                    "tags": columns["tags"][row],
                }
                for row in range(len(catalogue))
            ]
            index = FieldIndex.build(docs, ("title", "acronym", "organization", "tags"))
            org_ids = columns["organization_id"]
            public = {o: _is_public_service(org) for o, org in orgs.items()}
            followers = {
                o: int(org.get("metrics", {}).get("followers", 0) or 0) for o, org in orgs.items()
            }
            index.extras["boost"] = search.popularity_boost(
                catalogue.ints("views"),
                catalogue.ints("followers"),
                public_service=[public.get(o, False) for o in org_ids],
                featured=catalogue.featured(),
                org_followers=[followers.get(o, 0) for o in org_ids],
            )
            index.extras["hidden"] = catalogue.archived().astype(np.float64)
            index.extras["last_modified"] = catalogue.dates("last_modified").astype(np.float64)
            return index

        index = FieldIndex.cached(f"catalogue-datasets:{digest}:{len(catalogue)}", build)
        catalogue.hidden = index.extras["hidden"] > 0
        catalogue.last_modified = index.extras["last_modified"]
        catalogue.segment = Segment(index, index.extras["boost"])
        return catalogue.segment


def _org_text(org: Mapping[str, Any] | None) -> str:
    if not org:
        return ""
    return " ".join(str(v) for v in (org.get("name"), org.get("acronym")) if v)


def _read_records(path: Path, content: bytes, required: Iterable[str]) -> list[dict[str, Any]]:
    try:
        text = gzip.decompress(content).decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise SnapshotError(f"{path}: not a gzip-compressed UTF-8 file: {error}") from error
    records: list[dict[str, Any]] = []
    seen: set[str] = set()
    for line_number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise SnapshotError(f"{path}: line {line_number}: invalid JSON: {error}") from error
        if not isinstance(record, dict):
            raise SnapshotError(f"{path}: line {line_number}: expected a JSON object")
        ident = record.get("id", f"<line {line_number}>")
        for key in required:
            if key not in record:
                raise SnapshotError(
                    f"{path}: record {ident} (line {line_number}): missing field {key!r}"
                )
        if ident in seen:
            raise SnapshotError(f"{path}: record {ident} (line {line_number}): duplicate id")
        seen.add(str(ident))
        records.append(record)
    return records


SITE_METRIC_COLUMNS = ("monthly_visit_dataset", "monthly_download_resource")


def site_metrics(organizations: tabular.Table) -> tabular.Table:
    """Build the Metrics API's ``site`` model: the site's monthly totals, oldest month first.

    Its columns are those udata reads from ``site/data/`` (``core/site/models.py``:
    ``metric_month``, ``monthly_visit_dataset``, ``monthly_download_resource``); each month is
    the sum of the organizations model's values (nulls skipped, as SQL's ``SUM`` does), so the
    site agrees with the twin's other models.

    Raises:
        ValueError: ``organizations`` lacks ``metric_month`` or a summed column.
    """
    month = organizations.position("metric_month")
    summed = [organizations.position(name) for name in SITE_METRIC_COLUMNS]
    if month is None or None in summed:
        raise ValueError(f"organizations metrics lack {['metric_month', *SITE_METRIC_COLUMNS]}")
    totals: dict[str, list[int]] = {}
    for row in organizations.rows:
        sums = totals.setdefault(str(row[month]), [0] * len(summed))
        for i, position in enumerate(summed):
            assert position is not None
            if row[position] is not None:
                sums[i] += int(row[position])
    columns = [tabular.Column("metric_month", "string")] + [
        tabular.Column(name, "int") for name in SITE_METRIC_COLUMNS
    ]
    lines = [",".join(c.name for c in columns)]
    lines += [",".join([m, *map(str, totals[m])]) for m in sorted(totals)]
    text = "\n".join(lines) + "\n"
    return tabular.Table.from_csv("site", text, columns, ",", origin="site metrics")


def _derived_parser(
    directory: Path,
    name: str,
    schema: Mapping[str, Any],
    catalogue: facts.CatalogueDatasets | None,
    datasets: Sequence[Mapping[str, Any]],
) -> Callable[[], tabular.Table]:
    """Check a derived table's entry now; return the function that builds it on first use.

    Raises:
        SnapshotError: an unknown derivation, or columns other than the code's (the snapshot
            was built by another version: rebuild it).
    """
    path = directory / "tables.json"
    if schema.get("derived") != catalogue_export.DERIVATION:
        raise SnapshotError(
            f"{path}: unknown derived table {schema.get('derived')!r} "
            f"(known: {catalogue_export.DERIVATION!r})"
        )
    listed = [c.get("name") for c in schema.get("columns", []) if isinstance(c, Mapping)]
    expected = [c.name for c in catalogue_export.COLUMNS]
    if listed != expected:
        raise SnapshotError(
            f"{path}: the {catalogue_export.DERIVATION} columns {listed} differ from the "
            f"code's {expected}; rebuild with `datagouv-eval twin build-snapshot`"
        )
    columns = catalogue.columns if catalogue is not None else None

    def build() -> tabular.Table:
        return catalogue_export.build_table(name, columns, datasets)

    return build


def _table_parser(
    directory: Path, name: str, schema: Mapping[str, Any], files: Mapping[str, bytes]
) -> Callable[[], tabular.Table]:
    """Check a table's schema now; return the function that parses its CSV on first use.

    Raises:
        SnapshotError: the file is not in the manifest, or the schema is malformed.
    """
    file_name = str(schema.get("file"))
    path = directory / file_name
    if file_name not in files:
        raise SnapshotError(f"{path}: table file referenced by tables.json is not in the manifest")
    try:
        columns = [
            tabular.Column(c["name"], c["type"], c.get("format", "")) for c in schema["columns"]
        ]
    except (KeyError, TypeError) as error:
        raise SnapshotError(f"{path}: malformed columns in tables.json: {error!r}") from error
    bad = [c.type for c in columns if c.type not in tabular.COLUMN_TYPES]
    if bad:
        raise SnapshotError(f"{path}: unknown column types {bad}")
    content = files[file_name]
    separator = str(schema.get("separator", ","))

    def parse() -> tabular.Table:
        try:
            text = gzip.decompress(content).decode("utf-8")
            return tabular.Table.from_csv(name, text, columns, separator, origin=str(path))
        except (ValueError, OSError) as error:
            raise SnapshotError(f"{path}: {error}") from error

    return parse
