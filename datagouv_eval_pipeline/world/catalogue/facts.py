"""The real catalogue's factual layer: every dataset of data.gouv.fr's public export.

The snapshot builder derives one compact columnar file from the platform's export
(``catalogue/datasets.columns.gz``): a JSON header line, then one line per column whose values
are joined by the ASCII unit separator. Reading it is a decompression and one ``split`` per
column, so the twin starts fast; a dataset's udata record is built only when someone asks for
it (:class:`CatalogueDatasets`), and its search index is built once and cached on disk
(:mod:`datagouv_eval_pipeline.world.catalogue.search`).

The export holds facts only (no description, no resource objects): those records are marked
``_twin.provenance = "catalogue-facts"`` and keep ``description`` empty; their resources and
``quality`` are generated from the row (:mod:`~datagouv_eval_pipeline.world.catalogue.generated`)
and
marked so in ``extras``.
"""

from __future__ import annotations

import copy
import gzip
import io
import json
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from datagouv_eval_pipeline.world.catalogue import generated
from datagouv_eval_pipeline.world.catalogue.search import Segment

FILE_NAME = "catalogue/datasets.columns.gz"
FORMAT_NAME = "datagouv-eval-catalogue-columns"
SEPARATOR = "\x1f"
PROVENANCE = "catalogue-facts"

# Column name in the file -> column of the platform's export it comes from.
COLUMNS: dict[str, str] = {
    "id": "id",
    "slug": "slug",
    "title": "title",
    "acronym": "acronym",
    "organization": "organization",
    "organization_id": "organization_id",
    "frequency": "frequency",
    "license": "license",
    "granularity": "spatial.granularity",
    "featured": "featured",
    "created_at": "created_at",
    "last_modified": "last_modified",
    "tags": "tags",
    "archived": "archived",
    "resources_count": "resources_count",
    "main_resources_count": "main_resources_count",
    "formats": "resources_formats",
    "harvest_backend": "harvest.backend",
    "quality_score": "quality_score",
    "views": "metric.views",
    "followers": "metric.followers",
    "reuses": "metric.reuses",
    "downloads": "metric.resources_downloads",
    "discussions": "metric.discussions",
    "dataservices": "metric.dataservices",
}
INT_COLUMNS = (
    "resources_count",
    "main_resources_count",
    "views",
    "followers",
    "reuses",
    "downloads",
    "discussions",
    "dataservices",
)

# The export prints licence labels; the API serves udata's licence ids.
LICENSE_IDS: dict[str, str] = {
    "Licence Ouverte / Open Licence version 2.0": "lov2",
    "Licence Ouverte / Open Licence": "fr-lo",
    "License Not Specified": "notspecified",
    "Open Data Commons Open Database License (ODbL)": "odc-odbl",
    "Other (Attribution)": "other-at",
    "Other (Public Domain)": "other-pd",
    "Other (Open)": "other-open",
    "Creative Commons Attribution": "cc-by",
    "Creative Commons Attribution Share-Alike": "cc-by-sa",
    "Open Data Commons Attribution License": "odc-by",
    "Creative Commons CCZero": "cc-zero",
    "Open Data Commons Public Domain Dedication and Licence (PDDL)": "odc-pddl",
    "": "notspecified",
}

# Fields every udata dataset serves with these values unless its producer set them: open
# access (AccessType.OPEN), no dataset-level schema, and an anonymous client's permissions.
DATASET_ACCESS_DEFAULTS: dict[str, Any] = {
    "access_type": "open",
    "access_audiences": [],
    "access_type_reason_category": None,
    "access_type_reason": None,
    "authorization_request_url": None,
    "schema": None,
    "permissions": {"delete": False, "edit": False, "edit_resources": False},
}

_SITE = "https://www.data.gouv.fr/"
_API = "https://www.data.gouv.fr/api/"
# Records built on demand and kept (an API response cache compares records by identity).
RECORD_CACHE_SIZE = 20_000


class FactsError(ValueError):
    """The columnar catalogue file is malformed; the message says where."""


def _clean(value: str) -> str:
    return value.replace(SEPARATOR, " ").replace("\r", " ").replace("\n", " ")


def encode(rows: Sequence[Mapping[str, str]]) -> bytes:
    """Encode export rows (already renamed to :data:`COLUMNS` keys) as the columnar text.

    Args:
        rows: One mapping per dataset, keyed by the names of :data:`COLUMNS`.

    Returns:
        The uncompressed file content (the builder gzips it).
    """
    header = {"format": FORMAT_NAME, "rows": len(rows), "columns": list(COLUMNS)}
    lines = [json.dumps(header, separators=(",", ":"))]
    for name in COLUMNS:
        lines.append(SEPARATOR.join(_clean(row.get(name, "") or "") for row in rows))
    return ("\n".join(lines) + "\n").encode("utf-8")


def decode(content: bytes, where: str) -> LazyColumns:
    """Check the header of the gzip-compressed columnar file; columns are split on first use.

    Raises:
        FactsError: not gzip or a wrong header (the message names ``where``); a column of the
            wrong length raises it on its first use.
    """
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(content)) as stream:
            first = stream.readline().decode("utf-8")
    except (OSError, EOFError, UnicodeDecodeError) as error:
        raise FactsError(f"{where}: not a gzip-compressed UTF-8 file: {error}") from error
    try:
        header = json.loads(first)
    except json.JSONDecodeError as error:
        raise FactsError(f"{where}: line 1: invalid JSON header: {error}") from error
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise FactsError(f"{where}: line 1: expected a {FORMAT_NAME!r} header")
    names = header.get("columns")
    rows = header.get("rows")
    if names != list(COLUMNS) or not isinstance(rows, int):
        raise FactsError(f"{where}: line 1: expected columns {list(COLUMNS)} and a row count")
    return LazyColumns(content, rows, where)


class LazyColumns(Mapping[str, list[str]]):
    """The file's columns by name, decompressed on first use and split one column at a time."""

    def __init__(self, content: bytes, rows: int, where: str) -> None:
        """Wrap the compressed file (its header already checked) of ``rows`` rows."""
        self._content = content
        self.rows = rows
        self.where = where
        self._lines: list[str] | None = None
        self._columns: dict[str, list[str]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(COLUMNS)

    def __iter__(self) -> Iterator[str]:
        return iter(COLUMNS)

    def __getitem__(self, name: str) -> list[str]:
        column = self._columns.get(name)
        if column is not None:
            return column
        if name not in COLUMNS:
            raise KeyError(name)
        with self._lock:
            if self._lines is None:
                text = gzip.decompress(self._content).decode("utf-8")
                self._lines = text.split("\n", len(COLUMNS) + 1)
            line = list(COLUMNS).index(name) + 1
            values = self._lines[line].split(SEPARATOR) if self.rows else []
            if len(values) != self.rows:
                raise FactsError(
                    f"{self.where}: line {line + 1} (column {name!r}): {len(values)} values, "
                    f"expected {self.rows}"
                )
            self._columns[name] = values
        return values


def _epoch(values: Sequence[str]) -> npt.NDArray[np.int64]:
    # The export's timestamps are naive UTC, with or without microseconds.
    return np.array(
        [int(datetime.fromisoformat(v).timestamp()) if v else 0 for v in values], dtype=np.int64
    )


def _iso(value: str) -> str:
    return value + "+00:00" if value else value


class CatalogueDatasets(Mapping[str, dict[str, Any]]):
    """The catalogue datasets as a read-only mapping id -> udata v1 record, built on demand.

    Numeric columns are numpy arrays by row (the search engine reads them); rows are in the
    file's order (sorted by id).
    """

    def __init__(
        self, columns: Mapping[str, list[str]], organizations: Mapping[str, Mapping[str, Any]]
    ) -> None:
        """Wrap decoded columns; ``organizations`` resolves ``organization_id`` to records."""
        self.columns = columns
        self.organizations = organizations
        self._size = len(columns["id"]) if not isinstance(columns, LazyColumns) else columns.rows
        self._row_of: dict[str, int] | None = None
        self._slugs: dict[str, int] | None = None
        self._cache: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._ints: dict[str, npt.NDArray[np.int64]] = {}
        self._dates: dict[str, npt.NDArray[np.int64]] = {}
        self._groups: dict[str, dict[str, npt.NDArray[np.int64]]] = {}
        self._flags: dict[str, npt.NDArray[np.bool_]] = {}
        self._codes: dict[str, tuple[list[str], npt.NDArray[np.int64], npt.NDArray[np.int64]]] = {}
        # The search segment (index and boosts), set by the catalog store on first search and
        # shared by the stores (drift overlays) that share this catalogue.
        self.segment: Segment | None = None
        self.hidden: npt.NDArray[np.bool_] | None = None
        self.last_modified: npt.NDArray[np.float64] | None = None
        self.lock = threading.RLock()

    def warm(self) -> None:
        """Decompress and split every column now (e.g. in a background thread at start-up)."""
        for name in COLUMNS:
            self.columns[name]

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids)

    def __contains__(self, key: object) -> bool:
        return key in self._rows

    @property
    def ids(self) -> list[str]:
        """Return the dataset ids by row."""
        return self.columns["id"]

    @property
    def _rows(self) -> dict[str, int]:
        if self._row_of is None:
            self._row_of = {ident: row for row, ident in enumerate(self.ids)}
        return self._row_of

    def __getitem__(self, key: str) -> dict[str, Any]:
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached
        row = self._rows[key]
        record = self.record(row)
        self._cache[key] = record
        if len(self._cache) > RECORD_CACHE_SIZE:
            self._cache.popitem(last=False)
        return record

    def row(self, key: str) -> int | None:
        """Return the row of a dataset id, or ``None``."""
        return self._rows.get(key)

    def by_slug(self, slug: str) -> str | None:
        """Return the id of the dataset with this slug, or ``None``."""
        if self._slugs is None:
            self._slugs = {s: row for row, s in enumerate(self.columns["slug"])}
        row = self._slugs.get(slug)
        return self.ids[row] if row is not None else None

    def ints(self, name: str) -> npt.NDArray[np.int64]:
        """Return an integer column (counts, metrics) as an array by row."""
        if name not in self._ints:
            self._ints[name] = np.array(
                [int(v) if v else 0 for v in self.columns[name]], dtype=np.int64
            )
        return self._ints[name]

    def dates(self, name: str) -> npt.NDArray[np.int64]:
        """Return ``created_at`` / ``last_modified`` as POSIX seconds by row."""
        if name not in self._dates:
            self._dates[name] = _epoch(self.columns[name])
        return self._dates[name]

    def archived(self) -> npt.NDArray[np.bool_]:
        """Return whether each row is archived (archived datasets are hidden from search)."""
        if "archived" not in self._flags:
            self._flags["archived"] = np.array(
                [v not in ("", "False") for v in self.columns["archived"]], dtype=bool
            )
        return self._flags["archived"]

    def featured(self) -> npt.NDArray[np.bool_]:
        """Return whether each row is featured."""
        if "featured" not in self._flags:
            self._flags["featured"] = np.array(
                [v == "True" for v in self.columns["featured"]], dtype=bool
            )
        return self._flags["featured"]

    def _group(self, column: str, value: str, multi: bool) -> npt.NDArray[np.bool_]:
        groups = self._groups.get(column)
        if groups is None:
            lists: dict[str, list[int]] = {}
            for row, cell in enumerate(self.columns[column]):
                for item in cell.split(",") if multi else (cell,):
                    if item:
                        lists.setdefault(item, []).append(row)
            groups = {k: np.array(v, dtype=np.int64) for k, v in lists.items()}
            self._groups[column] = groups
        mask = np.zeros(len(self), dtype=bool)
        rows = groups.get(value)
        if rows is not None:
            mask[rows] = True
        return mask

    def codes(
        self, column: str, multi: bool
    ) -> tuple[list[str], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Return a column as codes: the distinct values, and per row its codes in CSR form.

        ``values[codes[offsets[r]:offsets[r + 1]]]`` are row ``r``'s values (one for a
        single-valued column, the comma-separated items of a list column, none if empty),
        built once, so that facets count thousands of rows with one ``bincount``.
        """
        key = f"{column}:{multi}"
        found = self._codes.get(key)
        if found is None:
            index: dict[str, int] = {}
            codes: list[int] = []
            counts: list[int] = []
            for cell in self.columns[column]:
                items = [i for i in cell.split(",") if i] if multi else ([cell] if cell else [])
                if multi:
                    items = list(dict.fromkeys(items))
                counts.append(len(items))
                codes.extend(index.setdefault(item, len(index)) for item in items)
            offsets = np.concatenate(([0], np.cumsum(np.array(counts, dtype=np.int64))))
            found = (list(index), np.array(codes, dtype=np.int64), offsets.astype(np.int64))
            self._codes[key] = found
        return found

    def organization_mask(self, org_id: str) -> npt.NDArray[np.bool_]:
        """Return which rows the organization ``org_id`` publishes."""
        return self._group("organization_id", org_id, multi=False)

    def tag_mask(self, tag: str) -> npt.NDArray[np.bool_]:
        """Return which rows carry ``tag``."""
        return self._group("tags", tag, multi=True)

    def format_mask(self, fmt: str) -> npt.NDArray[np.bool_]:
        """Return which rows have a resource in format ``fmt`` (the export's lower-case names)."""
        return self._group("formats", fmt.lower(), multi=True)

    def license_mask(self, license_id: str) -> npt.NDArray[np.bool_]:
        """Return which rows are under the licence ``license_id`` (udata's licence ids)."""
        return self._group("license", license_id, multi=False)

    def granularity_mask(self, granularity: str) -> npt.NDArray[np.bool_]:
        """Return which rows have the spatial granularity ``granularity``."""
        return self._group("granularity", granularity, multi=False)

    def format_family_mask(self, family: str) -> npt.NDArray[np.bool_]:
        """Return which rows have a resource of the format family ``family``.

        udata's ``DatasetSearch._compute_format_family``: the families of the resources'
        formats, or ``other`` for a dataset without a resource format.
        """
        values, codes, offsets = self.codes("formats", True)
        wanted = np.array([format_family(v) == family for v in values] + [False], dtype=bool)
        mask = np.zeros(len(self), dtype=bool)
        if codes.size:
            owners = np.repeat(np.arange(len(self)), np.diff(offsets))
            mask[owners[wanted[codes]]] = True
        if family == "other":
            mask |= np.diff(offsets) == 0
        return mask

    def organization_rows(self, org_ids: set[str]) -> npt.NDArray[np.bool_]:
        """Return which rows are published by one of ``org_ids``."""
        values, codes, offsets = self.codes("organization_id", False)
        wanted = np.array([v in org_ids for v in values] + [False], dtype=bool)
        mask = np.zeros(len(self), dtype=bool)
        if codes.size:
            owners = np.repeat(np.arange(len(self)), np.diff(offsets))
            mask[owners[wanted[codes]]] = True
        return mask

    def without_organization(self) -> npt.NDArray[np.bool_]:
        """Return which rows have no publishing organization (a user owns them)."""
        _, _, offsets = self.codes("organization_id", False)
        empty: npt.NDArray[np.bool_] = np.diff(offsets) == 0
        return empty

    def record(self, row: int) -> dict[str, Any]:
        """Build the udata v1 record of one row (fields the export lacks are empty)."""
        c = self.columns
        ident = c["id"][row]
        slug = c["slug"][row]
        created = _iso(c["created_at"][row])
        modified = _iso(c["last_modified"][row]) or created
        archived = c["archived"][row]
        org = (
            self.organizations.get(c["organization_id"][row]) if c["organization_id"][row] else None
        )
        granularity = c["granularity"][row]
        backend = c["harvest_backend"][row]
        quality = c["quality_score"][row]
        formats = [f for f in c["formats"][row].split(",") if f]
        count = int(c["resources_count"][row] or 0)
        main_count = int(c["main_resources_count"][row] or 0)
        metrics = {
            "discussions": int(c["discussions"][row] or 0),
            "followers": int(c["followers"][row] or 0),
            "resources_downloads": int(c["downloads"][row] or 0),
            "reuses": int(c["reuses"][row] or 0),
            "views": int(c["views"][row] or 0),
            "dataservices": int(c["dataservices"][row] or 0),
        }
        return {
            "id": ident,
            "title": c["title"][row],
            "acronym": c["acronym"][row] or None,
            "slug": slug,
            "description": "",
            "description_short": "",
            "created_at": created,
            "last_modified": modified,
            "last_update": modified,
            "deleted": None,
            "archived": _iso(archived) if archived not in ("", "False") else None,
            "featured": c["featured"][row] == "True",
            "private": False,
            "tags": [t for t in c["tags"][row].split(",") if t],
            "badges": [],
            "resources": generated.resources(
                dataset_id=ident,
                slug=slug,
                formats=formats,
                count=count,
                main_count=main_count,
                created_at=created,
                last_modified=modified,
                downloads=metrics["resources_downloads"],
            ),
            "community_resources": [],
            "frequency": c["frequency"][row] or "unknown",
            "frequency_date": None,
            "extras": {generated.GENERATED_KEY: list(generated.DATASET_GENERATED_FIELDS)},
            "metrics": metrics,
            "organization": _org_ref(org) if org else None,
            "owner": None,
            "temporal_coverage": None,
            "spatial": {"granularity": granularity, "zones": [], "geom": None}
            if granularity
            else None,
            "license": c["license"][row] or "notspecified",
            "uri": f"{_API}1/datasets/{ident}/",
            "page": f"{_SITE}datasets/{slug}/",
            "quality": generated.quality(
                score=float(quality) if quality else None,
                license_id=c["license"][row],
                granularity=granularity,
                frequency=c["frequency"][row],
                formats=formats,
                count=count,
                main_count=main_count,
            ),
            "internal": {"created_at_internal": created, "last_modified_internal": modified},
            "harvest": {"backend": backend} if backend else None,
            "contact_points": [],
            **copy.deepcopy(DATASET_ACCESS_DEFAULTS),
            "_twin": {
                "provenance": PROVENANCE,
                "organization_id": org["id"] if org else None,
                "resources_count": count,
                "formats": formats,
            },
        }


# udata settings.py (17.6.0) TABULAR_FORMATS, MACHINE_READABLE_FORMATS, GEOGRAPHICAL_FORMATS,
# DOCUMENTS_FORMATS; any other format is ``other`` (core/dataset/constants.py
# ``get_format_family``).
FORMAT_FAMILIES: dict[str, frozenset[str]] = {
    "tabular": frozenset({"csv", "parquet", "xls", "xlsx", "ods", "tsv", "csv.gz"}),
    "machine_readable": frozenset({"json", "xml", "rdf", "sql", "jsonl", "ndjson"}),
    "geographical": frozenset(
        {
            "shp",
            "kml",
            "kmz",
            "gpx",
            "shx",
            "ovr",
            "geojson",
            "gpkg",
            "pmtiles",
            "mbtiles",
            "wms",
            "wfs",
            "ogc:wms",
            "ogc:wfs",
        }
    ),
    "documents": frozenset({"pdf", "doc", "docx", "md", "txt", "html", "htm", "rtf", "odt"}),
}


def format_family(fmt: str | None) -> str:
    """Return udata's format family of a resource format (``other`` when unknown)."""
    folded = (fmt or "").lower().strip()
    if not folded:
        return "other"
    for family, formats in FORMAT_FAMILIES.items():
        if folded in formats:
            return family
    return "other"


def _org_ref(org: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": org["id"],
        "name": org["name"],
        "slug": org["slug"],
        "acronym": org.get("acronym"),
        "uri": org["uri"],
        "page": org["page"],
        "logo": org["logo"],
        "logo_thumbnail": org["logo_thumbnail"],
        "badges": org["badges"],
    }
