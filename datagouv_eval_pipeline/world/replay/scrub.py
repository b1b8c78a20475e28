"""Keep credentials out of cassettes: drop secret headers, redact key-looking strings.

Two layers, because one is not enough:

* headers whose *name* says they carry a credential are dropped (``authorization``,
  ``api-key``, anything containing ``key``, ``token``, ``secret``, ``auth``, ``cookie``,
  ``session`` or ``password``);
* every string that is stored (headers kept, request and response bodies) has the exact
  credential values seen on the request replaced, then anything shaped like a known key
  format (``sk-…``, ``Bearer …``, ``hf_…``, ``ghp_…``, ``AIza…``, ``xox…-…``) redacted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "<redacted>"

_SECRET_HEADER_PARTS = ("key", "token", "secret", "auth", "cookie", "session", "password")
# Transport headers that mean nothing once stored, or would be wrong when replayed.
_TRANSPORT_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "connection",
        "keep-alive",
        "transfer-encoding",
        "accept-encoding",
        "content-encoding",
        "te",
        "upgrade",
    }
)

_KEY_PATTERNS = (
    re.compile(r"\bBearer\s+[A-Za-z0-9._~+/=-]{8,}", re.IGNORECASE),
    re.compile(r"\bsk-[A-Za-z0-9_-]{6,}"),
    re.compile(r"\bhf_[A-Za-z0-9]{16,}"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"),
    re.compile(r"\bAIza[0-9A-Za-z_-]{20,}"),
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
)

_MIN_SECRET_LENGTH = 6


def is_secret_header(name: str) -> bool:
    """Whether a header, by its name, may carry a credential."""
    lowered = name.lower()
    return any(part in lowered for part in _SECRET_HEADER_PARTS)


def secret_values(headers: Mapping[str, str]) -> list[str]:
    """The credential values carried by secret headers (``Bearer`` stripped), longest first."""
    values: set[str] = set()
    for name, value in headers.items():
        if not is_secret_header(name):
            continue
        value = value.strip()
        if value.lower().startswith("bearer "):
            value = value[7:].strip()
        if len(value) >= _MIN_SECRET_LENGTH:
            values.add(value)
    return sorted(values, key=len, reverse=True)


def scrub_text(text: str, secrets: Iterable[str] = ()) -> str:
    """Replace the given secret values and anything key-shaped in ``text`` by ``<redacted>``."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
    for pattern in _KEY_PATTERNS:
        text = pattern.sub(REDACTED, text)
    return text


def scrub_json(value: Any, secrets: Iterable[str] = ()) -> Any:
    """Return a copy of a JSON value with every string (keys too) passed through scrub_text."""
    secrets = tuple(secrets)
    if isinstance(value, str):
        return scrub_text(value, secrets)
    if isinstance(value, Mapping):
        return {scrub_text(str(k), secrets): scrub_json(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub_json(item, secrets) for item in value]
    return value


def scrub_headers(headers: Mapping[str, str], secrets: Iterable[str] = ()) -> dict[str, str]:
    """Headers fit to store: secret and transport headers dropped, names lowercased, sorted."""
    secrets = tuple(secrets)
    kept: dict[str, str] = {}
    for name, value in headers.items():
        lowered = name.lower()
        if is_secret_header(lowered) or lowered in _TRANSPORT_HEADERS:
            continue
        kept[lowered] = scrub_text(value, secrets)
    return dict(sorted(kept.items()))


def find_secrets(text: str) -> list[str]:
    """Key-shaped substrings of ``text`` (for checking a cassette before committing it)."""
    found: list[str] = []
    for pattern in _KEY_PATTERNS:
        found.extend(match.group(0) for match in pattern.finditer(text))
    return found
