"""The datasets export (resource f868cca6…), derived from the real catalogue's facts."""

from __future__ import annotations

import itertools

from datagouv_eval_pipeline.world.catalogue import catalogue_export, tabular
from datagouv_eval_pipeline.world.catalogue.catalog import CatalogStore

EXPORT = "f868cca6-8da1-4369-a78d-47463f19a9a3"


def test_columns_are_udatas_dataset_csv_adapter() -> None:
    names = [c.name for c in catalogue_export.COLUMNS]
    # udata/core/dataset/csv.py: the adapter's fields, then metric.<key> per __metrics_keys__.
    assert names[:5] == ["id", "title", "slug", "acronym", "url"]
    assert names[names.index("harvest.backend") :][:3] == [
        "harvest.backend",
        "harvest.domain",
        "harvest.remote_id",
    ]
    assert names[-10:] == [
        "quality_score",
        "metric.discussions",
        "metric.discussions_open",
        "metric.reuses",
        "metric.reuses_by_months",
        "metric.dataservices",
        "metric.followers",
        "metric.followers_by_months",
        "metric.views",
        "metric.resources_downloads",
    ]
    assert len(names) == 47


def test_a_facts_row_is_written_as_udata_writes_it(store: CatalogStore) -> None:
    table = store.table(EXPORT)
    assert table is not None
    text = table.source_bytes().decode("utf-8")
    assert text.startswith('"id";"title";"slug";"acronym";"url";"organization";')
    line = next(ln for ln in text.split("\r\n") if ln.startswith('"6969c228770f993ed4817ef7"'))
    # From the facts line: DREAL Grand Est, lov2, granularity "other", 6 resources (2 main),
    # CSW harvest, quality 0.56, every counter 0; columns the facts lack are empty.
    assert line == (
        '"6969c228770f993ed4817ef7";"x_hamster_parcelles_prospectees_2025_r44";'
        '"x-hamster-parcelles-prospectees-2025-r44";"";'
        '"https://www.data.gouv.fr/datasets/x-hamster-parcelles-prospectees-2025-r44/";'
        '"DREAL Grand Est";"5883d10488ee3810d19b81e3";"";"";"";"";"";'
        '"Licence Ouverte / Open Licence version 2.0";"";"";"other";"";"";False;'
        '"2026-01-15T00:00:00";"2026-01-15T00:00:00";"";'
        '"donnees-ouvertes,nature-paysage-biodiversite-inventaire-nature-biodiversite";False;6;2;'
        '"esri shapefile (shp)";"CSW-ISO-19139";"";"";"";"";"";"";"";"";"";"0.56";'
        '0;"";0;"";0;0;"";0;0'
    )


def test_every_dataset_once_newest_id_first(store: CatalogStore) -> None:
    table = store.table(EXPORT)
    assert table is not None and store.catalogue is not None
    published = [d for d in store.datasets.values() if catalogue_export.published(d)]
    # Deleted and private hand-made records are not exported; archived ones are.
    assert len(published) == len(store.datasets) - 1
    assert len(table.rows) == len(store.catalogue) + len(published)
    ids = [row[0] for row in table.rows]
    assert ids == sorted(ids, reverse=True) and len(set(ids)) == len(ids)


def test_task_0002_count_and_archived_rows(store: CatalogStore) -> None:
    before = [("created_at", "strictly_less", "2012-06-28")]
    assert store.aggregate(EXPORT, before) == 2066
    table = store.table(EXPORT)
    assert table is not None
    archived = table.position("archived")
    assert archived is not None
    states = {"False" if row[archived] == "False" else "date" for row in table.rows}
    assert states == {"False", "date"}


def test_typed_rows_are_those_of_parsing_the_file(store: CatalogStore) -> None:
    assert store.catalogue is not None
    columns = store.catalogue.columns
    # A slice of the real facts keeps this quick; every hand-made record is included.
    part = {name: list(itertools.islice(columns[name], 3000)) for name in columns}
    records = list(store.datasets.values())
    built = catalogue_export.build_table("t", part, records)
    parsed = tabular.Table.from_csv(
        "t",
        catalogue_export.export_csv(part, records, chunk=700).decode("utf-8"),
        catalogue_export.COLUMNS,
        catalogue_export.SEPARATOR,
        origin="export",
    )
    assert built.rows == parsed.rows
    assert len(built.rows) == 3000 + len(store.datasets) - 1
