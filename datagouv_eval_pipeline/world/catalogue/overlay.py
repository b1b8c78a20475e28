"""Drift overlays: a declared change of the twin's live view, to simulate catalog drift.

An overlay is a small YAML file (or the pydantic model below) listing changes, for example::

    name: sports-drift
    description: the sports dataset is renamed and its table loses rows
    changes:
      - {op: rename_title, type: dataset, id: 53699ebba3a729239d205f4f, title: Équipements}
      - {op: set_row_count, resource_id: ea4f5879-af40-4e3e-949d-812d6eeb5e02, rows: 500}

``DriftOverlay.apply(store)`` returns a modified copy of a :class:`CatalogStore` (the original is
never touched), which ``create_app(store)`` and ``TwinServer(store)`` serve like any snapshot:
the main API, the Tabular API, downloads and search all see the drift.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from datagouv_eval_pipeline.base.yaml_loading import safe_load
from datagouv_eval_pipeline.world.catalogue import tabular
from datagouv_eval_pipeline.world.catalogue.catalog import CatalogStore


class OverlayError(Exception):
    """An overlay is malformed or does not fit the catalog; the message says where and why."""


class _Change(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


ObjectType = Literal["dataset", "resource", "dataservice", "organization"]


class RenameTitle(_Change):
    """Give an object a new title (``name`` for an organization)."""

    op: Literal["rename_title"]
    type: ObjectType
    id: str
    title: str


class SetDescription(_Change):
    """Replace an object's description."""

    op: Literal["set_description"]
    type: ObjectType
    id: str
    description: str


class SetLastModified(_Change):
    """Change an object's modification date (freshness drift)."""

    op: Literal["set_last_modified"]
    type: Literal["dataset", "resource", "dataservice"]
    id: str
    value: str
    """ISO datetime, e.g. ``2024-03-01T00:00:00``."""


class RemoveResource(_Change):
    """Delete a resource from its dataset (and from the Tabular API and downloads)."""

    op: Literal["remove_resource"]
    resource_id: str


class RemoveFromTabular(_Change):
    """Take a resource out of the Tabular API; it stays in its dataset and downloadable."""

    op: Literal["remove_from_tabular"]
    resource_id: str


class ChangeColumn(_Change):
    """Rename a Tabular column and/or change its type (values are converted)."""

    op: Literal["change_column"]
    resource_id: str
    column: str
    rename_to: str | None = None
    type: tabular.ColumnType | None = None

    @model_validator(mode="after")
    def _something_changes(self) -> ChangeColumn:
        if self.rename_to is None and self.type is None:
            raise ValueError("change_column needs 'rename_to' and/or 'type'")
        return self


class DropColumn(_Change):
    """Remove a Tabular column."""

    op: Literal["drop_column"]
    resource_id: str
    column: str


class SetRowCount(_Change):
    """Keep the first ``rows`` rows of a table (or repeat rows cyclically to grow it)."""

    op: Literal["set_row_count"]
    resource_id: str
    rows: int = Field(ge=0)


class RowFilterChange(_Change):
    """One Tabular condition (``column__operator=value``)."""

    column: str
    operator: str = "exact"
    value: str | int | float


class DropRows(_Change):
    """Remove the rows matching every filter (at most ``limit`` of them, first ones first)."""

    op: Literal["drop_rows"]
    resource_id: str
    filters: list[RowFilterChange] = Field(min_length=1)
    limit: int | None = Field(default=None, ge=1)


Change = Annotated[
    RenameTitle
    | SetDescription
    | SetLastModified
    | RemoveResource
    | RemoveFromTabular
    | ChangeColumn
    | DropColumn
    | SetRowCount
    | DropRows,
    Field(discriminator="op"),
]


class DriftOverlay(BaseModel):
    """A named list of changes applied, in order, to a copy of the catalog."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    description: str = ""
    changes: list[Change] = Field(min_length=1)

    @classmethod
    def load(cls, path: Path | str) -> DriftOverlay:
        """Read an overlay YAML file.

        Raises:
            OverlayError: unreadable YAML or an invalid field; the message names the file and
                the field path (``changes.1.rows``).
        """
        source = Path(path)
        try:
            data = safe_load(source.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError) as error:
            # RecursionError: YAML nested past the parser's depth, a bad file like any other.
            raise OverlayError(f"{source}: cannot read the overlay: {error}") from None
        return cls.from_data(data, origin=str(source))

    @classmethod
    def from_data(cls, data: Any, *, origin: str = "<overlay>") -> DriftOverlay:
        """Validate an overlay given as plain data (e.g. parsed YAML).

        Raises:
            OverlayError: an invalid field, named by its path.
        """
        try:
            return cls.model_validate(data)
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '<top>'}: {e['msg']}"
                for e in error.errors()
            )
            raise OverlayError(f"{origin}: invalid overlay: {problems}") from None

    def apply(self, store: CatalogStore) -> CatalogStore:
        """Return a copy of ``store`` with every change applied (``store`` is not modified).

        Raises:
            OverlayError: a change names an unknown object or column, or a value does not
                convert; the message names the change by its index and op.
        """
        draft = _Draft.of(store)
        for index, change in enumerate(self.changes):
            try:
                _apply(draft, change)
            except (OverlayError, KeyError, ValueError) as error:
                reason = error.args[0] if error.args else repr(error)
                raise OverlayError(
                    f"overlay {self.name!r}: changes[{index}] ({change.op}): {reason}"
                ) from None
        return draft.build(store, self.name)


@dataclass
class _Draft:
    """Copy-on-write dictionaries of the store's content."""

    organizations: dict[str, dict[str, Any]]
    datasets: dict[str, dict[str, Any]]
    dataservices: dict[str, dict[str, Any]]
    tables: tabular.LazyTables
    downloads: dict[str, str]
    owned: set[tuple[str, str]]
    tabular_deleted: dict[str, tuple[str, str]]
    now: str

    @classmethod
    def of(cls, store: CatalogStore) -> _Draft:
        return cls(
            dict(store.organizations),
            dict(store.datasets),
            dict(store.dataservices),
            store.tables.copy(),
            dict(store.downloads),
            set(),
            dict(store.tabular_deleted),
            store.now.isoformat(),
        )

    def record(self, kind: str, ident: str) -> dict[str, Any]:
        """Return a private (deep-copied) record the draft may modify."""
        records = {
            "dataset": self.datasets,
            "dataservice": self.dataservices,
            "organization": self.organizations,
        }[kind]
        if ident not in records:
            raise OverlayError(f"no {kind} {ident!r} in the catalog")
        if (kind, ident) not in self.owned:
            records[ident] = copy.deepcopy(records[ident])
            self.owned.add((kind, ident))
        return records[ident]

    def resource(self, rid: str) -> tuple[dict[str, Any], int]:
        """Return the (private) dataset record holding ``rid`` and the resource's position."""
        for dataset_id, dataset in self.datasets.items():
            for position, resource in enumerate(dataset["resources"]):
                if resource["id"] == rid:
                    return self.record("dataset", dataset_id), position
        raise OverlayError(f"no resource {rid!r} in the catalog")

    def table(self, rid: str) -> tabular.Table:
        table = self.tables.get(rid)
        if table is None:
            raise OverlayError(f"resource {rid!r} is not in the Tabular API")
        return table

    def build(self, store: CatalogStore, name: str) -> CatalogStore:
        info = replace(store.info, manifest={**store.info.manifest, "overlay": name})
        result = CatalogStore(
            info=info,
            organizations=self.organizations,
            datasets=self.datasets,
            dataservices=self.dataservices,
            tables=self.tables,
            downloads=self.downloads,
            metrics=store.metrics,
            crawler_exceptions=list(store.crawler_exceptions),
            specs=store.specs,
            catalogue=store.catalogue,
            tabular_deleted=self.tabular_deleted,
        )
        # The store's own indexer (slugs, resources, external files, search) sees the drift.
        result._index(store.info.directory)
        return result


def _target(draft: _Draft, kind: str, ident: str) -> dict[str, Any]:
    if kind == "resource":
        dataset, position = draft.resource(ident)
        resource: dict[str, Any] = dataset["resources"][position]
        return resource
    return draft.record(kind, ident)


def _apply(draft: _Draft, change: Change) -> None:
    if isinstance(change, RenameTitle):
        record = _target(draft, change.type, change.id)
        record["name" if change.type == "organization" else "title"] = change.title
    elif isinstance(change, SetDescription):
        _target(draft, change.type, change.id)["description"] = change.description
    elif isinstance(change, SetLastModified):
        record = _target(draft, change.type, change.id)
        key = "metadata_modified_at" if change.type == "dataservice" else "last_modified"
        record[key] = change.value
        if isinstance(record.get("internal"), dict):
            record["internal"]["last_modified_internal"] = change.value
    elif isinstance(change, RemoveResource):
        dataset, position = draft.resource(change.resource_id)
        del dataset["resources"][position]
        if change.resource_id in draft.tables:  # not pop(): it would parse the table
            del draft.tables[change.resource_id]
            # api-tabular keeps a deleted resource's index entry, dated: its routes say 410.
            draft.tabular_deleted[change.resource_id] = (draft.now, dataset["id"])
        draft.downloads.pop(change.resource_id, None)
    elif isinstance(change, RemoveFromTabular):
        if change.resource_id not in draft.tables:
            raise OverlayError(f"resource {change.resource_id!r} is not in the Tabular API")
        del draft.tables[change.resource_id]
    elif isinstance(change, (ChangeColumn, DropColumn, SetRowCount, DropRows)):
        table = draft.table(change.resource_id)
        draft.tables[change.resource_id] = _change_table(table, change)


def _change_table(
    table: tabular.Table, change: ChangeColumn | DropColumn | SetRowCount | DropRows
) -> tabular.Table:
    columns = list(table.columns)
    rows = list(table.rows)
    if isinstance(change, SetRowCount):
        if change.rows > len(rows) and not rows:
            raise OverlayError("cannot grow an empty table")
        rows = [rows[i % len(rows)] for i in range(change.rows)] if rows else []
    elif isinstance(change, DropRows):
        try:
            filters = [
                tabular.make_filter(table, f.column, f.operator, str(f.value))
                for f in change.filters
            ]
        except tabular.QueryError as error:
            raise OverlayError(f"invalid filter: {error.body}") from None
        matching = tabular.matching_indices(table, filters)
        dropped = set(matching[: change.limit] if change.limit else matching)
        rows = [row for i, row in enumerate(rows) if i not in dropped]
    else:
        position = table.position(change.column)
        if position is None:
            raise OverlayError(f"the table has no column {change.column!r} (has {table.header})")
        if isinstance(change, DropColumn):
            del columns[position]
            rows = [row[:position] + row[position + 1 :] for row in rows]
        else:
            old = columns[position]
            new_type = change.type or old.type
            new = tabular.Column(
                change.rename_to or old.name, new_type, old.format if new_type == old.type else ""
            )
            if change.rename_to and change.rename_to in table.header:
                raise OverlayError(f"the table already has a column {change.rename_to!r}")
            columns[position] = new
            if new_type != old.type:
                rows = [_convert(row, position, new, number) for number, row in _numbered(rows)]
    return _rebuild(table, columns, rows)


def _numbered(rows: list[tuple[Any, ...]]) -> Iterable[tuple[int, tuple[Any, ...]]]:
    return enumerate(rows, start=1)


def _convert(row: tuple[Any, ...], position: int, column: tabular.Column, number: int) -> Any:
    text = tabular.text_value(row[position])
    try:
        value = tabular.parse_value(column, text)
    except tabular.ValueParseError:
        raise OverlayError(f"row {number}: {text!r} cannot become a {column.type} value") from None
    return (*row[:position], value, *row[position + 1 :])


def _rebuild(
    table: tabular.Table, columns: list[tabular.Column], rows: list[tuple[Any, ...]]
) -> tabular.Table:
    rebuilt = tabular.Table(
        name=table.name, columns=tuple(columns), rows=rows, separator=table.separator
    )
    # The download of a Tabular resource is its CSV: keep it consistent with the table.
    rebuilt.source_text = rebuilt.to_csv(range(len(rows)))
    return rebuilt
