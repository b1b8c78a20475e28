"""The platform's datasets export (``export-dataset-*.csv``), derived from the twin's catalogue.

data.gouv.fr publishes its own catalogue as CSV files (dataset ``5d13a8b6634f41070a43dff3``);
the datasets file is served by the Tabular API like any other resource. The twin derives it at
load time from what it already holds, so the snapshot stores the facts once: one row per dataset
the twin publishes (the real catalogue's facts, archived datasets included, and the hand-made
records, which replace the facts rows of the same id or slug), newest id first as udata's
queryset orders them.

The columns are those of udata's ``DatasetCsvAdapter`` (``udata/core/dataset/csv.py``) and its
metric fields, written as udata's CSV writer writes them: ``;``-separated, every non-numeric
value quoted, booleans as ``True``/``False``, dates in ISO form. Values the facts do not hold
(descriptions, owners, temporal coverage, zones, harvest details other than the backend,
monthly metric series) are empty for the facts rows; the hand-made records fill what they know.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from datagouv_eval_pipeline.world.catalogue import facts
from datagouv_eval_pipeline.world.catalogue.tabular import Column, ColumnType, Table, parse_value

RESOURCE_ID = "f868cca6-8da1-4369-a78d-47463f19a9a3"
SEPARATOR = ";"
# The resource's ``tabular`` generator in the sources, and its ``derived`` name in tables.json.
GENERATOR = "catalogue_datasets"
DERIVATION = "catalogue-datasets-export"

_SPEC: tuple[tuple[str, ColumnType, str], ...] = (
    ("id", "string", ""),
    ("title", "string", ""),
    ("slug", "string", ""),
    ("acronym", "string", ""),
    ("url", "string", "url"),
    ("organization", "string", ""),
    ("organization_id", "string", ""),
    ("owner", "string", ""),
    ("owner_id", "string", ""),
    ("description", "string", ""),
    ("description_short", "string", ""),
    ("frequency", "string", ""),
    ("license", "string", ""),
    ("temporal_coverage.start", "date", ""),
    ("temporal_coverage.end", "date", ""),
    ("spatial.granularity", "string", ""),
    ("spatial.zones", "string", ""),
    ("spatial.geom", "string", ""),
    ("featured", "bool", ""),
    ("created_at", "datetime", ""),
    ("last_modified", "datetime", ""),
    ("badges", "string", ""),
    ("tags", "string", ""),
    # ``False`` or the date the dataset was archived: a text column for csv_detective.
    ("archived", "string", ""),
    ("resources_count", "int", ""),
    ("main_resources_count", "int", ""),
    ("resources_formats", "string", ""),
    ("harvest.backend", "string", ""),
    ("harvest.domain", "string", ""),
    ("harvest.remote_id", "string", ""),
    ("harvest.remote_url", "string", "url"),
    ("harvest.uri", "string", ""),
    ("harvest.created_at", "datetime", ""),
    ("harvest.issued_at", "datetime", ""),
    ("harvest.modified_at", "datetime", ""),
    ("harvest.last_update", "datetime", ""),
    ("harvest.dct_identifier", "string", ""),
    ("quality_score", "float", ""),
    ("metric.discussions", "int", ""),
    ("metric.discussions_open", "int", ""),
    ("metric.reuses", "int", ""),
    ("metric.reuses_by_months", "string", ""),
    ("metric.dataservices", "int", ""),
    ("metric.followers", "int", ""),
    ("metric.followers_by_months", "string", ""),
    ("metric.views", "int", ""),
    ("metric.resources_downloads", "int", ""),
)
COLUMNS: tuple[Column, ...] = tuple(Column(name, kind, fmt) for name, kind, fmt in _SPEC)
_POSITION = {name: index for index, (name, _, _) in enumerate(_SPEC)}

# The export prints licence titles; the twin's records carry udata's licence ids.
LICENSE_TITLES: dict[str, str] = {
    ident: title for title, ident in facts.LICENSE_IDS.items() if title
}
_SITE = "https://www.data.gouv.fr/"


def naive_iso(value: str | None) -> str:
    """An ISO timestamp as udata prints it: naive UTC, microseconds kept."""
    if not value:
        return ""
    when = datetime.fromisoformat(value)
    if when.tzinfo is not None:
        when = when.astimezone(UTC).replace(tzinfo=None)
    return when.isoformat()


def _row(values: Mapping[str, Any]) -> list[Any]:
    row: list[Any] = [None] * len(_SPEC)
    for name, value in values.items():
        row[_POSITION[name]] = value
    return row


def _int(text: str) -> int:
    return int(text) if text else 0


def facts_rows(columns: Mapping[str, Sequence[str]], order: Iterable[int]) -> Iterator[list[Any]]:
    """Export rows of the real catalogue's facts (the columnar file), in ``order``.

    Args:
        columns: The facts columns by name (:data:`facts.COLUMNS` keys). The snapshot builder
            already left out the rows a hand-made record replaces (same id or slug).
        order: Row positions in the file, in the order wanted.
    """
    # Local lists: this runs for every dataset of the catalogue.
    ident, title, slug, acronym = (columns[n] for n in ("id", "title", "slug", "acronym"))
    org, org_id, frequency, licence = (
        columns[n] for n in ("organization", "organization_id", "frequency", "license")
    )
    granularity, featured, created, modified, tags, archived = (
        columns[n]
        for n in ("granularity", "featured", "created_at", "last_modified", "tags", "archived")
    )
    count, main, formats, backend, quality = (
        columns[n]
        for n in (
            "resources_count",
            "main_resources_count",
            "formats",
            "harvest_backend",
            "quality_score",
        )
    )
    discussions, reuses, dataservices, followers, views, downloads = (
        columns[n]
        for n in ("discussions", "reuses", "dataservices", "followers", "views", "downloads")
    )
    titles = LICENSE_TITLES
    for i in order:
        gone = archived[i]
        score = quality[i]
        yield [
            ident[i],
            title[i],
            slug[i],
            acronym[i],
            f"{_SITE}datasets/{slug[i]}/",
            org[i],
            org_id[i],
            None,
            None,
            None,
            None,
            frequency[i],
            titles.get(licence[i], licence[i]),
            None,
            None,
            granularity[i],
            None,
            None,
            featured[i] == "True",
            created[i],
            modified[i],
            None,
            tags[i],
            False if gone in ("", "False") else gone,
            _int(count[i]),
            _int(main[i]),
            formats[i],
            backend[i],
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            f"{float(score):.2f}" if score else "",
            _int(discussions[i]),
            None,
            _int(reuses[i]),
            None,
            _int(dataservices[i]),
            _int(followers[i]),
            None,
            _int(views[i]),
            _int(downloads[i]),
        ]


def record_row(record: Mapping[str, Any]) -> list[Any]:
    """The export row of one hand-made dataset record (udata v1 shape)."""
    org = record.get("organization") or {}
    owner = record.get("owner") or {}
    resources = record.get("resources") or []
    metrics = record.get("metrics") or {}
    spatial = record.get("spatial") or {}
    temporal = record.get("temporal_coverage") or {}
    harvest = record.get("harvest") or {}
    formats = sorted({r["format"] for r in resources if r.get("format")})
    score = (record.get("quality") or {}).get("score")
    return _row(
        {
            "id": record["id"],
            "title": record["title"],
            "slug": record["slug"],
            "acronym": record.get("acronym") or "",
            "url": record["page"],
            "organization": org.get("name", ""),
            "organization_id": org.get("id", ""),
            "owner": owner.get("slug", ""),
            "owner_id": owner.get("id", ""),
            "description": record.get("description") or "",
            "description_short": record.get("description_short") or "",
            "frequency": record.get("frequency") or "",
            "license": LICENSE_TITLES.get(record.get("license") or "", record.get("license")),
            "temporal_coverage.start": (temporal.get("start") or "")[:10],
            "temporal_coverage.end": (temporal.get("end") or "")[:10],
            "spatial.granularity": spatial.get("granularity") or "",
            "spatial.zones": ",".join(spatial.get("zones") or []),
            "featured": bool(record.get("featured")),
            "created_at": naive_iso(record["created_at"]),
            "last_modified": naive_iso(record["last_modified"]),
            "badges": ",".join(b["kind"] for b in record.get("badges") or []),
            "tags": ",".join(record.get("tags") or []),
            "archived": naive_iso(record["archived"]) if record.get("archived") else False,
            "resources_count": len(resources),
            "main_resources_count": sum(1 for r in resources if r.get("type") == "main"),
            "resources_formats": ",".join(formats),
            "harvest.backend": harvest.get("backend") or "",
            "harvest.domain": harvest.get("domain") or "",
            "quality_score": f"{score:.2f}" if score is not None else "",
            "metric.discussions": int(metrics.get("discussions", 0)),
            "metric.reuses": int(metrics.get("reuses", 0)),
            "metric.dataservices": int(metrics.get("dataservices", 0)),
            "metric.followers": int(metrics.get("followers", 0)),
            "metric.views": int(metrics.get("views", 0)),
            "metric.resources_downloads": int(metrics.get("resources_downloads", 0)),
        }
    )


def published(record: Mapping[str, Any]) -> bool:
    """Whether udata exports a dataset: neither deleted nor private (archived ones are kept)."""
    return not record.get("deleted") and not record.get("private")


def _rows(
    columns: Mapping[str, Sequence[str]] | None, records: Iterable[Mapping[str, Any]]
) -> Iterator[list[Any]]:
    """Every export row, newest id first (the facts file is sorted by id)."""
    own = sorted((record_row(r) for r in records if published(r)), key=lambda r: str(r[0]))
    if columns is None:
        yield from reversed(own)
        return
    ids = columns["id"]
    for row in facts_rows(columns, range(len(ids) - 1, -1, -1)):
        while own and str(own[-1][0]) > str(row[0]):
            yield own.pop()
        yield row
    yield from reversed(own)


def _typed(row: list[Any]) -> tuple[Any, ...]:
    """The row's typed cells, as parsing its CSV line gives them (strings of the facts shared)."""
    cells: list[Any] = []
    for column, value in zip(COLUMNS, row, strict=True):
        if value is None or value == "":
            cells.append(None)
        elif column.type == "string":
            # The writer prints a non-string as str() does (``False`` in ``archived``).
            cells.append(value if isinstance(value, str) else str(value))
        elif isinstance(value, str):
            cells.append(parse_value(column, value))
        else:
            cells.append(value)
    return tuple(cells)


def _writer(buffer: io.StringIO) -> Any:
    return csv.writer(
        buffer,
        delimiter=SEPARATOR,
        quotechar='"',
        quoting=csv.QUOTE_NONNUMERIC,
        lineterminator="\r\n",
    )


def export_csv(
    columns: Mapping[str, Sequence[str]] | None,
    records: Iterable[Mapping[str, Any]],
    *,
    chunk: int = 2048,
) -> bytes:
    """The export file (UTF-8): the facts rows and the hand-made records, newest id first.

    Written ``chunk`` rows at a time, so the whole file exists only once, as bytes (the text
    of 120,000 rows held by a single ``StringIO`` would take four times its size).

    Args:
        columns: The real catalogue's facts columns (``None``: a snapshot without them).
        records: The twin's hand-made dataset records (deleted and private ones are skipped).
        chunk: Rows encoded at a time.

    Returns:
        The CSV file, as udata's writer produces it.
    """
    parts: list[bytes] = []
    buffer = io.StringIO()
    writer = _writer(buffer)
    writer.writerow([c.name for c in COLUMNS])
    for index, row in enumerate(_rows(columns, records), start=1):
        writer.writerow(row)
        if index % chunk == 0:
            parts.append(buffer.getvalue().encode("utf-8"))
            buffer.seek(0)
            buffer.truncate()
    parts.append(buffer.getvalue().encode("utf-8"))
    return b"".join(parts)


def build_table(
    name: str, columns: Mapping[str, Sequence[str]] | None, records: Sequence[Mapping[str, Any]]
) -> Table:
    """The export as a typed table; its file (about 80 MB) is written only when downloaded.

    The typed cells are those parsing the file gives (the tests compare them); strings are
    shared with the facts columns.

    Args:
        name: The table's internal name (api-tabular's parsing table).
        columns: The real catalogue's facts columns (``None``: a snapshot without them).
        records: The twin's hand-made dataset records.
    """
    return Table(
        name=name,
        columns=COLUMNS,
        rows=[_typed(row) for row in _rows(columns, records)],
        separator=SEPARATOR,
        source_factory=lambda: export_csv(columns, records),
    )
