"""The catalog lookup the scoring needs: a catalog object's id and slug, from either one.

Scoring accepts a slug wherever an id is expected (a cited page URL, an action argument) and
resolves it through the catalog the run used, never through what happened to be printed next to
an id in a tool result. The metrics stay pure: they only know this protocol; the pipeline passes
in an implementation backed by the twin's catalog store or the live API
(:mod:`datagouv_eval_pipeline.pipeline.experiment.catalog`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from datagouv_eval_pipeline.core.semantic import ActionInstance, TraceMapping
from datagouv_eval_pipeline.core.tasks import ExpectedSource, SourceType, TaskSpec

ObjectKind = Literal["dataset", "dataservice", "organization"]
"""Catalog object types that have a slug (resources have none)."""

OBJECT_KINDS: tuple[ObjectKind, ...] = ("dataset", "dataservice", "organization")

ID_ARGUMENTS: Mapping[str, ObjectKind] = {
    "dataset_id": "dataset",
    "dataservice_id": "dataservice",
    "organization_id": "organization",
}
"""Semantic action arguments that name a catalog object with a slug, and its kind."""


@dataclass(frozen=True, slots=True)
class CatalogObject:
    """The identity of one catalog object.

    Attributes:
        kind: ``dataset``, ``dataservice`` or ``organization``.
        id: Its id (24-hex object id or UUID).
        slug: Its slug, or None when the record has none.
    """

    kind: ObjectKind
    id: str
    slug: str | None


class CatalogLookup(Protocol):
    """Resolves an id or a slug to the catalog object it names."""

    def resolve(self, kind: ObjectKind, id_or_slug: str) -> CatalogObject | None:
        """Return the object whose id or slug is ``id_or_slug``, or None when there is none."""
        ...


@dataclass(frozen=True)
class StaticCatalogLookup:
    """A lookup over a fixed list of objects (tests, and catalogs read once).

    Attributes:
        objects: The objects; ids and slugs are matched case-insensitively.
    """

    objects: tuple[CatalogObject, ...] = ()
    _index: dict[tuple[str, str], CatalogObject] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        for item in self.objects:
            self._index[(item.kind, item.id.casefold())] = item
            if item.slug:
                self._index.setdefault((item.kind, item.slug.casefold()), item)

    @classmethod
    def of(cls, objects: Iterable[CatalogObject]) -> StaticCatalogLookup:
        """Build a lookup from any iterable of objects."""
        return cls(tuple(objects))

    def resolve(self, kind: ObjectKind, id_or_slug: str) -> CatalogObject | None:
        """Return the object whose id or slug is ``id_or_slug``, or None."""
        return self._index.get((kind, id_or_slug.strip().casefold()))


def with_catalog_slugs(task: TaskSpec, catalog: CatalogLookup | None) -> TaskSpec:
    """The task with each expected source's ``slug`` read from the catalog record of its id.

    A source the catalog does not know keeps its id only; a slug already in the spec is kept.
    """
    if catalog is None or not task.expected_sources:
        return task
    sources: list[ExpectedSource] = []
    changed = False
    for source in task.expected_sources:
        kind: ObjectKind = "dataset" if source.type == SourceType.DATASET else "dataservice"
        found = catalog.resolve(kind, source.id)
        if source.slug is None and found is not None and found.slug:
            sources.append(source.model_copy(update={"slug": found.slug}))
            changed = True
        else:
            sources.append(source)
    return task.model_copy(update={"expected_sources": sources}) if changed else task


def resolve_slug_arguments(
    instances: Sequence[ActionInstance], catalog: CatalogLookup | None
) -> tuple[ActionInstance, ...]:
    """The instances with every slug given for an id argument replaced by that object's id.

    A dataset fetched by its slug (``/api/1/datasets/{slug}/``, ``datagouv dataset get {slug}``)
    performed the same action as one fetched by id: the argument is resolved through the catalog
    so a strict id in the task matches. Values the catalog does not know are left as they are.
    """
    if catalog is None:
        return tuple(instances)
    out: list[ActionInstance] = []
    for instance in instances:
        resolved: dict[str, Any] = {}
        for name, value in instance.args.items():
            kind = ID_ARGUMENTS.get(name)
            if kind is None or not isinstance(value, str) or not value.strip():
                continue
            found = catalog.resolve(kind, value)
            if found is not None and found.id.casefold() != value.strip().casefold():
                resolved[name] = found.id
        if resolved:
            note = ", ".join(f"{name} resolved from its slug" for name in sorted(resolved))
            reason = f"{instance.reason}; {note}" if instance.reason else note
            instance = replace(instance, args={**instance.args, **resolved}, reason=reason)
        out.append(instance)
    return tuple(out)


def resolve_mapping_slugs(mapping: TraceMapping, catalog: CatalogLookup | None) -> TraceMapping:
    """The mapping with :func:`resolve_slug_arguments` applied to every call's instances."""
    if catalog is None:
        return mapping
    calls = tuple(
        replace(call, instances=resolve_slug_arguments(call.instances, catalog))
        for call in mapping.calls
    )
    if all(a.instances == b.instances for a, b in zip(calls, mapping.calls, strict=True)):
        return mapping
    return TraceMapping(
        calls=calls,
        registry_version=mapping.registry_version,
        mcp_version=mapping.mcp_version,
        warnings=mapping.warnings,
    )
