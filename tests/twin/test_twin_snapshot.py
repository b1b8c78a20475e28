"""Snapshot integrity, provenance, reproducibility and clear loading errors."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from datagouv_eval_pipeline.world.catalogue.catalog import (
    CatalogStore,
    SnapshotError,
    default_snapshots_dir,
)
from datagouv_eval_pipeline.world.snapshot_builder.build import write_snapshot

SNAPSHOTS = default_snapshots_dir()


def manifest() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((SNAPSHOTS / "manifest.json").read_text(encoding="utf-8"))
    return data


def current_entry() -> dict[str, Any]:
    data = manifest()
    entry: dict[str, Any] = next(
        s for s in data["snapshots"] if s["snapshot_id"] == data["current"]
    )
    return entry


def test_manifest_lists_every_file_with_its_sha256() -> None:
    entry = current_entry()
    assert entry["created_at"].endswith("Z")
    directory = SNAPSHOTS / entry["snapshot_id"]
    on_disk = {p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file()}
    assert on_disk == set(entry["files"])
    for name, meta in entry["files"].items():
        content = (directory / name).read_bytes()
        assert hashlib.sha256(content).hexdigest() == meta["sha256"], name
        assert len(content) == meta["bytes"]
        assert meta["provenance"] in ("per-record", "synthetic", "catalogue-facts")


def test_snapshot_is_small() -> None:
    # The real catalogue's facts (120,836 datasets) are 7.5 MB of it; the rest stays small.
    total = sum(p.stat().st_size for p in SNAPSHOTS.rglob("*") if p.is_file())
    assert total < 10 * 1024 * 1024
    catalogue = sum(p.stat().st_size for p in SNAPSHOTS.rglob("datasets.columns.gz"))
    assert total - catalogue < 2 * 1024 * 1024


def test_counts_meet_the_minima(store: CatalogStore) -> None:
    assert len(store.datasets) >= 60
    assert all(d["resources"] for d in store.datasets.values())
    assert len(store.dataservices) >= 12
    assert len(store.specs) >= 12
    assert len(store.tables) >= 12
    assert len(store.metrics["datasets"].rows) > 0 and len(store.metrics["resources"].rows) > 0
    assert store.crawler_exceptions
    referenced = {d["organization"]["id"] for d in store.datasets.values()}
    referenced |= {s["organization"]["id"] for s in store.dataservices.values()}
    assert referenced <= set(store.organizations)


def test_every_record_has_a_provenance(store: CatalogStore) -> None:
    records = current_entry()["records"]
    by_key = {(r["type"], r["id"]): r for r in records}
    assert len(by_key) == len(records)
    # The organizations of the real catalogue carry their provenance in the record; the
    # manifest describes them once, in its "catalogue" section.
    from_catalogue = {
        i for i, o in store.organizations.items() if o["_twin"]["provenance"] == "catalogue-facts"
    }
    assert len(from_catalogue) > 3000
    assert current_entry()["catalogue"]["source"]["sha256"]
    expected = (
        [("organization", i) for i in store.organizations if i not in from_catalogue]
        + [("dataset", i) for i in store.datasets]
        + [("resource", r["id"]) for d in store.datasets.values() for r in d["resources"]]
        + [("dataservice", i) for i in store.dataservices]
        + [("openapi_spec", i) for i in store.specs]
        + [("tabular_table", i) for i in store.tables]
    )
    for key in expected:
        assert key in by_key, key
        assert by_key[key]["provenance"] in ("real-metadata", "synthetic")
    assert by_key[("dataset", "55e4129788ee386899a46ec1")]["provenance"] == "real-metadata"
    # Every table is generated but the datasets export, derived from the real catalogue.
    export = "f868cca6-8da1-4369-a78d-47463f19a9a3"
    assert by_key[("tabular_table", export)]["provenance"] == "real-metadata"
    assert all(
        by_key[("tabular_table", i)]["provenance"] == "synthetic"
        for i in store.tables
        if i != export
    )


def test_real_ids_and_titles_of_the_reference(store: CatalogStore) -> None:
    transports = store.dataset("55e4129788ee386899a46ec1")
    assert transports is not None and transports["title"] == "Transports"
    found = store.resource("3b6b2281-b9d9-4959-ae9d-c2c166dff118")
    assert found is not None and found[0]["title"] == "Répertoire national des élus"
    ban = store.dataservice("672cf67802ef6b1be63b8975")
    assert ban is not None
    assert ban["machine_documentation_url"] == "https://data.geopf.fr/geocodage/openapi.yaml"
    assert store.specs["672cf67802ef6b1be63b8975"][0] == "yaml"
    for dataset_id in (
        "5d13a8b6634f41070a43dff3",
        "53699ebba3a729239d205f4f",
        "67450feab4e83dc75f7733d4",
        "5b7ffc618b4c4169d30727e0",
        "536c47d9a3a72933d8d1b3b2",
        "615bcdd729be9185b3b0681a",
        "5bc5df57634f417a900a5ed0",
        "689c42fa521ccf80ce954f83",
        "5c34c4d1634f4173183a64f1",
        "69f29c59706271dc9a2c49ba",
        "5eebbc067a14b6fecc9c9976",
    ):
        assert store.dataset(dataset_id) is not None, dataset_id
    for service_id in (
        "69402c6dd7dd82fdccc46429",
        "672cf66f5e554cca4a916026",
        "6661e60fda535e9773c510ca",
        "672cf684c3488a0c533f7094",
        "68629060ac286e24c94ba08c",
        "672cf9be6136ac3468829101",
        "672cfc6bfc959adaf03a4d00",
        "672cf9c3c3488a0c533f709f",
        "6690aa63b75843d0411ff6af",
        "672cfc39db38d1541be152f8",
        "672cf64ff8b5d52b76263394",
    ):
        assert store.dataservice(service_id) is not None, service_id


def test_distractors_exist(store: CatalogStore) -> None:
    assert sum(1 for d in store.datasets.values() if d["archived"]) >= 5
    assert any(d["deleted"] for d in store.datasets.values())
    palissy = store.resource("3e8ed2dd-4052-4f93-ad19-ef71016ab7b4")
    assert palissy is not None and palissy[1]["filesize"] == 360710144  # about 344 MiB
    assert store.table("3e8ed2dd-4052-4f93-ad19-ef71016ab7b4") is None
    assert store.table("42824627-145d-4f68-bd56-0b0aa04df392") is None
    assert "ea4f5879-af40-4e3e-949d-812d6eeb5e02" in store.crawler_exception_ids()
    titles = [d["title"] for d in store.datasets.values()]
    assert sum("Catalogue des données" in t for t in titles) >= 2
    assert any(s["archived_at"] for s in store.dataservices.values())


def _content(path: Path) -> bytes:
    data = path.read_bytes()
    # Compare what is inside the gzip files: another zlib may compress the same bytes differently.
    return gzip.decompress(data) if path.name.endswith(".gz") else data


def test_the_committed_snapshot_is_what_the_generator_builds(tmp_path: Path) -> None:
    committed = current_entry()
    entry = write_snapshot(tmp_path, committed["snapshot_id"])
    assert set(entry["files"]) == set(committed["files"])
    for name in entry["files"]:
        rebuilt = _content(tmp_path / committed["snapshot_id"] / name)
        assert rebuilt == _content(SNAPSHOTS / committed["snapshot_id"] / name), name
    assert entry["records"] == committed["records"]
    assert entry["counts"] == committed["counts"] and entry["facts"] == committed["facts"]


def _copy(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "snapshots"
    shutil.copytree(SNAPSHOTS, root)
    return root, root / current_entry()["snapshot_id"]


def test_a_corrupted_file_fails_loading_with_its_name(tmp_path: Path) -> None:
    root, directory = _copy(tmp_path)
    target = directory / "tables.json"
    target.write_bytes(target.read_bytes().replace(b'"rows"', b'"Rows"', 1))
    with pytest.raises(SnapshotError, match=r"tables\.json: sha256 mismatch"):
        CatalogStore.load(root)


def test_a_malformed_record_fails_loading_with_file_and_record(tmp_path: Path) -> None:
    root, directory = _copy(tmp_path)
    path = directory / "datasets.jsonl.gz"
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    record = json.loads(lines[3])
    del record["title"]
    lines[3] = json.dumps(record, ensure_ascii=False)
    content = gzip.compress(("\n".join(lines) + "\n").encode())
    path.write_bytes(content)
    data = manifest()
    for snapshot in data["snapshots"]:
        if snapshot["snapshot_id"] == data["current"]:
            snapshot["files"]["datasets.jsonl.gz"]["sha256"] = hashlib.sha256(content).hexdigest()
    (root / "manifest.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(SnapshotError) as error:
        CatalogStore.load(root)
    message = str(error.value)
    assert "datasets.jsonl.gz" in message and record["id"] in message and "'title'" in message


def test_missing_manifest_or_snapshot_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SnapshotError, match="no snapshot manifest"):
        CatalogStore.load(tmp_path)
    with pytest.raises(SnapshotError, match="'nope' is not listed"):
        CatalogStore.load(SNAPSHOTS, "nope")
