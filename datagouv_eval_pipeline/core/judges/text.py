"""Hashing helpers of the judges (folding and canonical JSON come from ``base.text``)."""

from __future__ import annotations

import hashlib


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
