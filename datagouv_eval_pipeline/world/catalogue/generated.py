"""Resources and quality of a catalogue dataset, generated from its export row.

The platform's export gives each dataset's resource count, main-resource count, distinct formats,
dates, download count and quality score, but no resource objects. The twin generates, on demand
and deterministically, as many resources as the row says, in its formats, and the full
``quality`` object udata computes, so a dataset outside the hand-written records is whole.

What is derived from facts: the number of resources, their formats (each listed format at least
once, in the export's order, then round-robin), their type (the first ``main_resources_count``
are ``main``), their dates (the dataset's creation and last modification), the production URLs
(``static.data.gouv.fr/resources/<slug>/<date>/<id>.<ext>``, ``/api/1/datasets/r/<id>``), the
download count (the dataset's, shared out), and the quality criteria the facts decide (licence,
spatial granularity, frequency, open format, resources). What is invented: titles (the dataset's
slug, numbered), sizes (a pseudo-random figure seeded by the id), and the quality criteria the
facts do not decide, set so that the criteria add up to the export's score.

Everything generated is marked: the dataset's ``extras["twin:generated"]`` lists the generated
fields, each generated resource carries ``extras["twin:generated"] = true``, and its file
downloads as a small placeholder that says so. A generated resource id is the dataset id
followed by the resource's position, laid out as a UUID, so it resolves without an index.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

GENERATED_KEY = "twin:generated"
DATASET_GENERATED_FIELDS = ("resources", "quality")
_STATIC = "https://static.data.gouv.fr/resources/"
_API = "https://www.data.gouv.fr/api/"
# udata core/dataset/constants.py CLOSED_FORMATS: a resource in one of these is not open.
CLOSED_FORMATS = frozenset({"pdf", "doc", "docx", "word", "xls", "excel", "xlsx"})
_MIMES = {
    "csv": "text/csv",
    "json": "application/json",
    "geojson": "application/geo+json",
    "xml": "application/xml",
    "pdf": "application/pdf",
    "zip": "application/zip",
    "xls": "application/vnd.ms-excel",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "ods": "application/vnd.oasis.opendocument.spreadsheet",
    "txt": "text/plain",
    "html": "text/html",
    "shp": "application/octet-stream",
    "parquet": "application/vnd.apache.parquet",
}


def resource_id(dataset_id: str, position: int) -> str:
    """The id of the generated resource at ``position`` of dataset ``dataset_id``."""
    digits = f"{dataset_id}{position:08x}"
    return f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"


def parse_resource_id(rid: str) -> tuple[str, int] | None:
    """``(dataset id, position)`` of a generated resource id, or None for another id."""
    digits = rid.replace("-", "")
    if len(rid) != 36 or len(digits) != 32 or rid[8] + rid[13] + rid[18] + rid[23] != "----":
        return None
    if any(c not in "0123456789abcdef" for c in digits):
        return None
    return digits[:24], int(digits[24:], 16)


def _seed(*parts: str) -> int:
    return int.from_bytes(hashlib.sha256(":".join(parts).encode()).digest()[:8], "big")


def _size(dataset_id: str, position: int, fmt: str) -> int:
    """A plausible size, seeded by the ids: 2 KB to 20 MB, log-uniform (documents smaller)."""
    fraction = _seed(dataset_id, str(position)) / 2**64
    low, high = (math.log(2_000), math.log(20_000_000))
    if fmt in ("pdf", "doc", "docx", "txt", "html"):
        high = math.log(2_000_000)
    return int(math.exp(low + fraction * (high - low)))


def _extension(fmt: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", fmt.strip(".").lower()).strip("-") or "bin"


def _stamp(iso: str) -> str:
    digits = "".join(c for c in iso[:19] if c.isdigit())
    return f"{digits[:8]}-{digits[8:14]}" if len(digits) >= 14 else "20260101-000000"


def resources(
    *,
    dataset_id: str,
    slug: str,
    formats: Sequence[str],
    count: int,
    main_count: int,
    created_at: str,
    last_modified: str,
    downloads: int,
) -> list[dict[str, Any]]:
    """The generated resources of a catalogue dataset (``count`` of them; see the module)."""
    out = []
    listed = [f.strip(".").lower() for f in formats if f.strip(".")]
    for position in range(count):
        fmt = listed[position % len(listed)] if listed else ""
        rid = resource_id(dataset_id, position)
        ext = _extension(fmt)
        out.append(
            {
                "id": rid,
                "title": f"{slug}-{position + 1}.{ext}" if count > 1 else f"{slug}.{ext}",
                "description": None,
                "filetype": "file",
                "type": "main" if position < max(main_count, 0) else "documentation",
                "format": fmt or None,
                "url": f"{_STATIC}{slug}/{_stamp(last_modified)}/{rid}.{ext}",
                "latest": f"{_API}1/datasets/r/{rid}",
                "checksum": None,
                "filesize": _size(dataset_id, position, fmt),
                "mime": _MIMES.get(fmt),
                "created_at": created_at,
                "last_modified": last_modified,
                "metrics": {"views": downloads // count if count else 0},
                "extras": {GENERATED_KEY: True},
                "preview_url": None,
                "schema": None,
                "internal": {
                    "created_at_internal": created_at,
                    "last_modified_internal": last_modified,
                },
                "harvest": None,
                "_twin": {"generated": True},
            }
        )
    return out


def quality(
    *,
    score: float | None,
    license_id: str,
    granularity: str,
    frequency: str,
    formats: Sequence[str],
    count: int,
    main_count: int,
) -> dict[str, Any]:
    """The ``quality`` object udata computes (``Dataset.compute_quality``) for a catalogue row.

    The criteria the facts decide are set from them; the others (temporal coverage, update in
    time, description, availability, documentation) are switched on in that order until the
    criteria add up to the export's score (9 criteria, score = criteria met / 9).
    """
    known: dict[str, bool] = {
        "license": bool(license_id),
        "spatial": bool(granularity),
        "update_frequency": frequency not in ("", "unknown"),
    }
    undecided = ["temporal_coverage", "update_fulfilled_in_time", "dataset_description_quality"]
    if count:
        listed = [f.strip(".").lower() for f in formats if f.strip(".")]
        known["has_open_format"] = any(f not in CLOSED_FORMATS for f in listed)
        undecided += ["all_resources_available"]
        if main_count < count:
            known["resources_documentation"] = True  # the generated documentation resources
        else:
            undecided += ["resources_documentation"]
    met = sum(known.values())
    wanted = round(score * 9) if score is not None else met
    result: dict[str, Any] = dict(known)
    for name in undecided:
        result[name] = met < wanted
        met += result[name]
    if count:
        result["has_resources"] = True
    ordered = (
        "all_resources_available",
        "dataset_description_quality",
        "has_open_format",
        "has_resources",
        "license",
        "resources_documentation",
        "spatial",
        "temporal_coverage",
        "update_frequency",
        "update_fulfilled_in_time",
    )
    out = {name: result[name] for name in ordered if name in result}
    out["score"] = score if score is not None else round(met / 9, 2)
    return out


def mark(record: Mapping[str, Any]) -> bool:
    """Whether a dataset or resource record is (partly) generated."""
    return GENERATED_KEY in (record.get("extras") or {})
