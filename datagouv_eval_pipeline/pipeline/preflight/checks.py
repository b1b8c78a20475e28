"""The pre-flight checks: each reads the catalog over HTTP and returns a verdict with a diff.

Every check only uses the public APIs (main API v1, the ``datasets/r/`` download route and the
Tabular API) through the base URLs of a
:class:`~datagouv_eval_pipeline.world.catalogue.urls.TwinUrls`, so
the same code validates the twin and the live platform. A check never raises for a catalog or
network problem: it returns a ``failed`` (drift) or ``error`` (could not check) verdict whose
reason names the request and its answer.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import quote

from datagouv_eval_pipeline.core.tasks import (
    CheckFn,
    ExpectedValue,
    ExpectedValuesParams,
    Recompute,
    Reference,
    RowCountParams,
    SchemaParams,
    SourceType,
    TaskSpec,
    UpdateDateParams,
    parse_when,
)
from datagouv_eval_pipeline.pipeline.preflight.baselines import (
    REFRESH_HINT,
    Baseline,
    BaselineField,
    diff_columns,
)
from datagouv_eval_pipeline.pipeline.preflight.http import (
    HEAD_REFUSED,
    Fetched,
    Fetcher,
    with_query,
)
from datagouv_eval_pipeline.pipeline.preflight.models import DiffEntry, Outcome
from datagouv_eval_pipeline.world.catalogue import TwinUrls


@dataclass(frozen=True)
class Target:
    """The catalog object a check looks at."""

    type: SourceType
    id: str
    dataset_id: str | None = None

    @property
    def label(self) -> str:
        """Return ``type id`` for messages."""
        return f"{self.type.value} {self.id}"


@dataclass(frozen=True)
class Context:
    """What every check of a run shares."""

    fetcher: Fetcher
    urls: TwinUrls
    now: datetime
    page_size: int
    max_rows: int
    source: str = ""
    """What is validated (``twin <snapshot>`` or the live host), for the references' source."""


@dataclass(frozen=True)
class PreflightVerdict:
    """The outcome of one check, before it is placed in the report."""

    outcome: Outcome
    reason: str
    diffs: tuple[DiffEntry, ...] = ()
    references: tuple[Reference, ...] = ()
    """Expected values recomputed by the check (``expected_values_hold``)."""


@dataclass(frozen=True)
class CheckInput:
    """Everything one check needs besides the shared context."""

    fn: CheckFn
    target: Target
    params: Any
    spec: TaskSpec
    baseline: Baseline | None = None
    baseline_fields: frozenset[BaselineField] = field(default_factory=frozenset)


class Unavailable(Exception):
    """A value could not be read from the catalog; the message says which request failed."""


# ----------------------------------------------------------------------------- catalog reads


def _q(ident: str) -> str:
    return quote(ident, safe="")


def metadata_url(urls: TwinUrls, target: Target) -> str:
    """Return the main-API v1 URL of an object (the endpoints of the original validator)."""
    api = urls.datagouv_api
    if target.type == SourceType.DATASET:
        return f"{api}1/datasets/{_q(target.id)}/"
    if target.type == SourceType.RESOURCE:
        if not target.dataset_id:
            raise Unavailable(f"resource {target.id} has no dataset_id to look it up with")
        return f"{api}1/datasets/{_q(target.dataset_id)}/resources/{_q(target.id)}/"
    if target.type == SourceType.DATASERVICE:
        return f"{api}1/dataservices/{_q(target.id)}/"
    return f"{api}1/organizations/{_q(target.id)}/"


def tabular_url(urls: TwinUrls, resource_id: str, suffix: str = "") -> str:
    """Return a Tabular API URL of a resource (``suffix`` is ``profile/``, ``data/`` or empty)."""
    return f"{urls.tabular_api}resources/{_q(resource_id)}/{suffix}"


def _api_error(fetched: Fetched) -> str:
    """Return the request and, when present, the API's own error text."""
    body = fetched.body
    detail = ""
    if isinstance(body, dict):
        if isinstance(body.get("message"), str):
            detail = body["message"]
        elif isinstance(body.get("errors"), list) and body["errors"]:
            first = body["errors"][0]
            if isinstance(first, dict):
                inner = first.get("detail")
                if isinstance(inner, dict):
                    inner = inner.get("message")
                detail = f"{first.get('title')}: {inner}"
    elif fetched.text and fetched.status is not None:
        detail = fetched.text.strip().splitlines()[0] if fetched.text.strip() else ""
    return f"{fetched.describe()}: {detail}" if detail else fetched.describe()


async def read_metadata(ctx: Context, target: Target) -> dict[str, Any]:
    """GET an object's v1 record.

    Raises:
        Unavailable: no response, a non-2xx status or a body that is not a JSON object.
    """
    fetched = await ctx.fetcher.get(metadata_url(ctx.urls, target))
    if not fetched.ok:
        what = {404: "not found", 410: "deleted"}.get(fetched.status or 0, "unreadable")
        raise Unavailable(f"{target.label} {what} ({_api_error(fetched)})")
    if not isinstance(fetched.body, dict):
        raise Unavailable(f"{target.label}: {fetched.describe()} did not return a JSON object")
    return fetched.body


def title_and_description(record: dict[str, Any]) -> tuple[str, str]:
    """Return ``(title or name, description)`` as the original validator snapshotted them."""
    title = record.get("title") or record.get("name") or ""
    return str(title), str(record.get("description") or "")


async def read_columns(ctx: Context, resource_id: str) -> list[dict[str, str]]:
    """Return the Tabular profile's columns ``[{"name", "type"}]`` in header order.

    Raises:
        Unavailable: the resource has no profile (not in the Tabular API) or it is malformed.
    """
    fetched = await ctx.fetcher.get(tabular_url(ctx.urls, resource_id, "profile/"))
    if not fetched.ok:
        raise Unavailable(f"no Tabular profile for resource {resource_id} ({_api_error(fetched)})")
    profile = fetched.body.get("profile") if isinstance(fetched.body, dict) else None
    columns = profile.get("columns") if isinstance(profile, dict) else None
    if not isinstance(profile, dict) or not isinstance(columns, dict):
        raise Unavailable(f"{fetched.describe()}: the profile has no 'columns' mapping")
    # The MCP server strips quotes around header names; do the same so both agree.
    header = [str(h).strip('"') for h in profile.get("header") or columns]
    ordered = header + [name for name in columns if name not in header]
    return [
        {"name": name, "type": str((columns.get(name) or {}).get("python_type", "unknown"))}
        for name in ordered
        if name in columns
    ]


async def read_total(ctx: Context, resource_id: str, filters: Sequence[tuple[str, str]]) -> int:
    """Return ``meta.total`` of a Tabular data query (one row requested).

    Raises:
        Unavailable: the query fails or the answer has no integer ``meta.total``.
    """
    url = with_query(tabular_url(ctx.urls, resource_id, "data/"), [*filters, ("page_size", "1")])
    fetched = await ctx.fetcher.get(url)
    if not fetched.ok:
        raise Unavailable(_api_error(fetched))
    meta = fetched.body.get("meta") if isinstance(fetched.body, dict) else None
    total = meta.get("total") if isinstance(meta, dict) else None
    if not isinstance(total, int) or isinstance(total, bool):
        raise Unavailable(f"{fetched.describe()}: no integer meta.total in the answer")
    return total


async def read_column_values(
    ctx: Context, resource_id: str, filters: Sequence[tuple[str, str]], column: str
) -> list[Any]:
    """Page through the matching rows and return one column's values (NULLs included).

    Raises:
        Unavailable: a page fails, or more rows match than ``ctx.max_rows``.
    """
    base = tabular_url(ctx.urls, resource_id, "data/")
    values: list[Any] = []
    page, total = 1, None
    while total is None or len(values) < total:
        query = [*filters, ("columns", column), ("page_size", str(ctx.page_size))]
        fetched = await ctx.fetcher.get(with_query(base, [*query, ("page", str(page))]))
        if not fetched.ok:
            raise Unavailable(_api_error(fetched))
        body = fetched.body if isinstance(fetched.body, dict) else {}
        rows, meta = body.get("data"), body.get("meta")
        if not isinstance(rows, list) or not isinstance(meta, dict):
            raise Unavailable(f"{fetched.describe()}: no 'data' list and 'meta' object")
        if total is None:
            total = int(meta.get("total") or 0)
            if total > ctx.max_rows:
                raise Unavailable(
                    f"{total} rows match: more than the {ctx.max_rows} the validator pages "
                    "through (raise max_rows)"
                )
        if not rows:
            break
        for row in rows:
            if not isinstance(row, dict) or column not in row:
                raise Unavailable(f"{fetched.describe()}: a row has no column {column!r}")
            values.append(row[column])
        page += 1
    return values


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


async def recompute(ctx: Context, spec: Recompute) -> float | None:
    """Recompute an expected value through the Tabular API, as a careful agent would.

    Filters become ``column__operator=value``; ``count`` reads ``meta.total``; the other
    aggregates page through the matching rows of the aggregated column and ignore NULLs
    (SQL semantics).

    Returns:
        The value, or ``None`` when the aggregate is NULL (no non-NULL value matched).

    Raises:
        Unavailable: a request failed, or the column is not numeric for sum/avg/min/max.
    """
    filters = [(f"{f.column}__{f.operator}", str(f.value)) for f in spec.filters]
    if spec.aggregate == "count":
        return float(await read_total(ctx, spec.resource_id, filters))
    assert spec.column is not None  # Recompute requires a column for every other aggregate
    values = [
        v
        for v in await read_column_values(ctx, spec.resource_id, filters, spec.column)
        if v is not None
    ]
    if spec.aggregate == "count_distinct":
        return float(len({repr(v) for v in values}))
    numbers = [_number(v) for v in values]
    if any(n is None for n in numbers):
        raise Unavailable(f"column {spec.column!r} is not numeric: cannot {spec.aggregate} it")
    present = [n for n in numbers if n is not None]
    if not present:
        return None
    if spec.aggregate == "sum":
        return math.fsum(present)
    if spec.aggregate == "avg":
        return math.fsum(present) / len(present)
    return min(present) if spec.aggregate == "min" else max(present)


async def capture(ctx: Context, target: Target, fields: frozenset[BaselineField]) -> dict[str, Any]:
    """Read the current values of baseline fields (for a refresh).

    Raises:
        Unavailable: a value could not be read.
    """
    captured: dict[str, Any] = {}
    if {"title", "description"} & fields:
        title, description = title_and_description(await read_metadata(ctx, target))
        captured.update(title=title, description=description)
    if "columns" in fields:
        captured["columns"] = await read_columns(ctx, target.id)
    if "row_count" in fields:
        captured["row_count"] = await read_total(ctx, target.id, [])
    return {
        k: captured[k] for k in ("title", "description", "columns", "row_count") if k in captured
    }


# ----------------------------------------------------------------------------- the checks


def _need_baseline(check: CheckInput, *names: BaselineField) -> Baseline | PreflightVerdict:
    """Return the baseline, or an error verdict when it (or one of its fields) is missing."""
    baseline = check.baseline
    if baseline is None:
        return PreflightVerdict(
            "error",
            f"no baseline for {check.spec.task_id} {check.target.label}; {REFRESH_HINT}",
        )
    missing = [n for n in names if getattr(baseline, n) is None]
    if missing:
        return PreflightVerdict(
            "error",
            f"the baseline of {check.spec.task_id} {check.target.label} has no "
            f"{', '.join(missing)}; {REFRESH_HINT}",
        )
    return baseline


async def same_title_description(ctx: Context, check: CheckInput) -> PreflightVerdict:
    """The title and the description equal the baseline's (exact text)."""
    baseline = _need_baseline(check, "title", "description")
    if isinstance(baseline, PreflightVerdict):
        return baseline
    try:
        title, description = title_and_description(await read_metadata(ctx, check.target))
    except Unavailable as error:
        return PreflightVerdict("failed", str(error))
    diffs = [
        DiffEntry(field=name, baseline=before, current=after)
        for name, before, after in (
            ("title", baseline.title, title),
            ("description", baseline.description, description),
        )
        if before != after
    ]
    if diffs:
        changed = " and ".join(d.field for d in diffs)
        verb = "differs" if len(diffs) == 1 else "differ"
        return PreflightVerdict("failed", f"{changed} {verb} from the baseline", tuple(diffs))
    return PreflightVerdict("passed", "title and description match the baseline")


async def download_url_reachable(ctx: Context, check: CheckInput) -> PreflightVerdict:
    """The stable download URL ``datasets/r/{rid}`` answers 2xx after redirects."""
    url = f"{ctx.urls.datagouv_api}1/datasets/r/{_q(check.target.id)}"
    fetched = await ctx.fetcher.head(url)
    if fetched.status in HEAD_REFUSED:
        fetched = await ctx.fetcher.get(url, follow=True)
    if fetched.ok:
        return PreflightVerdict("passed", fetched.describe())
    diff = DiffEntry(
        field="download", baseline="reachable", current=f"HTTP {fetched.status or fetched.error}"
    )
    return PreflightVerdict("failed", f"download URL not reachable: {_api_error(fetched)}", (diff,))


async def _tabular_status(ctx: Context, resource_id: str) -> Fetched:
    return await ctx.fetcher.get(tabular_url(ctx.urls, resource_id))


async def tabular_api_available(ctx: Context, check: CheckInput) -> PreflightVerdict:
    """The resource is served by the Tabular API (its ``resources/{rid}/`` answers 2xx)."""
    fetched = await _tabular_status(ctx, check.target.id)
    if fetched.ok:
        return PreflightVerdict("passed", fetched.describe())
    current = f"HTTP {fetched.status}" if fetched.status is not None else fetched.error
    diff = DiffEntry(field="tabular_api", baseline="available", current=current)
    return PreflightVerdict(
        "failed", f"not available in the Tabular API: {_api_error(fetched)}", (diff,)
    )


async def tabular_api_unavailable(ctx: Context, check: CheckInput) -> PreflightVerdict:
    """The resource is not in the Tabular API (404/410), as a download-only task assumes."""
    fetched = await _tabular_status(ctx, check.target.id)
    if fetched.status in (404, 410):
        return PreflightVerdict(
            "passed", f"not in the Tabular API, as expected ({fetched.describe()})"
        )
    if fetched.ok:
        diff = DiffEntry(field="tabular_api", baseline="unavailable", current="available")
        return PreflightVerdict(
            "failed",
            f"the resource is now in the Tabular API ({fetched.describe()}): the task assumes "
            "it must be downloaded",
            (diff,),
        )
    return PreflightVerdict(
        "failed", f"could not tell whether it is in the Tabular API: {_api_error(fetched)}"
    )


def _modified(record: dict[str, Any], name: str) -> Any:
    if name == "last_update":
        return record.get("last_update")
    internal = record.get("internal")
    internal = internal if isinstance(internal, dict) else {}
    # Datasets and resources have last_modified; dataservices only metadata_modified_at.
    return (
        record.get("last_modified")
        or internal.get("last_modified_internal")
        or record.get("metadata_modified_at")
    )


async def update_date_more_recent_than(ctx: Context, check: CheckInput) -> PreflightVerdict:
    """The object's modification date is at or after an absolute or relative threshold."""
    params: UpdateDateParams = check.params
    threshold = params.threshold(ctx.now)
    try:
        record = await read_metadata(ctx, check.target)
    except Unavailable as error:
        return PreflightVerdict("failed", str(error))
    raw = _modified(record, params.field)
    if not isinstance(raw, str):
        return PreflightVerdict("failed", f"{check.target.label} has no {params.field} date")
    try:
        when = parse_when(raw)
    except ValueError as error:
        return PreflightVerdict("failed", f"{params.field} of {check.target.label}: {error}")
    wanted = (
        f">= {params.value}"
        if params.type == "absolute"
        else f">= {threshold.isoformat()} ({params.value} before {ctx.now.isoformat()})"
    )
    if when >= threshold:
        return PreflightVerdict("passed", f"{params.field} {raw} {wanted}")
    diff = DiffEntry(field=params.field, baseline=wanted, current=raw)
    return PreflightVerdict(
        "failed", f"{params.field} {raw} is older than required ({wanted})", (diff,)
    )


async def schema_unchanged(ctx: Context, check: CheckInput) -> PreflightVerdict:
    """The Tabular columns and their types equal the baseline's (optionally a subset)."""
    params: SchemaParams = check.params
    baseline = _need_baseline(check, "columns")
    if isinstance(baseline, PreflightVerdict):
        return baseline
    try:
        current = await read_columns(ctx, check.target.id)
    except Unavailable as error:
        return PreflightVerdict("failed", str(error))
    before = [c.model_dump() for c in baseline.columns or []]
    diffs = diff_columns(before, current, params.columns)
    if diffs:
        names = ", ".join(d.field.removeprefix("columns.") for d in diffs)
        return PreflightVerdict("failed", f"columns changed: {names}", tuple(diffs))
    scope = (
        f"{len(params.columns)} checked columns" if params.columns else f"{len(current)} columns"
    )
    return PreflightVerdict("passed", f"{scope} unchanged")


async def row_count_within(ctx: Context, check: CheckInput) -> PreflightVerdict:
    """The Tabular row count (``meta.total``) lies within bounds or the baseline's tolerance."""
    params: RowCountParams = check.params
    low: float = params.min if params.min is not None else -math.inf
    high: float = params.max if params.max is not None else math.inf
    expected: Any = None
    if params.needs_baseline:
        baseline = _need_baseline(check, "row_count")
        if isinstance(baseline, PreflightVerdict):
            return baseline
        count = baseline.row_count or 0
        tolerance = params.tolerance or 0.0
        low, high = max(low, count * (1 - tolerance)), min(high, count * (1 + tolerance))
        if tolerance == 0 and params.min is None and params.max is None:
            expected = count
        else:
            expected = f"{count} ± {tolerance:.0%} ({_bounds(low, high)})"
    if expected is None:
        expected = _bounds(low, high)
    try:
        total = await read_total(ctx, check.target.id, [])
    except Unavailable as error:
        return PreflightVerdict("failed", f"row count unreadable: {error}")
    if low <= total <= high:
        return PreflightVerdict("passed", f"{total} rows (expected {expected})")
    diff = DiffEntry(field="row_count", baseline=expected, current=total)
    return PreflightVerdict("failed", f"{total} rows, expected {expected}", (diff,))


def _bounds(low: float, high: float) -> str:
    """Render an integer interval: ``130–158``, ``>= 50`` or ``<= 200``."""
    if low == -math.inf:
        return f"<= {math.floor(high)}"
    if high == math.inf:
        return f">= {math.ceil(low)}"
    return f"{math.ceil(low)}–{math.floor(high)}"


def _holds(expected: ExpectedValue, value: float) -> bool:
    if abs(value - expected.value) <= expected.tolerance:
        return True
    # Sums of floats may differ in the last bits depending on the order of addition.
    return math.isclose(value, expected.value, rel_tol=1e-9, abs_tol=1e-9)


def values_for(spec: TaskSpec, resource_id: str) -> list[ExpectedValue]:
    """Return the expected values of a task recomputed from one resource."""
    return [
        v
        for v in spec.expected_values
        if v.recompute is not None and v.recompute.resource_id == resource_id
    ]


async def expected_values_hold(ctx: Context, check: CheckInput) -> PreflightVerdict:
    """Every expected value recomputed from this resource can still be computed.

    A value that can be computed but moved is not drift of the task's premise: the verdict
    passes, its diff and reason report ``old -> new``, and the recomputed value (in
    ``references``) becomes the run's reference. It fails when the value cannot be recomputed
    (resource gone, column missing or renamed, aggregate NULL).
    """
    params: ExpectedValuesParams = check.params
    values = values_for(check.spec, check.target.id)
    if params.names is not None:
        unknown = sorted(set(params.names) - {v.name for v in values})
        if unknown:
            return PreflightVerdict(
                "error",
                f"no expected value named {', '.join(unknown)} is recomputed from resource "
                f"{check.target.id}",
            )
        values = [v for v in values if v.name in params.names]
    if not values:
        return PreflightVerdict(
            "error", f"no expected value of {check.spec.task_id} is recomputed from this resource"
        )
    diffs: list[DiffEntry] = []
    problems: list[str] = []
    followed: list[str] = []
    references: list[Reference] = []
    source = f"{ctx.source or ctx.urls.datagouv_api} (Tabular API {ctx.urls.tabular_api})"
    for expected in values:
        assert expected.recompute is not None  # values_for keeps only recomputable values
        name = f"expected_values.{expected.name}"
        wanted: Any = (
            _clean(expected.value)
            if expected.tolerance == 0
            else f"{expected.value:g} ± {expected.tolerance:g}"
        )
        reference = Reference(
            task_id=check.spec.task_id,
            name=expected.name,
            spec_value=expected.value,
            value=None,
            source=source,
        )
        try:
            value = await recompute(ctx, expected.recompute)
        except Unavailable as error:
            problems.append(f"{expected.name}: {error}")
            diffs.append(DiffEntry(field=name, baseline=wanted, current=None))
            references.append(reference.model_copy(update={"error": str(error)}))
            continue
        if value is None:
            why = "the aggregate is NULL (no non-null value matched)"
            problems.append(f"{expected.name}: {why}")
            diffs.append(DiffEntry(field=name, baseline=wanted, current=None))
            references.append(reference.model_copy(update={"error": why}))
            continue
        references.append(reference.model_copy(update={"value": value}))
        if not _holds(expected, value):
            # The premise holds (the data is there and computable); the figure moved. The run
            # follows it: answers are compared with the recomputed reference.
            followed.append(f"{expected.name} {wanted} -> {_clean(value)}")
            diffs.append(DiffEntry(field=name, baseline=wanted, current=_clean(value)))
    if problems:
        return PreflightVerdict("failed", "; ".join(problems), tuple(diffs), tuple(references))
    names = ", ".join(v.name for v in values)
    if followed:
        return PreflightVerdict(
            "passed",
            f"{len(values)} expected value(s) recomputed; changed and followed: "
            + "; ".join(followed),
            tuple(diffs),
            tuple(references),
        )
    return PreflightVerdict(
        "passed", f"{len(values)} expected value(s) hold: {names}", (), tuple(references)
    )


def _clean(value: float) -> float | int:
    return int(value) if value.is_integer() else value


CheckFunction = Callable[[Context, CheckInput], Awaitable[PreflightVerdict]]

CHECKS: dict[CheckFn, CheckFunction] = {
    CheckFn.SAME_TITLE_DESCRIPTION: same_title_description,
    CheckFn.DOWNLOAD_URL_REACHABLE: download_url_reachable,
    CheckFn.TABULAR_API_AVAILABLE: tabular_api_available,
    CheckFn.TABULAR_API_UNAVAILABLE: tabular_api_unavailable,
    CheckFn.UPDATE_DATE_MORE_RECENT_THAN: update_date_more_recent_than,
    CheckFn.SCHEMA_UNCHANGED: schema_unchanged,
    CheckFn.ROW_COUNT_WITHIN: row_count_within,
    CheckFn.EXPECTED_VALUES_HOLD: expected_values_hold,
}
"""The implementation of every check."""


def baseline_fields(fn: CheckFn, params: Any) -> frozenset[BaselineField]:
    """Return the baseline fields a check compares against (empty: it needs no baseline)."""
    if fn == CheckFn.SAME_TITLE_DESCRIPTION:
        return frozenset({"title", "description"})
    if fn == CheckFn.SCHEMA_UNCHANGED:
        return frozenset({"columns"})
    if fn == CheckFn.ROW_COUNT_WITHIN and isinstance(params, RowCountParams):
        return frozenset({"row_count"}) if params.needs_baseline else frozenset()
    return frozenset()
