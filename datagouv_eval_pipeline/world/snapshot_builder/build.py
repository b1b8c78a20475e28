"""Build the twin's catalog snapshot from the reviewable sources in ``source/``.

Run ``datagouv-eval twin build-snapshot`` (or
``python -m datagouv_eval_pipeline.world.snapshot_builder.build``) to regenerate
``snapshots/<snapshot_id>/`` and its entry in ``snapshots/manifest.json``. The output is
byte-for-byte deterministic: fixed seed, fixed creation time, sorted manifest, gzip without
timestamps. Records keep the real data.gouv.fr URLs; the twin rewrites them to its own
host when it serves them.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import os
import random
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from datagouv_eval_pipeline.base import project_files
from datagouv_eval_pipeline.base.text import fold
from datagouv_eval_pipeline.base.yaml_loading import safe_load
from datagouv_eval_pipeline.world.catalogue import catalogue_export, facts
from datagouv_eval_pipeline.world.snapshot_builder import synth

SNAPSHOT_ID = "twin-2026-06-12"
_DESCRIPTION_NOTES = {
    "paraphrased": "the facts of the catalogue entry, restated in our own words",
}
"""Provenance note per ``description_source`` of a real record (none: written for the twin)."""
# The twin's "now": when the snapshot's content is dated. Relative checks use it.
SNAPSHOT_CREATED_AT = datetime(2026, 6, 12, 6, 0, tzinfo=UTC)
SEED = 20260612
FORMAT_NAME = "datagouv-eval-twin-snapshot"
FORMAT_VERSION = 1
# Metrics API rows cover these months (36 months before the snapshot).
METRIC_MONTHS = synth._months(2023, 6, 2026, 5)

SOURCE_DIR = Path(__file__).resolve().parent / "source"
# Where the builder finds data.gouv.fr's catalogue export (facts only; see facts.py). Without
# it, the builder re-derives the catalogue from the snapshot's own columnar file.
CATALOGUE_FACTS_ENV = "DATAGOUV_EVAL_CATALOGUE_FACTS"
CATALOGUE_FACTS_NAME = "datagouv-catalog-2026-01-16.facts.csv.gz"
SITE = "https://www.data.gouv.fr/"
API = "https://www.data.gouv.fr/api/"
STATIC = "https://static.data.gouv.fr/"
# Size limits above which Hydra does not ingest a file into the Tabular API.
CSV_LIMIT = 100 * 1024 * 1024
XLSX_LIMIT = int(12.5 * 1024 * 1024)

MIME_TYPES: dict[str, str] = {
    "csv": "text/csv",
    "csv.gz": "application/gzip",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "xls": "application/vnd.ms-excel",
    "json": "application/json",
    "jsonl": "application/jsonl",
    "geojson": "application/geo+json",
    "zip": "application/zip",
    "7z": "application/x-7z-compressed",
    "pdf": "application/pdf",
    "parquet": "application/vnd.apache.parquet",
    "txt": "text/plain",
    "xsd": "application/xml",
    "xml": "application/xml",
    "html": "text/html",
}
OPEN_FORMATS = {"csv", "csv.gz", "json", "jsonl", "geojson", "xml", "txt", "parquet", "zip", "xsd"}


class SourceError(ValueError):
    """A source file is malformed; the message names the file and the record."""


# --------------------------------------------------------------------------------------------
# Helpers


def _iso(value: Any) -> str:
    """Normalise a YAML date/datetime/str to an ISO string with an explicit UTC offset."""
    when = _dt(value)
    return when.isoformat()


def _dt(value: Any) -> datetime:
    if isinstance(value, datetime):
        when = value
    elif isinstance(value, date):
        when = datetime(value.year, value.month, value.day, tzinfo=UTC)
    else:
        when = datetime.fromisoformat(str(value))
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC)


def slugify(text: str) -> str:
    """Return a data.gouv.fr-style slug (folded, hyphen-separated)."""
    return "-".join(p for p in re.split(r"[^a-z0-9]+", fold(text)) if p)


def object_id(created_at: datetime, key: str) -> str:
    """Return a MongoDB-style ObjectId: creation time, then 8 bytes of a hash of ``key``."""
    return f"{int(created_at.timestamp()):08x}{hashlib.sha256(key.encode()).hexdigest()[:16]}"


def resource_uuid(dataset_id: str, title: str) -> str:
    """Return a stable UUID4-shaped id for a resource without a real one."""
    digest = hashlib.sha256(f"{dataset_id}/{title}".encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


def _strip_markdown(text: str) -> str:
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[#*_`>|]|&#x20;|<br ?/?>", " ", text)
    return re.sub(r"\s+", " ", text).strip()


def description_short(description: str) -> str:
    """Return the first 200 characters of the plain-text description (udata's short form)."""
    plain = _strip_markdown(description)
    if len(plain) <= 200:
        return plain
    return plain[:200].rsplit(" ", 1)[0]


def _load_yaml(path: Path) -> list[dict[str, Any]]:
    data = safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise SourceError(f"{path}: expected a list of records at the top level")
    return data


def _require(record: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in record or record[key] is None:
        raise SourceError(f"{where}: missing required field {key!r}")
    return record[key]


# --------------------------------------------------------------------------------------------
# Assembly


@dataclass
class BuiltCatalog:
    """Everything the snapshot writer needs."""

    organizations: list[dict[str, Any]]
    datasets: list[dict[str, Any]]
    dataservices: list[dict[str, Any]]
    tables: dict[str, synth.GeneratedTable]
    downloads: dict[str, synth.GeneratedTable]
    metrics: dict[str, synth.GeneratedTable]
    crawler_exceptions: list[dict[str, Any]]
    specs: dict[str, tuple[str, bytes]]
    provenance: list[dict[str, Any]]
    catalogue_rows: list[dict[str, str]]
    catalogue_source: dict[str, Any]
    derived: dict[str, dict[str, Any]]


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


def _build_organizations(
    source: list[dict[str, Any]],
) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    by_key: dict[str, dict[str, Any]] = {}
    provenance = []
    for index, raw in enumerate(source):
        where = f"organizations.yaml[{index}]"
        key = _require(raw, "key", where)
        created = _dt(_require(raw, "created_at", where))
        slug = raw.get("slug") or slugify(raw["name"])
        org_id = raw.get("id") or object_id(created, f"org/{slug}")
        logo_hash = hashlib.sha1(org_id.encode()).hexdigest()[:32]
        record = {
            "id": org_id,
            "name": _require(raw, "name", where),
            "acronym": raw.get("acronym"),
            "slug": slug,
            "description": raw.get("description", ""),
            "url": raw.get("url"),
            "created_at": created.isoformat(),
            "last_modified": (created + timedelta(days=400)).isoformat()
            if created + timedelta(days=400) < SNAPSHOT_CREATED_AT
            else created.isoformat(),
            "deleted": None,
            "logo": f"{STATIC}avatars/{logo_hash[:2]}/{logo_hash}-original.png",
            "logo_thumbnail": f"{STATIC}avatars/{logo_hash[:2]}/{logo_hash}-100.png",
            "page": f"{SITE}organizations/{slug}/",
            "uri": f"{API}1/organizations/{org_id}/",
            "badges": [{"kind": kind} for kind in raw.get("badges", [])],
            "metrics": {},
            "business_number_id": raw.get("business_number_id"),
            "members": [],
            "extras": {},
            "_twin": {
                "provenance": raw["provenance"],
                "popularity": int(raw.get("popularity", 100)),
            },
        }
        if key in by_key:
            raise SourceError(f"{where}: duplicate organization key {key!r}")
        by_key[key] = record
        provenance.append(_prov("organization", org_id, raw["provenance"], name=record["name"]))
    return by_key, provenance


def _prov(kind: str, ident: str, provenance: str, **extra: Any) -> dict[str, Any]:
    if provenance not in ("real-metadata", "synthetic"):
        raise SourceError(f"{kind} {ident}: provenance must be real-metadata or synthetic")
    entry = {"type": kind, "id": ident, "provenance": provenance}
    entry.update({k: v for k, v in extra.items() if v is not None})
    return entry


def _filename(title: str, fmt: str) -> str:
    if "." in title and " " not in title:
        return title
    return f"{slugify(title)}.{fmt}"


def _build_resource(
    raw: Mapping[str, Any], dataset: Mapping[str, Any], where: str, exceptions: set[str]
) -> dict[str, Any]:
    title = _require(raw, "title", where)
    fmt = _require(raw, "format", where)
    rid = raw.get("id") or resource_uuid(dataset["id"], title)
    modified = _dt(raw.get("last_modified") or dataset["last_modified"])
    created = _dt(
        raw.get("created_at") or min(modified, _dt(dataset["created_at"]) + timedelta(hours=1))
    )
    url = raw.get("url") or (
        f"{STATIC}resources/{dataset['slug']}/{modified:%Y%m%d-%H%M%S}/{_filename(title, fmt)}"
    )
    mime = raw.get("mime") or MIME_TYPES.get(fmt, "application/octet-stream")
    filesize = int(raw.get("filesize", 0)) or None
    checksum = hashlib.sha1(f"{rid}:{modified.isoformat()}".encode()).hexdigest()
    tabular = raw.get("tabular")
    known = tabular in synth.GENERATORS or tabular == catalogue_export.GENERATOR
    if tabular is not None and not known:
        raise SourceError(f"{where}: unknown table generator {tabular!r}")
    sample = raw.get("download_sample")
    if sample is not None and sample not in synth.DOWNLOAD_GENERATORS:
        raise SourceError(f"{where}: unknown download sample generator {sample!r}")
    extras: dict[str, Any] = {
        "analysis:checksum": checksum,
        "analysis:last-modified-at": modified.isoformat(),
        "analysis:mime-type": mime,
    }
    if filesize is not None:
        extras["analysis:content-length"] = filesize
    if tabular:
        table_hash = hashlib.md5(rid.encode()).hexdigest()
        parsed = modified + timedelta(minutes=7)
        extras.update(
            {
                "analysis:parsing:started_at": (modified + timedelta(minutes=2)).isoformat(),
                "analysis:parsing:finished_at": parsed.isoformat(),
                "analysis:parsing:parsing_table": table_hash,
                "analysis:parsing:parquet_url": (
                    f"https://object.files.data.gouv.fr/hydra-parquet/hydra-parquet/{table_hash}.parquet"
                ),
            }
        )
    elif (
        filesize is not None
        and rid not in exceptions
        and ((fmt == "csv" and filesize > CSV_LIMIT) or (fmt == "xlsx" and filesize > XLSX_LIMIT))
    ):
        extras["analysis:error"] = "File too large to download"
    record = {
        "id": rid,
        "title": title,
        "description": raw.get("description"),
        "filetype": raw.get("filetype", "file"),
        "type": raw.get("type", "main"),
        "format": fmt,
        "url": url,
        "latest": f"{API}1/datasets/r/{rid}",
        "checksum": {"type": "sha1", "value": checksum},
        "filesize": filesize,
        "mime": mime,
        "created_at": created.isoformat(),
        "last_modified": modified.isoformat(),
        "metrics": {"views": 0},
        "extras": extras,
        "preview_url": f"https://explore.data.gouv.fr/fr/resources/{rid}" if tabular else None,
        "schema": None,
        "internal": {
            "created_at_internal": created.isoformat(),
            "last_modified_internal": modified.isoformat(),
        },
        "harvest": None,
        "_twin": {
            "tabular": tabular,
            "download_sample": sample,
            "sample_header": raw.get("sample_header"),
            "note": raw.get("note"),
            "crawler_exception": bool(raw.get("crawler_exception", False)),
            "description_source": raw.get("description_source"),
        },
    }
    return record


def _quality(record: Mapping[str, Any]) -> dict[str, Any]:
    resources = record["resources"]
    checks = {
        "all_resources_available": True,
        "dataset_description_quality": len(record["description"]) >= 128,
        "has_open_format": any(r["format"] in OPEN_FORMATS for r in resources),
        "has_resources": bool(resources),
        "license": record["license"] != "notspecified",
        "resources_documentation": any(
            r.get("description") or r["type"] == "documentation" for r in resources
        ),
        "spatial": bool(record.get("spatial")),
        "temporal_coverage": bool(record.get("temporal_coverage")),
        "update_frequency": record["frequency"] not in ("unknown", None),
        "update_fulfilled_in_time": record["archived"] is None,
    }
    score = round(sum(1 for v in checks.values() if v) / len(checks), 2)
    return {**checks, "score": score}


def _build_datasets(
    sources: Sequence[tuple[str, list[dict[str, Any]]]], orgs: Mapping[str, dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    records: list[dict[str, Any]] = []
    provenance: list[dict[str, Any]] = []
    seen: set[str] = set()
    exceptions = {
        r["id"]
        for _, items in sources
        for d in items
        for r in d.get("resources", [])
        if r.get("crawler_exception") and r.get("id")
    }
    for file_name, items in sources:
        for index, raw in enumerate(items):
            where = f"{file_name}[{index}]"
            title = _require(raw, "title", where)
            org_key = _require(raw, "org", where)
            if org_key not in orgs:
                raise SourceError(f"{where}: unknown organization key {org_key!r}")
            org = orgs[org_key]
            created = _dt(_require(raw, "created_at", where))
            modified = _dt(_require(raw, "last_modified", where))
            slug = raw.get("slug") or slugify(title)
            dataset_id = raw.get("id") or object_id(created, f"dataset/{slug}")
            prov = raw.get("provenance", "synthetic")
            description = raw.get("description", "") or ""
            record: dict[str, Any] = {
                "id": dataset_id,
                "title": title,
                "acronym": raw.get("acronym"),
                "slug": slug,
                "description": description,
                "description_short": raw.get("description_short") or description_short(description),
                "created_at": created.isoformat(),
                "last_modified": modified.isoformat(),
                "last_update": modified.isoformat(),
                "deleted": _iso(raw["deleted"]) if raw.get("deleted") else None,
                "archived": _iso(raw["archived"]) if raw.get("archived") else None,
                "featured": bool(raw.get("featured", False)),
                "private": False,
                "tags": list(raw.get("tags", [])),
                "badges": [{"kind": k} for k in raw.get("badges", [])],
                "resources": [],
                "community_resources": [],
                "frequency": raw.get("frequency", "unknown"),
                "frequency_date": None,
                "extras": {},
                "metrics": {},
                "organization": _org_ref(org),
                "owner": None,
                "temporal_coverage": raw.get("temporal_coverage"),
                "spatial": (
                    {
                        "granularity": raw["spatial"].get("granularity"),
                        "zones": list(raw["spatial"].get("zones", [])),
                        "geom": None,
                    }
                    if raw.get("spatial")
                    else None
                ),
                "license": raw.get("license", "lov2"),
                "uri": f"{API}1/datasets/{dataset_id}/",
                "page": f"{SITE}datasets/{slug}/",
                "quality": {},
                "internal": {
                    "created_at_internal": created.isoformat(),
                    "last_modified_internal": modified.isoformat(),
                },
                "harvest": None,
                "contact_points": [],
                **facts.DATASET_ACCESS_DEFAULTS,
                "_twin": {
                    "provenance": prov,
                    "organization_id": org["id"],
                    "popularity": int(raw.get("popularity", 100)),
                    "description_source": raw.get("description_source"),
                },
            }
            for r_index, raw_resource in enumerate(raw.get("resources", [])):
                record["resources"].append(
                    _build_resource(
                        raw_resource, record, f"{where}.resources[{r_index}]", exceptions
                    )
                )
            last = max([modified] + [_dt(r["last_modified"]) for r in record["resources"]])
            record["last_update"] = last.isoformat()
            record["quality"] = _quality(record)
            if dataset_id in seen or slug in seen:
                raise SourceError(f"{where}: duplicate dataset id or slug {dataset_id}/{slug}")
            seen.update({dataset_id, slug})
            records.append(record)
            provenance.append(
                _prov(
                    "dataset",
                    dataset_id,
                    prov,
                    title=title,
                    description=_DESCRIPTION_NOTES.get(raw.get("description_source") or ""),
                )
            )
            for resource in record["resources"]:
                real_id = any(r.get("id") == resource["id"] for r in raw.get("resources", []))
                provenance.append(
                    _prov(
                        "resource",
                        resource["id"],
                        "real-metadata" if real_id else "synthetic",
                        dataset_id=dataset_id,
                        title=resource["title"],
                        note=resource["_twin"]["note"],
                    )
                )
    return records, provenance


def _build_dataservices(
    source: list[dict[str, Any]],
    orgs: Mapping[str, dict[str, Any]],
    datasets: Sequence[Mapping[str, Any]],
) -> tuple[list[dict[str, Any]], dict[str, tuple[str, bytes]], list[dict[str, Any]]]:
    by_ref = {d["id"]: d for d in datasets} | {d["slug"]: d for d in datasets}
    records: list[dict[str, Any]] = []
    specs: dict[str, tuple[str, bytes]] = {}
    provenance: list[dict[str, Any]] = []
    for index, raw in enumerate(source):
        where = f"dataservices.yaml[{index}]"
        title = _require(raw, "title", where)
        org = orgs[_require(raw, "org", where)]
        created = _dt(_require(raw, "created_at", where))
        updated = _dt(raw.get("last_update") or created)
        slug = raw.get("slug") or slugify(title)
        ds_id = raw.get("id") or object_id(created, f"dataservice/{slug}")
        dataset_ids = []
        for ref in raw.get("datasets", []):
            if ref not in by_ref:
                raise SourceError(f"{where}: unknown dataset {ref!r} in 'datasets'")
            dataset_ids.append(by_ref[ref]["id"])
        spec_name = raw.get("spec")
        doc_url = raw.get("machine_documentation_url")
        if spec_name:
            if not doc_url:
                raise SourceError(f"{where}: a spec needs a machine_documentation_url")
            spec_path = SOURCE_DIR / "specs" / spec_name
            if not spec_path.is_file():
                raise SourceError(f"{where}: spec file {spec_path} does not exist")
            spec = safe_load(spec_path.read_text(encoding="utf-8"))
            fmt = raw.get("spec_format") or ("json" if doc_url.endswith(".json") else "yaml")
            if fmt == "json":
                content = json.dumps(spec, ensure_ascii=False, indent=2).encode("utf-8") + b"\n"
            else:
                content = spec_path.read_bytes()
            specs[ds_id] = (fmt, content)
            provenance.append(
                _prov("openapi_spec", ds_id, "synthetic", url=doc_url, note="written for the twin")
            )
        prov = raw.get("provenance", "synthetic")
        popularity = int(raw.get("popularity", 100))
        record = {
            "id": ds_id,
            "title": title,
            "acronym": raw.get("acronym"),
            "slug": slug,
            "description": raw.get("description", "") or "",
            "base_api_url": raw.get("base_api_url"),
            "machine_documentation_url": doc_url,
            "technical_documentation_url": raw.get("technical_documentation_url"),
            "business_documentation_url": raw.get("business_documentation_url"),
            "authorization_request_url": raw.get("authorization_request_url"),
            "availability": raw.get("availability"),
            "rate_limiting": raw.get("rate_limiting", ""),
            "rate_limiting_url": raw.get("rate_limiting_url"),
            "availability_url": raw.get("availability_url"),
            "access_type": raw.get("access_type", "open"),
            "access_audiences": [],
            "access_type_reason_category": None,
            "access_type_reason": None,
            "license": raw.get("license", "lov2"),
            "tags": list(raw.get("tags", [])),
            "private": False,
            "created_at": created.isoformat(),
            "last_update": updated.isoformat(),
            "metadata_modified_at": updated.isoformat(),
            "archived_at": _iso(raw["archived_at"]) if raw.get("archived_at") else None,
            "deleted_at": None,
            "format": "REST",
            "organization": _org_ref(org),
            "owner": None,
            "datasets": {
                "rel": "subsection",
                "href": f"{API}1/datasets/?dataservice={ds_id}",
                "type": "GET",
                "total": len(dataset_ids),
            },
            "self_api_url": f"{API}1/dataservices/{ds_id}/",
            "self_web_url": f"{SITE}dataservices/{slug}/",
            "extras": {},
            "harvest": None,
            "metrics": {"views": popularity * 11, "followers": popularity // 150},
            "contact_points": [],
            "featured": bool(raw.get("featured", False)),
            # udata's Permission fields, as an anonymous client sees them.
            "permissions": {"delete": False, "edit": False},
            "_twin": {
                "provenance": prov,
                "organization_id": org["id"],
                "dataset_ids": dataset_ids,
                "spec_format": specs[ds_id][0] if ds_id in specs else None,
                "popularity": popularity,
                "description_source": raw.get("description_source"),
            },
        }
        records.append(record)
        provenance.append(
            _prov(
                "dataservice",
                ds_id,
                prov,
                title=title,
                description=_DESCRIPTION_NOTES.get(raw.get("description_source") or ""),
            )
        )
    return records, specs, provenance


# --------------------------------------------------------------------------------------------
# Metrics


def _month_key(year: int, month: int) -> str:
    return f"{year}-{month:02d}"


# Monthly figures a task states (docs/tasks.md): (visits, downloads) of a dataset in a month.
PINNED_DATASET_METRICS: dict[tuple[str, str], tuple[int, int]] = {
    ("53699ebba3a729239d205f4f", "2026-05"): (3418, 1276),
}


def _split(total: int, weights: Mapping[str, float]) -> dict[str, int]:
    """Split ``total`` into integer shares proportional to ``weights`` (largest remainder)."""
    if not weights:
        return {}
    whole = sum(weights.values())
    raw = {k: total * w / whole for k, w in weights.items()}
    shares = {k: int(v) for k, v in raw.items()}
    left = total - sum(shares.values())
    for key in sorted(raw, key=lambda k: (-(raw[k] - shares[k]), k))[:left]:
        shares[key] += 1
    return shares


def _build_metrics(
    rng: random.Random,
    datasets: list[dict[str, Any]],
    organizations: list[dict[str, Any]],
    dataservices: list[dict[str, Any]],
) -> dict[str, synth.GeneratedTable]:
    ds_rows: list[list[str]] = []
    res_rows: list[list[str]] = []
    org_totals: dict[str, dict[str, list[int]]] = {}
    for record in sorted(datasets, key=lambda d: d["id"]):
        if record["deleted"]:
            continue
        created = _dt(record["created_at"])
        popularity = record["_twin"]["popularity"]
        org_id = record["_twin"]["organization_id"]
        months = [(y, m) for y, m in METRIC_MONTHS if (y, m) >= (created.year, created.month)]
        weights = {
            r["id"]: (3.0 if r["type"] == "main" else 0.3) * rng.uniform(0.5, 1.5)
            for r in record["resources"]
        }
        visits_total = downloads_total = 0
        res_totals = dict.fromkeys(weights, 0)
        for step, (year, month) in enumerate(months):
            season = 0.7 if month == 8 else 1.15 if month in (1, 9, 10) else 1.0
            trend = 1.0 + 0.01 * step if record["archived"] is None else max(0.2, 1.0 - 0.02 * step)
            visits = int(popularity / 12 * season * trend * rng.uniform(0.8, 1.2))
            downloads = int(visits * rng.uniform(0.3, 1.4)) if record["resources"] else 0
            missing = rng.random() < 0.015
            pinned = PINNED_DATASET_METRICS.get((record["id"], _month_key(year, month)))
            if pinned is not None:
                visits, downloads = pinned
                missing = False
            visits_total += visits
            downloads_total += downloads
            # A few months have no download figure, as in production.
            download_cell = "" if missing else str(downloads)
            ds_rows.append(
                [record["id"], org_id, _month_key(year, month), str(visits), download_cell]
            )
            per_org = org_totals.setdefault(org_id, {})
            bucket = per_org.setdefault(_month_key(year, month), [0, 0])
            bucket[0] += visits
            bucket[1] += downloads
            shares = _split(downloads, weights)
            for resource in record["resources"]:
                share = shares[resource["id"]]
                res_totals[resource["id"]] += share
                res_rows.append([resource["id"], record["id"], _month_key(year, month), str(share)])
        record["metrics"] = {
            "discussions": popularity // 4000,
            "followers": popularity // 300,
            "reuses": popularity // 2500,
            "views": visits_total,
            "resources_downloads": downloads_total,
        }
        for resource in record["resources"]:
            resource["metrics"] = {"views": res_totals[resource["id"]]}
    org_rows: list[list[str]] = []
    for org in sorted(organizations, key=lambda o: o["id"]):
        for key, (visits, downloads) in sorted(org_totals.get(org["id"], {}).items()):
            org_rows.append(
                [org["id"], key, str(visits), str(downloads), str(visits // 20), str(visits // 30)]
            )
    service_rows: list[list[str]] = []
    for service in sorted(dataservices, key=lambda s: s["id"]):
        created = _dt(service["created_at"])
        for year, month in METRIC_MONTHS:
            if (year, month) < (created.year, created.month):
                continue
            visits = int(service["_twin"]["popularity"] / 12 * rng.uniform(0.7, 1.3))
            service_rows.append([service["id"], _month_key(year, month), str(visits)])
    cols = synth._cols
    return {
        "datasets": synth.GeneratedTable(
            cols(
                [
                    ("dataset_id", "string"),
                    ("organization_id", "string"),
                    ("metric_month", "string"),
                    ("monthly_visit", "int"),
                    ("monthly_download_resource", "int"),
                ]
            ),
            ds_rows,
        ),
        "resources": synth.GeneratedTable(
            cols(
                [
                    ("resource_id", "string"),
                    ("dataset_id", "string"),
                    ("metric_month", "string"),
                    ("monthly_download_resource", "int"),
                ]
            ),
            res_rows,
        ),
        "organizations": synth.GeneratedTable(
            cols(
                [
                    ("organization_id", "string"),
                    ("metric_month", "string"),
                    ("monthly_visit_dataset", "int"),
                    ("monthly_download_resource", "int"),
                    ("monthly_visit_reuse", "int"),
                    ("monthly_visit_dataservice", "int"),
                ]
            ),
            org_rows,
        ),
        "dataservices": synth.GeneratedTable(
            cols(
                [("dataservice_id", "string"), ("metric_month", "string"), ("monthly_visit", "int")]
            ),
            service_rows,
        ),
    }


def _organization_metrics(
    organizations: list[dict[str, Any]],
    datasets: list[dict[str, Any]],
    dataservices: list[dict[str, Any]],
) -> None:
    for org in organizations:
        own = [
            d for d in datasets if d["_twin"]["organization_id"] == org["id"] and not d["deleted"]
        ]
        # udata counts the visible datasets (Dataset.objects.visible(): not archived either).
        visible = [d for d in own if not d["archived"]]
        services = [s for s in dataservices if s["_twin"]["organization_id"] == org["id"]]
        popularity = org["_twin"]["popularity"]
        org["metrics"] = {
            "datasets": len(visible),
            "dataservices": len(services),
            "followers": popularity // 20,
            "members": 2 + popularity // 1500,
            "reuses": sum(d["metrics"]["reuses"] for d in own),
            "views": sum(d["metrics"]["views"] for d in own) + popularity,
        }


def _crawler_exceptions(
    rng: random.Random, datasets: Iterable[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    for record in datasets:
        for resource in record["resources"]:
            if resource["_twin"]["crawler_exception"]:
                entries.append(
                    {
                        "resource_id": resource["id"],
                        "table_indexes": {},
                        "comment": f"Fichier volumineux : {record['title']}",
                    }
                )
    # The real list has thousands of entries; a few extra ids stand for resources outside the twin.
    for index in range(12):
        entries.append(
            {
                "resource_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                "table_indexes": {"code_commune": "index"} if index % 3 == 0 else {},
                "comment": "Fichier volumineux (hors du catalogue du jumeau)",
            }
        )
    entries.sort(key=lambda e: e["resource_id"])
    return [{"id": i, **e} for i, e in enumerate(entries, start=1)]


# --------------------------------------------------------------------------------------------
# The real catalogue (facts of data.gouv.fr's export)


def read_catalogue_export(path: Path) -> list[dict[str, str]]:
    """Read the platform's catalogue export (facts csv.gz) into rows keyed by facts.COLUMNS.

    Raises:
        SourceError: the file is missing, not gzip/CSV, or lacks a column (names which).
    """
    try:
        text = gzip.decompress(path.read_bytes()).decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise SourceError(f"{path}: cannot read the catalogue export: {error}") from error
    reader = csv.DictReader(io.StringIO(text))
    missing = [src for src in facts.COLUMNS.values() if src not in (reader.fieldnames or [])]
    if missing:
        raise SourceError(f"{path}: line 1: missing columns {missing}")
    rows = [{name: raw[src] or "" for name, src in facts.COLUMNS.items()} for raw in reader]
    for row in rows:
        # The export prints licence labels; the file keeps udata's licence ids.
        row["license"] = facts.LICENSE_IDS.get(row["license"], row["license"])
    rows.sort(key=lambda r: r["id"])
    return rows


def _previous_catalogue(snapshots_dir: Path, snapshot_id: str) -> list[dict[str, str]]:
    path = snapshots_dir / snapshot_id / facts.FILE_NAME
    if not path.is_file():
        raise SourceError(
            f"{path}: no catalogue file to re-derive from; give the export with "
            f"--catalogue-facts or ${CATALOGUE_FACTS_ENV} ({CATALOGUE_FACTS_NAME})"
        )
    try:
        columns = facts.decode(path.read_bytes(), str(path))
        names = list(facts.COLUMNS)
        values = [columns[name] for name in names]
    except facts.FactsError as error:
        raise SourceError(str(error)) from error
    return [dict(zip(names, row, strict=True)) for row in zip(*values, strict=True)]


def _catalogue_organizations(
    rows: Sequence[Mapping[str, str]], curated: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Return one organization record per publisher of the export not already curated.

    The export gives the id and the name; the slug, creation date and logo are derived
    (listed in ``_twin.generated``); badges are unknown, so none.
    """
    curated_ids = {o["id"] for o in curated.values()}
    slugs = {o["slug"] for o in curated.values()}
    names: dict[str, str] = {}
    first: dict[str, str] = {}
    live: dict[str, int] = {}
    reuses: dict[str, int] = {}
    for row in rows:
        org_id = row["organization_id"]
        if not org_id or org_id in curated_ids:
            continue
        names.setdefault(org_id, row["organization"])
        created = row["created_at"]
        if created and (org_id not in first or created < first[org_id]):
            first[org_id] = created
        if row["archived"] in ("", "False"):
            live[org_id] = live.get(org_id, 0) + 1
        reuses[org_id] = reuses.get(org_id, 0) + int(row["reuses"] or 0)
    records: list[dict[str, Any]] = []
    for org_id in sorted(names):
        base = slugify(names[org_id]) or org_id
        slug = base
        counter = 2
        while slug in slugs:
            slug = f"{base}-{counter}"
            counter += 1
        slugs.add(slug)
        founded = _dt(first.get(org_id) or "2013-12-01T00:00:00")
        logo_hash = hashlib.sha1(org_id.encode()).hexdigest()[:32]
        records.append(
            {
                "id": org_id,
                "name": names[org_id],
                "acronym": None,
                "slug": slug,
                "description": "",
                "url": None,
                "created_at": founded.isoformat(),
                "last_modified": founded.isoformat(),
                "deleted": None,
                "logo": f"{STATIC}avatars/{logo_hash[:2]}/{logo_hash}-original.png",
                "logo_thumbnail": f"{STATIC}avatars/{logo_hash[:2]}/{logo_hash}-100.png",
                "page": f"{SITE}organizations/{slug}/",
                "uri": f"{API}1/organizations/{org_id}/",
                "badges": [],
                "metrics": {
                    "datasets": live.get(org_id, 0),
                    "dataservices": 0,
                    "followers": 0,
                    "members": 0,
                    "reuses": reuses.get(org_id, 0),
                    "views": 0,
                },
                "business_number_id": None,
                "members": [],
                "extras": {},
                "_twin": {
                    "provenance": facts.PROVENANCE,
                    "popularity": 0,
                    "generated": ["slug", "created_at", "logo", "metrics"],
                },
            }
        )
    return records


def _catalogue_rows(
    rows: Sequence[Mapping[str, str]], datasets: Sequence[Mapping[str, Any]]
) -> list[dict[str, str]]:
    """Return the export's rows minus those a curated record replaces (same id or slug)."""
    taken = {d["id"] for d in datasets} | {d["slug"] for d in datasets}
    return [dict(r) for r in rows if r["id"] not in taken and r["slug"] not in taken]


def _export_schema(
    rows: Sequence[Mapping[str, str]], datasets: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """The tables.json entry of the datasets export, which the loader derives (no file)."""
    kept = [d for d in datasets if catalogue_export.published(d)]
    created = [r["created_at"] for r in rows] + [
        catalogue_export.naive_iso(d["created_at"]) for d in kept
    ]
    return {
        "derived": catalogue_export.DERIVATION,
        "separator": catalogue_export.SEPARATOR,
        "encoding": "utf-8",
        "rows": len(created),
        "columns": [
            {"name": c.name, "type": c.type, "format": c.format} for c in catalogue_export.COLUMNS
        ],
        "facts": {
            "rows": len(created),
            "rows_created_before_2012_06_28": sum(1 for c in created if c and c < "2012-06-28"),
        },
    }


def assemble(
    seed: int = SEED,
    catalogue: Sequence[Mapping[str, str]] = (),
    catalogue_source: Mapping[str, Any] | None = None,
) -> BuiltCatalog:
    """Assemble every record, table and file of the snapshot (in memory).

    Args:
        seed: Seed of every random generator.
        catalogue: The catalogue export's rows (:func:`read_catalogue_export`).
        catalogue_source: Name and sha256 of the export, recorded in the manifest.

    Raises:
        SourceError: a source record is malformed (the message names file and record).
    """
    org_map, provenance = _build_organizations(_load_yaml(SOURCE_DIR / "organizations.yaml"))
    organizations = list(org_map.values())
    dataset_sources = [
        (name, _load_yaml(SOURCE_DIR / name))
        for name in ("datasets_tasks.yaml", "datasets_other.yaml")
    ]
    datasets, dataset_prov = _build_datasets(dataset_sources, org_map)
    dataservices, specs, service_prov = _build_dataservices(
        _load_yaml(SOURCE_DIR / "dataservices.yaml"), org_map, datasets
    )
    metrics = _build_metrics(
        random.Random(f"{seed}:metrics"), datasets, organizations, dataservices
    )
    _organization_metrics(organizations, datasets, dataservices)
    view = synth.CatalogView(organizations, datasets, dataservices)
    catalogue_rows = _catalogue_rows(catalogue, datasets)
    catalogue_orgs = _catalogue_organizations(catalogue_rows, org_map)
    by_id = {o["id"]: o for o in organizations}
    for row in catalogue_rows:
        # A curated organization also publishes its datasets of the real catalogue.
        org = by_id.get(row["organization_id"])
        if org is not None and row["archived"] in ("", "False"):
            org["metrics"]["datasets"] += 1
    tables: dict[str, synth.GeneratedTable] = {}
    derived: dict[str, dict[str, Any]] = {}
    table_prov: list[dict[str, Any]] = []
    for record in datasets:
        for resource in record["resources"]:
            generator = resource["_twin"]["tabular"]
            if generator == catalogue_export.GENERATOR:
                derived[resource["id"]] = _export_schema(catalogue_rows, datasets)
                table_prov.append(
                    _prov(
                        "tabular_table",
                        resource["id"],
                        "real-metadata",
                        generator=catalogue_export.DERIVATION,
                        rows=derived[resource["id"]]["rows"],
                        note=(
                            "derived at load time: the real catalogue's facts and the "
                            "hand-made records, each with its own provenance"
                        ),
                    )
                )
            elif generator:
                rng = random.Random(f"{seed}:{generator}")
                tables[resource["id"]] = synth.GENERATORS[generator](rng, view)
                table_prov.append(
                    _prov(
                        "tabular_table",
                        resource["id"],
                        "synthetic",
                        generator=generator,
                        rows=len(tables[resource["id"]].rows),
                        note="real column names where known; synthetic values",
                    )
                )
    downloads: dict[str, synth.GeneratedTable] = {}
    for record in datasets:
        for resource in record["resources"]:
            sample = resource["_twin"]["download_sample"]
            if sample:
                rng = random.Random(f"{seed}:{sample}")
                downloads[resource["id"]] = synth.DOWNLOAD_GENERATORS[sample](rng, view)
                table_prov.append(
                    _prov(
                        "download_sample",
                        resource["id"],
                        "synthetic",
                        generator=sample,
                        rows=len(downloads[resource["id"]].rows),
                        note="served as the file's download; the real file is far larger",
                    )
                )
    exceptions = _crawler_exceptions(random.Random(f"{seed}:crawler"), datasets)
    return BuiltCatalog(
        organizations=organizations + catalogue_orgs,
        datasets=datasets,
        dataservices=dataservices,
        tables=tables,
        downloads=downloads,
        metrics=metrics,
        crawler_exceptions=exceptions,
        specs=specs,
        provenance=provenance + dataset_prov + service_prov + table_prov,
        catalogue_rows=catalogue_rows,
        catalogue_source=dict(catalogue_source or {}),
        derived=derived,
    )


# --------------------------------------------------------------------------------------------
# Writing


def _gzip(data: bytes) -> bytes:
    buffer = io.BytesIO()
    # mtime=0 and no file name keep the output byte-identical between builds.
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=9) as fh:
        fh.write(data)
    return buffer.getvalue()


def _jsonl(records: Iterable[Mapping[str, Any]]) -> bytes:
    lines = [json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in records]
    return ("\n".join(lines) + "\n").encode("utf-8")


def _csv_text(table: synth.GeneratedTable) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=table.separator, lineterminator="\n")
    writer.writerow([c.name for c in table.columns])
    writer.writerows(table.rows)
    return buffer.getvalue()


def _schema(table: synth.GeneratedTable, file_name: str) -> dict[str, Any]:
    return {
        "file": file_name,
        "separator": table.separator,
        "encoding": "utf-8",
        "rows": len(table.rows),
        "columns": [{"name": c.name, "type": c.type, "format": c.format} for c in table.columns],
        "facts": table.facts,
    }


def catalogue_source(
    snapshots_dir: Path, snapshot_id: str, export: Path | None
) -> tuple[list[dict[str, str]], dict[str, Any]]:
    """Return the catalogue rows and their origin: the export if given, else the snapshot's file.

    Rebuilding from the snapshot's own columnar file gives the same bytes, so the snapshot is
    reproducible without the export; the manifest keeps the export's name and sha256.

    Raises:
        SourceError: neither the export nor a previous catalogue file can be read.
    """
    if export is None and os.environ.get(CATALOGUE_FACTS_ENV):
        export = Path(os.environ[CATALOGUE_FACTS_ENV])
    if export is not None:
        given = {
            "name": export.name,
            "sha256": hashlib.sha256(export.read_bytes()).hexdigest() if export.is_file() else None,
        }
        return read_catalogue_export(export), given
    if not (snapshots_dir / snapshot_id / facts.FILE_NAME).is_file():
        # Writing elsewhere (a review copy, a test): derive from the repository's snapshot.
        snapshots_dir = project_files.snapshots_dir()
    manifest_path = snapshots_dir / "manifest.json"
    source: dict[str, Any] = {}
    if manifest_path.is_file():
        for entry in json.loads(manifest_path.read_text(encoding="utf-8")).get("snapshots", []):
            if entry.get("snapshot_id") == snapshot_id:
                source = dict(entry.get("catalogue", {}).get("source", {}))
    return _previous_catalogue(snapshots_dir, snapshot_id), source


def write_snapshot(
    snapshots_dir: Path,
    snapshot_id: str = SNAPSHOT_ID,
    seed: int = SEED,
    catalogue_export: Path | None = None,
) -> dict[str, Any]:
    """Build and write ``snapshots_dir/<snapshot_id>/`` and update ``snapshots_dir/manifest.json``.

    Args:
        snapshots_dir: The ``snapshots/`` directory (created if missing).
        snapshot_id: Name of the snapshot directory.
        seed: Seed of every random generator.
        catalogue_export: data.gouv.fr's catalogue export (facts csv.gz); default
            ``$DATAGOUV_EVAL_CATALOGUE_FACTS``, else the snapshot's own catalogue file.

    Returns:
        The manifest entry of the written snapshot.
    """
    rows, source = catalogue_source(snapshots_dir, snapshot_id, catalogue_export)
    built = assemble(seed, rows, source)
    files: dict[str, bytes] = {
        facts.FILE_NAME: _gzip(facts.encode(built.catalogue_rows)),
        "organizations.jsonl.gz": _gzip(_jsonl(built.organizations)),
        "datasets.jsonl.gz": _gzip(_jsonl(built.datasets)),
        "dataservices.jsonl.gz": _gzip(_jsonl(built.dataservices)),
        "crawler/resources-exceptions.json": (
            json.dumps(built.crawler_exceptions, ensure_ascii=False, indent=1) + "\n"
        ).encode("utf-8"),
    }
    schemas: dict[str, Any] = {"tabular": {}, "metrics": {}, "downloads": {}}
    for rid, table in sorted(built.tables.items()):
        name = f"tabular/{rid}.csv.gz"
        files[name] = _gzip(_csv_text(table).encode("utf-8"))
        schemas["tabular"][rid] = _schema(table, name)
    for rid, table in sorted(built.downloads.items()):
        name = f"downloads/{rid}.csv.gz"
        files[name] = _gzip(_csv_text(table).encode("utf-8"))
        schemas["downloads"][rid] = _schema(table, name)
    for model, table in sorted(built.metrics.items()):
        name = f"metrics/{model}.csv.gz"
        files[name] = _gzip(_csv_text(table).encode("utf-8"))
        schemas["metrics"][model] = _schema(table, name)
    for rid, schema in sorted(built.derived.items()):
        schemas["tabular"][rid] = schema
    files["tables.json"] = (json.dumps(schemas, ensure_ascii=False, indent=1) + "\n").encode()
    for ds_id, (fmt, content) in sorted(built.specs.items()):
        files[f"specs/{ds_id}.{fmt}"] = content

    target = snapshots_dir / snapshot_id
    if target.exists():
        for old in sorted(target.rglob("*"), reverse=True):
            if old.is_file():
                old.unlink()
    for name, content in files.items():
        path = target / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)

    row_provenance = {
        "organizations.jsonl.gz": "per-record",
        "datasets.jsonl.gz": "per-record",
        "dataservices.jsonl.gz": "per-record",
        "tables.json": "synthetic",
        "crawler/resources-exceptions.json": "synthetic",
        facts.FILE_NAME: facts.PROVENANCE,
    }
    live = sum(1 for r in built.catalogue_rows if r["archived"] in ("", "False"))
    # The datasets export (the only derived table) states the count task_0002 asks for.
    export_facts = {k: v for schema in built.derived.values() for k, v in schema["facts"].items()}
    entry = {
        "snapshot_id": snapshot_id,
        "created_at": SNAPSHOT_CREATED_AT.isoformat().replace("+00:00", "Z"),
        "generator": "datagouv_eval_pipeline.world.snapshot_builder.build",
        "seed": seed,
        "notes": (
            "real-metadata records carry the real data.gouv.fr ids, titles, organizations and "
            "formats; descriptions marked as paraphrased restate the facts of the catalogue text "
            "in our own words; "
            "synthetic records and every tabular, metrics and crawler row are generated."
        ),
        "counts": {
            "organizations": len(built.organizations),
            "datasets": len(built.datasets),
            "resources": sum(len(d["resources"]) for d in built.datasets),
            "dataservices": len(built.dataservices),
            "openapi_specs": len(built.specs),
            "tabular_tables": len(built.tables),
            "tabular_rows": sum(len(t.rows) for t in built.tables.values()),
            "metrics_rows": {m: len(t.rows) for m, t in sorted(built.metrics.items())},
            "crawler_exceptions": len(built.crawler_exceptions),
            "catalogue_datasets": len(built.catalogue_rows),
            "catalogue_datasets_live": live,
        },
        "catalogue": {
            "source": built.catalogue_source,
            "file": facts.FILE_NAME,
            "notes": (
                "every dataset of data.gouv.fr's catalogue export of 2026-01-16 except those a "
                "curated record replaces (same id or slug); facts only: no description, no "
                "resource objects. Organizations of the export not curated are built from their "
                "id and name; their slug, creation date, logo and metrics are derived."
            ),
        },
        "facts": {
            "catalogue_datasets_created_before_2012_06_28": export_facts.get(
                "rows_created_before_2012_06_28"
            ),
            "sports_equipment_rows_dep_code_32": synth.GERS_EQUIPMENTS,
            "housing_permits_comm_31557": synth.TOURNEFEUILLE_HOUSING_PERMITS,
            "nonres_permits_comm_31557": synth.TOURNEFEUILLE_NONRES_PERMITS,
            "municipal_councillors_31555": synth.TOULOUSE_COUNCILLORS,
            "municipal_councillors_31555_women": synth.TOULOUSE_COUNCILLORS_WOMEN,
            "dataset_metrics_pinned": {
                f"{ds}/{month}": {"monthly_visit": v, "monthly_download_resource": d}
                for (ds, month), (v, d) in sorted(PINNED_DATASET_METRICS.items())
            },
        },
        "files": {
            name: {
                "sha256": hashlib.sha256(content).hexdigest(),
                "bytes": len(content),
                "provenance": row_provenance.get(name, "synthetic"),
            }
            for name, content in sorted(files.items())
        },
        "records": sorted(built.provenance, key=lambda p: (p["type"], p["id"])),
    }
    manifest_path = snapshots_dir / "manifest.json"
    manifest: dict[str, Any] = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "current": snapshot_id,
        "snapshots": [],
    }
    if manifest_path.exists():
        previous = json.loads(manifest_path.read_text(encoding="utf-8"))
        manifest["snapshots"] = [
            s for s in previous.get("snapshots", []) if s.get("snapshot_id") != snapshot_id
        ]
    manifest["snapshots"].append(entry)
    manifest["snapshots"].sort(key=lambda s: s["snapshot_id"])
    manifest_path.write_text(
        json.dumps(manifest, ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
    )
    return entry


if __name__ == "__main__":  # pragma: no cover - thin entry point
    written = write_snapshot(project_files.snapshots_dir())
    print(f"wrote snapshot {written['snapshot_id']}: {json.dumps(written['counts'])}")
