"""Small formatting helpers shared by the emulated tools (reference §1.4 text layouts)."""

from __future__ import annotations

from typing import Any, Final

from datagouv_eval_pipeline.base.vocabulary import MCP_FILTER_OPERATORS

# search_* stop words (reference §1.4): whole tokens, compared case-insensitively. The real
# list also holds two-word entries, which can never match a single token, so they are omitted.
STOP_WORDS: Final = frozenset(
    {
        "données",
        "donnee",
        "donnees",
        "fichier",
        "fichiers",
        "tableau",
        "tableaux",
        "csv",
        "excel",
        "xlsx",
        "json",
        "xml",
    }
)

# The release lists them in alphabetical order (its error message says so).
FILTER_OPERATORS: Final = tuple(sorted(MCP_FILTER_OPERATORS))
SORT_DIRECTIONS: Final = ("asc", "desc")


def clean_query(query: str) -> str:
    """Drop stop-word tokens from a search query (whitespace tokens, case-insensitive)."""
    return " ".join(token for token in query.split() if token.lower() not in STOP_WORDS)


def human_size(size: int) -> str:
    """Format a byte count in B, KB, MB or GB (base 1024, one decimal above bytes)."""
    if size < 1024:
        return f"{size} B"
    value = float(size)
    for unit in ("KB", "MB", "GB"):
        value /= 1024
        if value < 1024 or unit == "GB":
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable")


def org_name(record: dict[str, Any]) -> str | None:
    """Return ``organization.name`` of a dataset or dataservice payload, if any."""
    org = record.get("organization")
    if isinstance(org, dict):
        name = org.get("name")
        return str(name) if name else None
    return None


def string_tags(record: dict[str, Any]) -> list[str]:
    """Return the tags as strings (udata sends a plain list of strings)."""
    tags = record.get("tags") or []
    return [str(t) for t in tags]
