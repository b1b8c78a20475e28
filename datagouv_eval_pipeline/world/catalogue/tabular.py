"""Typed tables and the Tabular API query language (``col__op=value``, ``col__sort``, pages).

api-tabular translates a query string into a PostgREST call on a typed PostgreSQL table. The
twin keeps each table in memory as typed Python tuples and applies the same semantics: SQL
comparisons where NULL never matches, ``less``/``greater`` inclusive, ``contains`` case-
insensitive, ascending sorts with NULLs last and descending with NULLs first, ties by ``__id``.
Error bodies copy the two shapes api-tabular returns: "Invalid query string" with a string
``detail``, and "Database error" with a PostgREST object ``detail``.
"""

from __future__ import annotations

import csv
import io
import math
import re
import statistics
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any, Literal
from urllib.parse import unquote_plus

from datagouv_eval_pipeline.base.vocabulary import TABULAR_OPERATORS

ColumnType = Literal["string", "int", "float", "date", "datetime", "bool"]
COLUMN_TYPES: tuple[ColumnType, ...] = ("string", "int", "float", "date", "datetime", "bool")

OPERATORS = TABULAR_OPERATORS

# PostgreSQL type names used in "invalid input syntax" errors.
_PG_TYPES: dict[ColumnType, str] = {
    "string": "text",
    "int": "bigint",
    "float": "double precision",
    "date": "date",
    "datetime": "timestamp without time zone",
    "bool": "boolean",
}

_DEFAULT_FORMATS: dict[ColumnType, str] = {
    "string": "string",
    "int": "int",
    "float": "float",
    "date": "date",
    "datetime": "datetime_naive",
    "bool": "booleen",
}

_TRUE = {"true", "t", "1", "oui", "vrai", "yes"}
_FALSE = {"false", "f", "0", "non", "faux", "no"}

ID_COLUMN = "__id"
# ``__id`` among a query's column positions: api-tabular's row number, not a column of the file.
ID_POSITION = -1


@dataclass(frozen=True)
class Column:
    """One column of a typed table.

    Attributes:
        name: Header as it appears in the CSV file (accents and spaces included).
        type: Python type the Tabular API infers (csv_detective ``python_type``).
        format: csv_detective format label (``code_departement``, ``date``, …).
    """

    name: str
    type: ColumnType
    format: str = ""

    @property
    def detected_format(self) -> str:
        """Return ``format`` or the default label of the column's type."""
        return self.format or _DEFAULT_FORMATS[self.type]


class ValueParseError(ValueError):
    """A cell or a filter value does not parse as its column's type."""

    def __init__(self, column: Column, raw: str) -> None:
        super().__init__(f'invalid input syntax for type {_PG_TYPES[column.type]}: "{raw}"')
        self.column = column
        self.raw = raw


def parse_value(column: Column, raw: str) -> Any:
    """Convert the text of a cell (or of a filter value) to the column's Python type.

    Args:
        column: The column whose type applies.
        raw: The text; an empty string is NULL (``None``).

    Returns:
        ``None``, ``str``, ``int``, ``float``, ``date``, ``datetime`` or ``bool``.

    Raises:
        ValueParseError: ``raw`` is not a valid literal of the type.
    """
    if raw == "":
        return None
    try:
        if column.type == "string":
            return raw
        if column.type == "int":
            return int(raw)
        if column.type == "float":
            value = float(raw)
            if math.isnan(value):
                raise ValueError(raw)
            return value
        if column.type == "date":
            return date.fromisoformat(raw[:10])
        if column.type == "datetime":
            when = datetime.fromisoformat(raw)
            # Timestamps are compared as naive UTC, like a "timestamp without time zone" column.
            if when.tzinfo is not None:
                when = when.astimezone(UTC).replace(tzinfo=None)
            return when
        lowered = raw.strip().lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise ValueError(raw)
    except ValueError as error:
        raise ValueParseError(column, raw) from error


def json_value(value: Any) -> Any:
    """Render a typed cell the way PostgREST renders it in JSON."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    return value


def text_value(value: Any) -> str:
    """Render a typed cell for a CSV export (NULL is an empty field)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (date, datetime)):
        return value.isoformat()
    return str(value)


@dataclass
class Table:
    """A typed, read-only table with its CSV form.

    Attributes:
        name: Internal table name (api-tabular's ``parsing_table`` hash); used in errors.
        columns: The columns in file order.
        rows: Typed rows, in file order; row ``i`` has ``__id`` ``i + 1``.
        separator: Field separator of the CSV file.
    """

    name: str
    columns: tuple[Column, ...]
    rows: list[tuple[Any, ...]]
    separator: str = ","
    source_text: str = field(default="", repr=False)
    """The CSV file the table was parsed from (served as the resource's download)."""
    source_factory: Callable[[], bytes] | None = field(default=None, repr=False)
    """Writes that file on demand, for a table too large to keep it (``source_text`` empty)."""
    _positions: dict[str, int] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self._positions = {column.name: index for index, column in enumerate(self.columns)}

    @classmethod
    def from_csv(
        cls, name: str, text: str, columns: Sequence[Column], separator: str, *, origin: str
    ) -> Table:
        """Parse a CSV text whose header must equal ``columns``.

        Args:
            name: Internal table name.
            text: The whole CSV file.
            columns: Expected columns (names and types), in order.
            separator: Field separator.
            origin: Where the text comes from, for error messages (e.g. a file path).

        Raises:
            ValueError: The header differs from ``columns`` or a cell does not parse; the
                message names ``origin``, the line and the column.
        """
        reader = csv.reader(io.StringIO(text), delimiter=separator)
        header = next(reader, None)
        expected = [c.name for c in columns]
        if header != expected:
            raise ValueError(f"{origin}: header {header!r} differs from the schema {expected!r}")
        rows: list[tuple[Any, ...]] = []
        for line_number, record in enumerate(reader, start=2):
            if len(record) != len(columns):
                raise ValueError(
                    f"{origin}: line {line_number} has {len(record)} fields, "
                    f"expected {len(columns)}"
                )
            try:
                rows.append(tuple(parse_value(c, v) for c, v in zip(columns, record, strict=True)))
            except ValueParseError as error:
                raise ValueError(
                    f"{origin}: line {line_number}, column {error.column.name!r}: {error}"
                ) from error
        return cls(
            name=name, columns=tuple(columns), rows=rows, separator=separator, source_text=text
        )

    def source_bytes(self) -> bytes:
        """Return the CSV file the table was parsed from, as its download serves it."""
        if self.source_factory is not None:
            return self.source_factory()
        return self.source_text.encode("utf-8")

    def position(self, column: str) -> int | None:
        """Return the index of ``column`` or ``None`` if the table has no such column."""
        return self._positions.get(column)

    @property
    def header(self) -> list[str]:
        """Return the column names in order."""
        return [c.name for c in self.columns]

    def served_positions(self) -> tuple[int, ...]:
        """Return the positions api-tabular serves without ``columns=``: ``__id``, then all."""
        return (ID_POSITION, *range(len(self.columns)))

    def _name(self, position: int) -> str:
        return ID_COLUMN if position == ID_POSITION else self.columns[position].name

    def row_dict(self, index: int, positions: Sequence[int] | None = None) -> dict[str, Any]:
        """Return row ``index`` (0-based) as a JSON-ready dict.

        Args:
            index: The row, 0-based.
            positions: The columns to keep, in order (:data:`ID_POSITION` is ``__id``);
                ``None`` is ``__id`` then every column, as api-tabular serves a row.
        """
        row = self.rows[index]
        wanted = self.served_positions() if positions is None else positions
        return {
            self._name(p): index + 1 if p == ID_POSITION else json_value(row[p]) for p in wanted
        }

    def to_csv(self, indices: Iterable[int], positions: Sequence[int] | None = None) -> str:
        """Render the selected rows (0-based indices) as CSV text with a header.

        ``positions`` as for :meth:`row_dict`, except that ``None`` is the file's own columns
        (no ``__id``): the text the table was loaded from.
        """
        wanted = list(range(len(self.columns))) if positions is None else list(positions)
        buffer = io.StringIO()
        writer = csv.writer(buffer, delimiter=self.separator, lineterminator="\n")
        writer.writerow([self._name(p) for p in wanted])
        for index in indices:
            row = self.rows[index]
            writer.writerow(
                [str(index + 1) if p == ID_POSITION else text_value(row[p]) for p in wanted]
            )
        return buffer.getvalue()


# Characters that make PostgreSQL quote a field of a record's text form (``record_out``).
_RECORD_QUOTED = frozenset('"\\(),') | frozenset(" \t\n\r\v\f")


def _record_field(value: Any) -> str:
    """One cell as PostgreSQL prints it inside a row's text form (PostgREST's CSV body)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        text = "t" if value else "f"
    elif isinstance(value, float):
        # float8 output: shortest round-trip digits, no ".0" on whole numbers.
        text = str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    elif isinstance(value, datetime):
        # PostgreSQL drops the fraction's trailing zeros (and the fraction when it is zero).
        text = value.isoformat(sep=" ")
        if value.microsecond:
            text = text.rstrip("0")
    elif isinstance(value, date):
        text = value.isoformat()
    else:
        text = str(value)
    if text == "" or any(char in _RECORD_QUOTED for char in text):
        return '"' + text.replace("\\", "\\\\").replace('"', '""') + '"'
    return text


def postgrest_csv(table: Table, indices: Iterable[int], positions: Sequence[int]) -> str:
    """Render rows as PostgREST's ``text/csv`` (api-tabular's ``data/csv/`` export).

    PostgREST writes the column names joined by commas, then each row's PostgreSQL text form
    without its parentheses: comma-separated whatever the source file's separator, NULL as
    nothing, booleans ``t``/``f``, timestamps with a space, a field quoted only when it holds a
    comma, quote, parenthesis, backslash or blank (or is empty). Rows are joined by newlines;
    api-tabular adds the final one.

    Args:
        table: The table.
        indices: The rows (0-based), in query order.
        positions: The columns, in order (:data:`ID_POSITION` is ``__id``).
    """
    lines = [",".join(table._name(p) for p in positions)]
    for index in indices:
        row = table.rows[index]
        lines.append(
            ",".join(
                str(index + 1) if p == ID_POSITION else _record_field(row[p]) for p in positions
            )
        )
    return "\n".join(lines) + "\n"


class _Cell:
    """One table, parsed on first use by a pure function, under a lock of its own."""

    __slots__ = ("_lock", "_parse", "_table")

    def __init__(self, parse: Callable[[], Table] | None, table: Table | None = None) -> None:
        self._parse = parse
        self._table = table
        self._lock = threading.Lock()

    @property
    def parsed(self) -> bool:
        return self._table is not None

    def get(self) -> Table:
        table = self._table
        if table is not None:
            return table
        with self._lock:
            # Another thread may have parsed it while this one waited.
            if self._table is None:
                assert self._parse is not None
                self._table = self._parse()
                self._parse = None  # the source bytes are no longer needed
            return self._table


class LazyTables(MutableMapping[str, Table]):
    """Tables by name, each parsed the first time it is read.

    Parsing the snapshot's CSVs is most of the twin's start-up, and a run reads a handful of
    them. A table's parser is a pure function of the snapshot's bytes, so the table a reader
    gets does not depend on when or by which thread it was first parsed. Each table has its own
    lock, so concurrent first reads parse it once. A parse that fails raises on every read (it
    is not cached). :meth:`copy` shares the cells: a table parsed through one copy is parsed for
    all, while adding or removing a name changes only that copy.
    """

    def __init__(
        self,
        tables: Mapping[str, Table] | None = None,
        parsers: Mapping[str, Callable[[], Table]] | None = None,
    ) -> None:
        """Hold parsed ``tables`` and not-yet-parsed ones (``parsers``: name → parse function)."""
        self._cells: dict[str, _Cell] = {}
        for name, parse in (parsers or {}).items():
            self._cells[name] = _Cell(parse)
        for name, table in (tables or {}).items():
            self._cells[name] = _Cell(None, table)

    def __getitem__(self, name: str) -> Table:
        return self._cells[name].get()

    def __setitem__(self, name: str, table: Table) -> None:
        self._cells[name] = _Cell(None, table)

    def __delitem__(self, name: str) -> None:
        del self._cells[name]

    def __contains__(self, name: object) -> bool:
        return name in self._cells

    def __iter__(self) -> Iterator[str]:
        return iter(self._cells)

    def __len__(self) -> int:
        return len(self._cells)

    def __repr__(self) -> str:
        parsed = sum(cell.parsed for cell in self._cells.values())
        return f"LazyTables({len(self._cells)} tables, {parsed} parsed)"

    def copy(self) -> LazyTables:
        """Return a copy sharing this one's tables (parsed or not)."""
        result = LazyTables()
        result._cells = dict(self._cells)
        return result

    def is_parsed(self, name: str) -> bool:
        """Return whether table ``name`` has been parsed already."""
        return self._cells[name].parsed


class QueryError(Exception):
    """A Tabular/Metrics query the real API would reject; carries the real error body."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(str(body))
        self.status = status
        self.body = body

    @classmethod
    def invalid(cls, detail: str) -> QueryError:
        """Build api-tabular's own 400 "Invalid query string" error."""
        return cls(
            400, {"errors": [{"code": None, "title": "Invalid query string", "detail": detail}]}
        )

    @classmethod
    def too_long(cls, max_rows: int) -> QueryError:
        """Build api-tabular's 403 for a CSV/JSON export of more than ``max_rows`` rows."""
        detail = (
            f"The output has more than {max_rows} rows, please consider downloading the "
            "source file directly"
        )
        return cls(
            403, {"errors": [{"code": None, "title": "Output is too long", "detail": detail}]}
        )

    @classmethod
    def database(cls, code: str, message: str) -> QueryError:
        """Build the 400 error api-tabular relays from PostgREST."""
        detail = {"code": code, "details": None, "hint": None, "message": message}
        return cls(400, {"errors": [{"code": None, "title": "Database error", "detail": detail}]})


@dataclass(frozen=True)
class Filter:
    """One ``column__operator=value`` condition, parsed against a table."""

    position: int
    operator: str
    value: Any


@dataclass(frozen=True)
class FilterGroup:
    """An ``or(...)`` / ``and(...)`` of conditions (api-tabular's ``or=(...)`` parameter)."""

    kind: str  # "or" or "and"
    items: tuple[Filter | FilterGroup, ...]


@dataclass(frozen=True)
class TabularQuery:
    """A parsed query: filters and groups (ANDed), sorts in order, selected columns, the page."""

    filters: tuple[Filter, ...] = ()
    sorts: tuple[tuple[int, bool], ...] = ()
    positions: tuple[int, ...] | None = None
    page: int = 1
    page_size: int = 20
    groups: tuple[FilterGroup, ...] = ()


AGGREGATORS = ("avg", "count", "max", "min", "sum", "groupby")


def query_pairs(raw: str) -> list[tuple[str, str | None]]:
    """Split a raw query string as api-tabular does: on ``&``, then at the first ``=``.

    A parameter without ``=`` (``col__groupby``, ``col__isnull``) gets the value ``None``.
    """
    pairs: list[tuple[str, str | None]] = []
    for part in raw.split("&") if raw else []:
        if not part:
            continue
        key, sep, value = part.partition("=")
        pairs.append((unquote_plus(key), unquote_plus(value) if sep else None))
    return pairs


def _split_top_level(text: str) -> list[str]:
    parts, current, depth = [], "", 0
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    if current:
        parts.append(current)
    return parts


_QUOTED_COLUMN = re.compile(r'^"([^"]*)"__([a-z_]+)')
_QUOTED_VALUE = re.compile(r'\."([^"]*)"$')


def _condition(table: Table, param: str, where: str) -> Filter:
    """Parse ``col__op.value`` (column and value optionally in double quotes)."""
    bad = QueryError.invalid(f"Malformed query: argument '{where}' could not be parsed")
    if param.endswith(("__isnull", "__isnotnull")):
        column, _, operator = param.replace('"', "").rpartition("__")
        return make_filter(table, column, operator, "")
    if param.count('"') not in (0, 2, 4):
        raise bad
    if param.count('"') == 0:
        pieces = param.split(".")
        if len(pieces) != 2:
            raise bad
        head, value = pieces
        column, sep, operator = head.rpartition("__")
    else:
        quoted_column = _QUOTED_COLUMN.match(param)
        quoted_value = _QUOTED_VALUE.search(param)
        if quoted_column:
            column, operator = quoted_column.group(1), quoted_column.group(2)
            rest = param[quoted_column.end() :]
            value = quoted_value.group(1) if quoted_value else rest.lstrip(".")
        elif quoted_value:
            head = param[: quoted_value.start()]
            column, _, operator = head.rpartition("__")
            value = quoted_value.group(1)
        else:
            raise bad
        sep = "__"
    if not sep or not column or operator == "sort":
        raise bad
    return make_filter(table, column, operator, value)


def _group(table: Table, kind: str, body: str, where: str) -> FilterGroup:
    items: list[Filter | FilterGroup] = []
    for param in _split_top_level(body):
        nested = re.match(r"^(and|or)\((.*)\)$", param)
        if nested:
            items.append(_group(table, nested.group(1), nested.group(2), where))
        else:
            items.append(_condition(table, param, where))
    return FilterGroup(kind, tuple(items))


def _missing_column(table: Table, column: str) -> QueryError:
    return QueryError.database("42703", f"column {table.name}.{column} does not exist")


def make_filter(table: Table, column: str, operator: str, raw: str) -> Filter:
    """Parse one condition against ``table``.

    Raises:
        QueryError: unknown operator (400 "Invalid query string"), unknown column (PostgREST
            42703) or a value of the wrong type (PostgREST 22P02).
    """
    if operator not in OPERATORS:
        raise QueryError.invalid(
            f"Malformed query: argument '{column}__{operator}={raw}' could not be parsed"
        )
    position = table.position(column)
    if position is None:
        raise _missing_column(table, column)
    col = table.columns[position]
    value: Any
    try:
        if operator in ("isnull", "isnotnull"):
            value = None
        elif operator in ("contains", "notcontains"):
            value = raw.lower()
        elif operator in ("in", "notin"):
            value = frozenset(parse_value(col, part) for part in raw.split(","))
        else:
            value = parse_value(col, raw)
    except ValueParseError as error:
        raise QueryError.database("22P02", str(error)) from error
    return Filter(position, operator, value)


def _predicate(flt: Filter) -> Callable[[tuple[Any, ...]], bool]:
    p, op, v = flt.position, flt.operator, flt.value
    if op == "isnull":
        return lambda row: row[p] is None
    if op == "isnotnull":
        return lambda row: row[p] is not None
    if op == "contains":
        return lambda row: row[p] is not None and v in str(json_value(row[p])).lower()
    if op == "notcontains":
        return lambda row: row[p] is not None and v not in str(json_value(row[p])).lower()
    if op == "in":
        return lambda row: row[p] is not None and row[p] in v
    if op == "notin":
        return lambda row: row[p] is not None and row[p] not in v
    if v is None:
        # Comparing with NULL is never true in SQL.
        return lambda row: False
    compare: dict[str, Callable[[Any], bool]] = {
        "exact": lambda x: bool(x == v),
        "differs": lambda x: bool(x != v),
        "less": lambda x: bool(x <= v),
        "greater": lambda x: bool(x >= v),
        "strictly_less": lambda x: bool(x < v),
        "strictly_greater": lambda x: bool(x > v),
    }
    check = compare[op]
    return lambda row: row[p] is not None and check(row[p])


def _parse_int(name: str, raw: str, minimum: int | None) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise QueryError.invalid(
            f"Malformed query: {name} must be an integer, got '{raw}'"
        ) from None
    if minimum is not None and value < minimum:
        raise QueryError.invalid(f"Malformed query: {name} must be a positive integer")
    return value


def page_offset(page: int, page_size: int) -> int:
    """api-tabular's ``build_offset``: ``page_size · (page - 1)``, 0 for a page under 2."""
    return page_size * (page - 1) if page > 1 else 0


def parse_query(
    table: Table,
    params: Iterable[tuple[str, str | None]],
    *,
    page_size_max: int,
    page_size_default: int = 20,
    resource_id: str = "",
) -> TabularQuery:
    """Parse a Tabular API query string (as key/value pairs) against ``table``.

    Args:
        table: The queried table.
        params: Query parameters in their order of appearance (sorts keep that order); a
            value of ``None`` is a parameter without ``=`` (:func:`query_pairs`).
        page_size_max: Above this, 400 ``Page size exceeds allowed maximum: N``.
        page_size_default: Page size when none is given.
        resource_id: The resource, named in the 403 of aggregation parameters.

    ``or=(a__exact.x,and(b__greater.1,c__less.5))`` ORs its conditions, as api-tabular's
    ``or`` parameter does. Aggregation parameters (``col__groupby``, ``col__count``, … without
    ``=``) answer 403 ``Unauthorized parameters``: api-tabular allows them only for the
    resources of its configuration's exception list, and the twin has none.

    Raises:
        QueryError: with the real status and body.
    """
    filters: list[Filter] = []
    groups: list[FilterGroup] = []
    aggregations: list[str] = []
    sorts: list[tuple[int, bool]] = []
    positions: tuple[int, ...] | None = None
    page, page_size = 1, page_size_default
    for key, value in params:
        if value is None:
            column, _, operator = key.rpartition("__")
            if operator in ("isnull", "isnotnull") and column:
                filters.append(make_filter(table, column, operator, ""))
            elif operator.lower() in AGGREGATORS and column:
                if operator.lower() not in aggregations:
                    aggregations.append(operator.lower())
            else:
                raise QueryError.invalid(f"Malformed query: argument '{key}' could not be parsed")
            continue
        raw = value
        if key == "or":
            if not (raw.startswith("(") and raw.endswith(")")):
                raise QueryError.invalid(
                    f"Malformed query: argument 'or={raw}' could not be parsed"
                )
            groups.append(_group(table, "or", raw[1:-1], f"or={raw}"))
            continue
        if key == "page":
            # api-tabular (tabular/app.py ``resource_data``): any integer; a page under 2 is
            # the first page's rows, echoed as given.
            page = _parse_int("page", raw, None)
        elif key == "page_size":
            # 0 sends no ``limit`` to PostgREST (core/query.py ``if page_size:``): every row.
            page_size = _parse_int("page_size", raw, 0)
            if page_size > page_size_max:
                raise QueryError.invalid(f"Page size exceeds allowed maximum: {page_size_max}")
        elif key == "columns":
            # api-tabular turns this into PostgREST's select=: exactly the named columns, in
            # that order, ``__id`` only when named; a double quote is refused before that.
            if '"' in raw:
                raise QueryError.invalid(
                    'Malformed query: Forbidden character `"` in a column name'
                )
            wanted: list[int] = []
            for name in raw.split(","):
                position = ID_POSITION if name == ID_COLUMN else table.position(name)
                if position is None:
                    raise _missing_column(table, name)
                wanted.append(position)
            positions = tuple(wanted)
        elif "__" in key:
            column, operator = key.rsplit("__", 1)
            if operator == "sort":
                if raw not in ("asc", "desc"):
                    raise QueryError.invalid(
                        f"Malformed query: argument '{key}={raw}' could not be parsed"
                    )
                position = table.position(column)
                if position is None:
                    raise _missing_column(table, column)
                sorts.append((position, raw == "desc"))
            else:
                filters.append(make_filter(table, column, operator, raw))
        # Other parameters are ignored, as api-tabular ignores them.
    if aggregations:
        raise QueryError(
            403,
            {
                "errors": [
                    {
                        "code": None,
                        "title": "Unauthorized parameters",
                        "detail": f"Aggregation parameters `{'`, `'.join(aggregations)}` "
                        f"are not allowed for resource '{resource_id}'",
                    }
                ]
            },
        )
    return TabularQuery(tuple(filters), tuple(sorts), positions, page, page_size, tuple(groups))


def _group_predicate(group: FilterGroup) -> Callable[[tuple[Any, ...]], bool]:
    parts = [
        _group_predicate(item) if isinstance(item, FilterGroup) else _predicate(item)
        for item in group.items
    ]
    if group.kind == "or":
        return lambda row: any(part(row) for part in parts)
    return lambda row: all(part(row) for part in parts)


def matching_indices(
    table: Table, filters: Sequence[Filter], groups: Sequence[FilterGroup] = ()
) -> list[int]:
    """Return the 0-based indices of the rows meeting every filter and group, in file order."""
    predicates = [_predicate(f) for f in filters] + [_group_predicate(g) for g in groups]
    return [i for i, row in enumerate(table.rows) if all(pred(row) for pred in predicates)]


def _sorted(table: Table, indices: list[int], sorts: Sequence[tuple[int, bool]]) -> list[int]:
    ordered = sorted(indices)
    # Apply the sort keys from last to first (stable sorts compose); ties stay by __id.
    for position, descending in reversed(sorts):
        present = [i for i in ordered if table.rows[i][position] is not None]
        nulls = [i for i in ordered if table.rows[i][position] is None]
        present.sort(key=lambda i: table.rows[i][position], reverse=descending)
        # PostgreSQL: NULLS LAST for ASC, NULLS FIRST for DESC.
        ordered = nulls + present if descending else present + nulls
    return ordered


@dataclass(frozen=True)
class QueryResult:
    """One page of a query: the total before paging and the page's rows."""

    total: int
    rows: list[dict[str, Any]]
    indices: list[int]


def run_query(table: Table, query: TabularQuery) -> QueryResult:
    """Filter, sort and page ``table``."""
    indices = _sorted(table, matching_indices(table, query.filters, query.groups), query.sorts)
    start = page_offset(query.page, query.page_size)
    page = indices[start : start + query.page_size] if query.page_size else indices[start:]
    rows = [table.row_dict(i, query.positions) for i in page]
    return QueryResult(total=len(indices), rows=rows, indices=page)


def ordered_indices(table: Table, query: TabularQuery) -> list[int]:
    """Return every matching row index in query order (for CSV exports, no paging)."""
    return _sorted(table, matching_indices(table, query.filters, query.groups), query.sorts)


Aggregate = Literal["count", "sum", "avg", "min", "max", "count_distinct"]


def aggregate(
    table: Table, filters: Sequence[Filter], how: Aggregate, column: str | None = None
) -> float | None:
    """Aggregate the rows meeting ``filters`` (SQL semantics: NULLs are skipped).

    Args:
        table: The table.
        filters: Conditions, ANDed.
        how: ``count`` counts rows; the others apply to ``column``.
        column: The aggregated column (required unless ``how`` is ``count``).

    Returns:
        The value, or ``None`` when no non-NULL value exists (as SQL returns NULL).
    """
    indices = matching_indices(table, filters)
    if how == "count":
        return float(len(indices))
    if column is None:
        raise ValueError(f"aggregate {how!r} needs a column")
    position = table.position(column)
    if position is None:
        raise _missing_column(table, column)
    values = [table.rows[i][position] for i in indices if table.rows[i][position] is not None]
    if how == "count_distinct":
        return float(len(set(values)))
    if not values:
        return None
    if how == "min":
        return float(min(values))
    if how == "max":
        return float(max(values))
    if how == "sum":
        return float(sum(values))
    return float(statistics.fmean(values))


def profile(table: Table, *, encoding: str = "utf-8") -> dict[str, Any]:
    """Return a csv_detective-shaped profile of ``table`` (what ``/profile/`` serves)."""
    header = table.header
    columns_info = {
        c.name: {"python_type": c.type, "format": c.detected_format, "score": 1.0}
        for c in table.columns
    }
    formats: dict[str, list[str]] = {}
    for c in table.columns:
        formats.setdefault(c.detected_format, []).append(c.name)
    per_column: dict[str, Any] = {}
    categorical: list[str] = []
    for position, c in enumerate(table.columns):
        values = [row[position] for row in table.rows]
        present = [v for v in values if v is not None]
        counts = Counter(json_value(v) for v in present)
        tops = [
            {"count": n, "value": v}
            for v, n in sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0])))[:10]
        ]
        entry: dict[str, Any] = {
            "tops": tops,
            "nb_distinct": len(counts),
            "nb_missing_values": len(values) - len(present),
        }
        if c.type in ("int", "float") and present:
            numbers = [float(v) for v in present]
            entry["min"] = min(numbers)
            entry["max"] = max(numbers)
            entry["mean"] = round(statistics.fmean(numbers), 6)
            entry["std"] = round(statistics.pstdev(numbers), 6)
        if c.type == "string" and 0 < len(counts) <= 25 and len(present) > 2 * len(counts):
            categorical.append(c.name)
        per_column[c.name] = entry
    seen: set[tuple[Any, ...]] = set()
    duplicates = 0
    for row in table.rows:
        if row in seen:
            duplicates += 1
        seen.add(row)
    return {
        "encoding": encoding,
        "separator": table.separator,
        "header_row_idx": 0,
        "header": header,
        "total_lines": len(table.rows),
        "nb_duplicates": duplicates,
        "heading_columns": 0,
        "trailing_columns": 0,
        "categorical": categorical,
        "columns": columns_info,
        "columns_fields": columns_info,
        "columns_labels": columns_info,
        "formats": formats,
        "profile": per_column,
    }
