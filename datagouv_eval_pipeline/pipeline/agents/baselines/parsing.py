"""Reading tool results: numbered listings, ``Key: value`` lines, Tabular previews, metrics."""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from datagouv_eval_pipeline.base.text import fold_cached as fold
from datagouv_eval_pipeline.pipeline.agents.baselines.text import date_bound, place

HEX_ID = r"[0-9a-f]{24}"
"""A catalog object id (dataset, organization, dataservice)."""
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
"""A resource id."""


@dataclass(frozen=True)
class Listed:
    """One item of a numbered listing in a tool result."""

    title: str
    id: str | None
    url: str | None
    fields: Mapping[str, str] = field(default_factory=dict)


@lru_cache(maxsize=512)
def numbered_items(text: str) -> tuple[Listed, ...]:
    """Items of ``1. Title`` listings with indented ``Key: value`` lines (MCP result layout).

    Cached: a policy re-reads the same results at every step of a run.
    """
    items: list[Listed] = []
    blocks = re.split(r"(?m)^\s{0,2}(?=\d+\.\s)", text)
    for block in blocks:
        head = re.match(r"\d+\.\s+(.*)", block)
        if head is None:
            continue
        fields: dict[str, str] = {}
        for line in block.splitlines()[1:]:
            key, sep, value = line.strip().partition(": ")
            if sep and key and key not in fields:
                fields[key] = value.strip()
        item_id = fields.get("Resource ID") or fields.get("ID")
        url = fields.get("URL")
        if url is None:
            bare = re.search(r"(?m)^\s+(https?://\S+)\s*$", block)
            url = bare.group(1) if bare else None
        items.append(Listed(head.group(1).strip(), item_id, url, fields))
    return tuple(items)


def field_value(text: str, key: str) -> str | None:
    """The value of a ``Key: value`` line."""
    match = re.search(rf"(?m)^\s*{re.escape(key)}:\s*(.+?)\s*$", text)
    return match.group(1) if match else None


def total_rows(text: str) -> int | None:
    """``Total rows (Tabular API): N`` (or ``Total rows: N``) of a data result."""
    match = re.search(r"Total rows(?: \(Tabular API\))?:\s*([\d,\s]+)", text)
    if match is None:
        return None
    digits = re.sub(r"\D", "", match.group(1))
    return int(digits) if digits else None


def preview_rows(text: str) -> tuple[list[str], list[dict[str, str]]]:
    """(columns, rows) of a data result (``Columns:`` line and ``Row N:`` blocks)."""
    columns_line = field_value(text, "Columns")
    columns = [c.strip() for c in columns_line.split(", ")] if columns_line else []
    rows: list[dict[str, str]] = []
    current: dict[str, str] | None = None
    for line in text.splitlines():
        if re.match(r"\s*Row \d+:\s*$", line):
            current = {}
            rows.append(current)
        elif current is not None and line.startswith("  "):
            key, sep, value = line.strip().partition(": ")
            if sep:
                current[key] = value
        elif current is not None and not line.strip():
            current = None
    return columns, rows


@dataclass(frozen=True)
class DerivedFilter:
    """A Tabular filter derived from the question and a preview of the data."""

    column: str
    operator: str
    value: str

    def describe(self) -> str:
        """``column operator value`` in words."""
        return f"{self.column} {self.operator} {self.value}"


def derive_filter(
    question: str, columns: Sequence[str], rows: Sequence[Mapping[str, Any]]
) -> DerivedFilter | None:
    """A filter for the question on a table, or None when none can be derived.

    A place (``à Lyon``, ``du Cantal``) filters the commune or department name column, in the
    case the preview shows; otherwise a date bound (``depuis le 3 mars 2019``) filters a date
    column (the creation date first when the question is about publication).
    """
    sample = rows[0] if rows else {}
    where = place(question)
    if where is not None:
        pattern = (
            r"dep.*(nom|lib)|(nom|lib).*dep"
            if where.department
            else (r"commune|ville|localite|municipal")
        )
        for column in columns:
            folded = fold(column)
            if not re.search(pattern, folded) or re.search(r"code|cp\b|insee", folded):
                continue
            value = str(sample.get(column, ""))
            if value and re.fullmatch(r"[\d\s.,-]+", value):
                continue
            name = where.name.upper() if value and value.isupper() else where.name
            return DerivedFilter(column, "exact", name)
    bound = date_bound(question)
    if bound is not None:
        dated = [c for c in columns if re.match(r"\d{4}-\d{2}-\d{2}", str(sample.get(c, "")))] or [
            c for c in columns if re.search(r"date|_at$|created|modified", fold(c))
        ]
        if bound.creation:
            dated.sort(key=lambda c: 0 if re.search(r"creat|publi", fold(c)) else 1)
        if dated:
            return DerivedFilter(dated[0], bound.operator, bound.value)
    return None


def metrics_line(text: str, month: str | None) -> str | None:
    """``visits, downloads`` of a month in a ``get_metrics`` table (latest month if None).

    Columns are separated by ``|`` or, in the releases that align them, by runs of spaces.
    """
    for line in text.splitlines():
        separator = r"\|" if "|" in line else r"\s{2,}"
        cells = [cell.strip() for cell in re.split(separator, line.strip())]
        is_month = len(cells) >= 3 and re.fullmatch(r"\d{4}-\d{2}", cells[0])
        if is_month and (month is None or cells[0] == month):
            visits = re.sub(r"\D", "", cells[1])
            downloads = re.sub(r"\D", "", cells[2])
            return f"{cells[0]} : {visits} visites et {downloads} téléchargements"
    return None


def pipe_rows(text: str) -> list[list[str]]:
    """Cells of the ``a | b | c`` lines a program printed (stderr and notes left out)."""
    return [
        [cell.strip() for cell in line.split(" | ")]
        for line in text.splitlines()
        if " | " in line and not line.startswith("[")
    ]


def tabular_preview(text: str) -> tuple[str | None, list[str], list[dict[str, Any]]]:
    """(resource id, columns, rows) of a ``resource <id> total N`` probe and its printed rows."""
    found = re.search(rf"resource ({UUID}) total \d+", text)
    if found is None:
        return None, [], []
    rows: list[dict[str, Any]] = []
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                row = ast.literal_eval(line)
            except (ValueError, SyntaxError):
                continue
            if isinstance(row, dict):
                rows.append({k: v for k, v in row.items() if k != "__id"})
    columns = list(rows[0]) if rows else []
    return found.group(1), columns, rows


_ENDPOINT = re.compile(r"^\s+(GET|POST|PUT|PATCH|DELETE|HEAD)\s+(/\S*)\s*$")
_PARAMETER = re.compile(r"^\s+-\s+(\S+)\s+\[(\w*),")


def spec_endpoints(text: str, limit: int = 8) -> list[str]:
    """The endpoints an OpenAPI summary lists, as example requests (``GET /path?param=…``).

    Reads the ``METHOD /path`` lines of a ``get_dataservice_openapi_spec`` result and the
    ``- name [query, …]`` parameter lines under each; path parameters stay in the path
    (``/siren/{siren}``). At most ``limit`` endpoints, in the spec's order.
    """
    endpoints: list[tuple[str, str, list[str]]] = []
    for line in text.splitlines():
        endpoint = _ENDPOINT.match(line)
        if endpoint is not None:
            endpoints.append((endpoint.group(1), endpoint.group(2), []))
            continue
        parameter = _PARAMETER.match(line)
        if parameter is not None and endpoints and parameter.group(2) == "query":
            endpoints[-1][2].append(parameter.group(1))
    return [
        f"{method} {path}" + ("?" + "&".join(f"{name}=…" for name in names) if names else "")
        for method, path, names in endpoints[:limit]
    ]
