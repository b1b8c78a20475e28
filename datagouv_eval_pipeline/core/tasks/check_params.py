"""The parameters each pre-flight check accepts, and which object types it applies to.

A task spec stores ``params`` as a free mapping; the validator parses them here so that a typo is
reported as an ``error`` outcome of that one check (naming the parameter), never a crash of the
whole run as in the original framework.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from datagouv_eval_pipeline.core.tasks.spec import CheckFn, SourceType

RELATIVE_WINDOWS: dict[str, timedelta] = {
    "last_7_days": timedelta(days=7),
    "last_30_days": timedelta(days=30),
    "last_90_days": timedelta(days=90),
    "last_365_days": timedelta(days=365),
}
"""The relative freshness windows of ``update_date_more_recent_than`` (original framework)."""


class _Params(BaseModel):
    # A row-count tolerance of .inf would accept any count: numbers must be finite.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class NoParams(_Params):
    """Checks that take no parameter."""


class UpdateDateParams(_Params):
    """``update_date_more_recent_than``: the object was modified at or after a threshold."""

    type: Literal["absolute", "relative"]
    value: str
    """An ISO date or datetime (absolute) or one of ``RELATIVE_WINDOWS`` (relative)."""
    field: Literal["last_modified", "last_update"] = "last_modified"
    """The date compared; ``last_modified`` falls back to ``internal.last_modified_internal``."""

    @model_validator(mode="after")
    def _value_parses(self) -> UpdateDateParams:
        if self.type == "relative" and self.value not in RELATIVE_WINDOWS:
            raise ValueError(
                f"relative value {self.value!r} is not one of {sorted(RELATIVE_WINDOWS)}"
            )
        if self.type == "absolute":
            parse_when(self.value)
        return self

    def threshold(self, now: datetime) -> datetime:
        """Return the earliest accepted date (UTC) for the given clock."""
        if self.type == "relative":
            return now.astimezone(UTC) - RELATIVE_WINDOWS[self.value]
        return parse_when(self.value)


class SchemaParams(_Params):
    """``schema_unchanged``: the Tabular columns and their types equal the baseline's."""

    columns: list[str] | None = None
    """Only compare these columns (the ones the task uses); default: every column."""


class RowCountParams(_Params):
    """``row_count_within``: the Tabular row count lies within bounds.

    ``min``/``max`` are absolute bounds; ``tolerance`` is a fraction of the baseline count
    (``0.1`` = ±10 %). With no parameter at all the count must equal the baseline's.
    """

    min: int | None = Field(default=None, ge=0)
    max: int | None = Field(default=None, ge=0)
    tolerance: float | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> RowCountParams:
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min ({self.min}) is greater than max ({self.max})")
        return self

    @property
    def needs_baseline(self) -> bool:
        """Return whether the check compares with the baseline row count."""
        return self.tolerance is not None or (self.min is None and self.max is None)


class ExpectedValuesParams(_Params):
    """``expected_values_hold``: recompute the task's expected values from this resource."""

    names: list[str] | None = None
    """Only these expected values (by ``name``); default: every value recomputed from it."""


PARAMS: dict[CheckFn, type[_Params]] = {
    CheckFn.SAME_TITLE_DESCRIPTION: NoParams,
    CheckFn.DOWNLOAD_URL_REACHABLE: NoParams,
    CheckFn.TABULAR_API_AVAILABLE: NoParams,
    CheckFn.TABULAR_API_UNAVAILABLE: NoParams,
    CheckFn.UPDATE_DATE_MORE_RECENT_THAN: UpdateDateParams,
    CheckFn.SCHEMA_UNCHANGED: SchemaParams,
    CheckFn.ROW_COUNT_WITHIN: RowCountParams,
    CheckFn.EXPECTED_VALUES_HOLD: ExpectedValuesParams,
}
"""The parameter model of every check."""

_ALL = frozenset(SourceType)
_RESOURCE = frozenset({SourceType.RESOURCE})
APPLIES_TO: dict[CheckFn, frozenset[SourceType]] = {
    CheckFn.SAME_TITLE_DESCRIPTION: _ALL,
    CheckFn.DOWNLOAD_URL_REACHABLE: _RESOURCE,
    CheckFn.TABULAR_API_AVAILABLE: _RESOURCE,
    CheckFn.TABULAR_API_UNAVAILABLE: _RESOURCE,
    CheckFn.UPDATE_DATE_MORE_RECENT_THAN: frozenset(
        {SourceType.DATASET, SourceType.RESOURCE, SourceType.DATASERVICE}
    ),
    CheckFn.SCHEMA_UNCHANGED: _RESOURCE,
    CheckFn.ROW_COUNT_WITHIN: _RESOURCE,
    CheckFn.EXPECTED_VALUES_HOLD: _RESOURCE,
}
"""The catalog object types each check makes sense on."""


class ParamsError(ValueError):
    """A check's parameters (or its target type) are invalid; the message says which and why."""


def parse_params(fn: CheckFn, params: dict[str, Any], object_type: SourceType) -> _Params:
    """Validate the parameters of one check.

    Args:
        fn: The check.
        params: The ``params`` mapping of the spec.
        object_type: The type of the catalog object the check is declared on.

    Returns:
        The parsed parameters (an instance of ``PARAMS[fn]``).

    Raises:
        ParamsError: unknown or ill-typed parameter, or a check declared on a type it does not
            apply to.
    """
    allowed = APPLIES_TO[fn]
    if object_type not in allowed:
        kinds = ", ".join(sorted(t.value for t in allowed))
        raise ParamsError(f"{fn.value} applies to {kinds}, not to a {object_type.value}")
    try:
        return PARAMS[fn].model_validate(params)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'params'}: {e['msg']}" for e in error.errors()
        )
        raise ParamsError(f"invalid params for {fn.value}: {problems}") from None


def parse_when(text: str) -> datetime:
    """Parse an ISO date or datetime; naive values are read as UTC.

    Raises:
        ValueError: not an ISO date.
    """
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            return datetime(day.year, day.month, day.day, tzinfo=UTC)
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{text!r} is not an ISO date (YYYY-MM-DD) or datetime") from None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
