"""Small text helpers shared by the judges: folding, hashing and canonical JSON."""

from __future__ import annotations

import hashlib
import json
import unicodedata
from typing import Any

_APOSTROPHES = str.maketrans({"\u2019": "'", "\u02bc": "'", "\u00a0": " ", "\u202f": " "})


def fold(text: str) -> str:
    """Lower-case, accent-free, single-spaced text (how keywords are compared)."""
    decomposed = unicodedata.normalize("NFKD", text.translate(_APOSTROPHES))
    ascii_text = decomposed.encode("ascii", "ignore").decode("ascii")
    return " ".join(ascii_text.lower().split())


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: equal values give equal text."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def sha256_hex(*parts: str) -> str:
    """sha256 of the parts joined by a NUL byte (no part can forge a boundary)."""
    digest = hashlib.sha256()
    for index, part in enumerate(parts):
        if index:
            digest.update(b"\x00")
        digest.update(part.encode("utf-8"))
    return digest.hexdigest()


def short_hash(*parts: str) -> str:
    """The first 16 hex digits of :func:`sha256_hex` (what verdicts record)."""
    return sha256_hex(*parts)[:16]
