"""The catalog store: loads a twin snapshot, verifies it, and answers lookups and searches.

The store is the one place that knows the snapshot layout. The HTTP app, and later the MCP
servers and the resource validator, read the catalog through it:

    store = CatalogStore.load()                 # current snapshot of ./snapshots
    store.dataset("5d13a8b6634f41070a43dff3")   # record (v1 shape, real URLs) or None
    store.search_datasets("équipements sportifs", page=1, page_size=20)

Records are plain dicts in the udata v1 shape with the real data.gouv.fr URLs and an internal
``_twin`` key; :mod:`datagouv_eval_pipeline.twin.render` turns them into API responses.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from datagouv_eval_pipeline.twin import tabular
from datagouv_eval_pipeline.twin.search import BM25FIndex, fold
from datagouv_eval_pipeline.twin.urls import external_key

SNAPSHOTS_ENV = "DATAGOUV_EVAL_SNAPSHOTS"
MANIFEST_NAME = "manifest.json"
# Score multiplier of archived objects: still findable, but after the live ones.
ARCHIVED_FACTOR = 0.6
# Popular objects get a mild boost, as on the real site: x(1 + 0.05 * log10(1 + views)).
POPULARITY_WEIGHT = 0.05

DATASET_FIELDS = {"title": 3.0, "tags": 1.5, "organization": 1.0, "description": 1.0}
DATASERVICE_FIELDS = {"title": 3.0, "tags": 1.5, "organization": 1.0, "description": 1.0}
ORGANIZATION_FIELDS = {"name": 3.0, "acronym": 3.0, "description": 1.0}

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
_ORG_SORTS: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "name": lambda o: fold(o["name"]),
    "datasets": lambda o: o["metrics"].get("datasets", 0),
    "reuses": lambda o: o["metrics"].get("reuses", 0),
    "followers": lambda o: o["metrics"].get("followers", 0),
    "views": lambda o: o["metrics"].get("views", 0),
    "created": lambda o: o["created_at"],
    "last_modified": lambda o: o["last_modified"],
}


class SnapshotError(Exception):
    """The snapshot cannot be loaded; the message names the file (and record) at fault."""


def default_snapshots_dir() -> Path:
    """Return ``$DATAGOUV_EVAL_SNAPSHOTS`` or the repository's ``snapshots/`` directory."""
    override = os.environ.get(SNAPSHOTS_ENV)
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[2] / "snapshots"


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
    _slugs: dict[str, dict[str, str]] = field(default_factory=dict, repr=False)
    _resources: dict[str, tuple[str, int]] = field(default_factory=dict, repr=False)
    _external: dict[str, ExternalFile] = field(default_factory=dict, repr=False)
    _dataset_index: BM25FIndex | None = field(default=None, repr=False)
    _dataservice_index: BM25FIndex | None = field(default=None, repr=False)
    _organization_index: BM25FIndex | None = field(default=None, repr=False)
    _profiles: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)

    # ----------------------------------------------------------------------------- loading

    @classmethod
    def load(
        cls,
        snapshots_dir: Path | str | None = None,
        snapshot_id: str | None = None,
        *,
        verify: bool = True,
    ) -> CatalogStore:
        """Load and index a snapshot.

        Args:
            snapshots_dir: The ``snapshots/`` directory; defaults to :func:`default_snapshots_dir`.
            snapshot_id: Which snapshot; defaults to the manifest's ``current``.
            verify: Check every file's sha256 against the manifest first.

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
        return cls._from_files(info, files)

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
        # A tabular table is named like api-tabular's parsing table (md5 of the resource id).
        # Parsed on first use (most of the load time otherwise); schemas are checked now.
        tables = tabular.LazyTables(
            parsers={
                rid: _table_parser(
                    info.directory, hashlib.md5(rid.encode()).hexdigest(), schema, files
                )
                for rid, schema in schemas.get("tabular", {}).items()
            }
        )
        metrics = tabular.LazyTables(
            parsers={
                model: _table_parser(info.directory, model, schema, files)
                for model, schema in schemas.get("metrics", {}).items()
            }
        )
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
        store = cls(
            info=info,
            organizations={o["id"]: o for o in organizations},
            datasets={d["id"]: d for d in datasets},
            dataservices={s["id"]: s for s in dataservices},
            tables=tables,
            downloads=downloads,
            metrics=metrics,
            crawler_exceptions=exceptions,
            specs=specs,
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
        self._dataset_index = BM25FIndex(
            [
                (
                    d["id"],
                    {
                        "title": d["title"],
                        "description": d.get("description") or "",
                        "tags": " ".join(d.get("tags", [])),
                        "organization": _org_text(d.get("organization")),
                    },
                )
                for d in self.datasets.values()
            ],
            DATASET_FIELDS,
        )
        self._dataservice_index = BM25FIndex(
            [
                (
                    s["id"],
                    {
                        "title": s["title"],
                        "description": s.get("description") or "",
                        "tags": " ".join(s.get("tags", [])),
                        "organization": _org_text(s.get("organization")),
                    },
                )
                for s in self.dataservices.values()
            ],
            DATASERVICE_FIELDS,
        )
        self._organization_index = BM25FIndex(
            [
                (
                    o["id"],
                    {
                        "name": o["name"],
                        "acronym": o.get("acronym") or "",
                        "description": o.get("description") or "",
                    },
                )
                for o in self.organizations.values()
            ],
            ORGANIZATION_FIELDS,
        )

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
        """Return the dataset record (deleted ones included) or ``None``."""
        return self._by_id_or_slug("dataset", self.datasets, id_or_slug)

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
            return None
        dataset_id, position = located
        dataset = self.datasets[dataset_id]
        return dataset, dataset["resources"][position]

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
        """Return what the twin serves for an external ``host/path`` key (``urls.external_key``)."""
        return self._external.get(key)

    def is_external_served(self, url: str | None) -> bool:
        """Return whether the twin serves ``url`` under ``/_ext/``."""
        return bool(url) and external_key(str(url)) in self._external

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
        return not record.get("deleted") and not record.get("private")

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
    ) -> SearchPage:
        """Search visible datasets (not deleted, not private).

        Ranking is BM25F over title (weight 3), tags (1.5), organization and description (1);
        archived datasets keep their matches at 0.6 of the score and popular ones get a mild boost
        (see :func:`_prior`). Without a query every visible
        dataset matches, newest first. ``sort`` (``created``, ``last_update``, ``reuses``,
        ``followers``, ``views``, optionally prefixed with ``-``) reorders the matches; unknown
        sort or range values are ignored, as the real API does not validate them for the MCP.
        Ties are always broken by id.
        """
        keep = self._dataset_filter(
            last_update_range, organization, tag, dataservice, format, badge
        )
        ranked = self._rank(self._dataset_index, self.datasets, query, keep, "created_at")
        ranked = _apply_sort(ranked, sort, self.datasets, _DATASET_SORTS)
        return _page(ranked, page, page_size)

    def _dataset_filter(
        self,
        last_update_range: str | None,
        organization: str | None,
        tag: str | None,
        dataservice: str | None,
        fmt: str | None,
        badge: str | None,
    ) -> Callable[[str], bool]:
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
            if tag and tag not in record.get("tags", []):
                return False
            if served is not None and dataset_id not in served:
                return False
            if fmt and not any(r.get("format") == fmt for r in record["resources"]):
                return False
            if badge and not any(b.get("kind") == badge for b in record.get("badges", [])):
                return False
            return not (since and datetime.fromisoformat(record["last_update"]) < since)

        return keep

    def search_dataservices(
        self, query: str | None, *, page: int = 1, page_size: int = 20
    ) -> SearchPage:
        """Search dataservices (BM25F like datasets; archived ones scored at 0.6)."""
        ranked = self._rank(
            self._dataservice_index,
            self.dataservices,
            query,
            lambda i: not self.dataservices[i].get("deleted_at"),
            "created_at",
        )
        return _page(ranked, page, page_size)

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
    ) -> SearchPage:
        """Search organizations by name, acronym and description, with the MCP's filters."""

        def keep(org_id: str) -> bool:
            record = self.organizations[org_id]
            if badge and not any(b.get("kind") == badge for b in record.get("badges", [])):
                return False
            if name and fold(record["name"]) != fold(name):
                return False
            return not (
                business_number_id and record.get("business_number_id") != business_number_id
            )

        ranked = self._rank(self._organization_index, self.organizations, query, keep, "created_at")
        ranked = _apply_sort(ranked, sort, self.organizations, _ORG_SORTS)
        return _page(ranked, page, page_size)

    def _rank(
        self,
        index: BM25FIndex | None,
        records: Mapping[str, dict[str, Any]],
        query: str | None,
        keep: Callable[[str], bool],
        browse_key: str,
    ) -> list[str]:
        assert index is not None  # built by _index()
        if query and query.strip():
            ranked = index.search(query, keep=keep, factor=lambda i: _prior(records[i]))
            return [doc_id for doc_id, _ in ranked]
        # Browse mode: everything that passes the filters, newest first.
        ids = [i for i in records if keep(i)]
        ids.sort(key=lambda i: i)
        ids.sort(key=lambda i: str(records[i].get(browse_key, "")), reverse=True)
        return ids


def _prior(record: Mapping[str, Any]) -> float:
    """Return the score multiplier of a record: archived demotion times popularity boost."""
    factor = ARCHIVED_FACTOR if record.get("archived") or record.get("archived_at") else 1.0
    views = (record.get("metrics") or {}).get("views") or 0
    return factor * (1.0 + POPULARITY_WEIGHT * math.log10(1 + max(0, int(views))))


def _apply_sort(
    ranked: list[str],
    sort: str | None,
    records: Mapping[str, Mapping[str, Any]],
    keys: Mapping[str, Callable[[Mapping[str, Any]], Any]],
) -> list[str]:
    if not sort:
        return ranked
    descending = sort.startswith("-")
    key = keys.get(sort.lstrip("-"))
    if key is None:
        return ranked
    position = {doc_id: i for i, doc_id in enumerate(ranked)}
    # Relevance order (then id) breaks ties of the sort key.
    ordered = sorted(ranked, key=lambda i: position[i])
    ordered.sort(key=lambda i: key(records[i]), reverse=descending)
    return ordered


def _page(ids: list[str], page: int, page_size: int) -> SearchPage:
    start = (page - 1) * page_size
    return SearchPage(len(ids), ids[start : start + page_size], page, page_size)


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
