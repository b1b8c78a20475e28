"""The contract between the task specs and the twin: every fact a task states holds here.

Each active task's ``expected_values[].recompute`` is recomputed from the snapshot (through the
store and, for counts, through the Tabular API); every catalog id a task names exists; every
resource check (Tabular availability, freshness) agrees with the snapshot; and the metadata
facts listed in docs/tasks.md ("Contract for the twin") are true.
"""

from __future__ import annotations

from datetime import datetime
from urllib.parse import urlencode

import pytest
from starlette.testclient import TestClient

from datagouv_eval_pipeline.base.text import fold
from datagouv_eval_pipeline.core.tasks.loader import TASK_SPECS_DIR, load_task_specs
from datagouv_eval_pipeline.core.tasks.spec import (
    TIERS,
    CheckFn,
    ExpectedValue,
    SourceType,
    TaskSpec,
    TaskStatus,
)
from datagouv_eval_pipeline.world.catalogue.catalog import CatalogStore


def active_specs() -> list[TaskSpec]:
    if not any(TASK_SPECS_DIR.glob("task_*.yml")):
        return []
    return [s for s in load_task_specs([TASK_SPECS_DIR]) if s.meta.status == TaskStatus.ACTIVE]


SPECS = active_specs()
RECOMPUTED = [
    pytest.param(spec, value, id=f"{spec.task_id}:{value.name}")
    for spec in SPECS
    for value in spec.expected_values
    if value.recompute is not None
]


def test_there_are_active_tasks_with_recomputable_values() -> None:
    if not SPECS:
        pytest.skip("no task specs yet")
    assert RECOMPUTED


@pytest.mark.parametrize(("spec", "expected"), RECOMPUTED)
def test_expected_value_recomputes_from_the_snapshot(
    store: CatalogStore, client: TestClient, spec: TaskSpec, expected: ExpectedValue
) -> None:
    recompute = expected.recompute
    assert recompute is not None
    filters = [(f.column, f.operator, f.value) for f in recompute.filters]
    value = store.aggregate(recompute.resource_id, filters, recompute.aggregate, recompute.column)
    assert value is not None
    assert abs(value - expected.value) <= expected.tolerance
    if recompute.aggregate == "count":
        # The same count through the HTTP Tabular API (what an agent would see).
        params = [(f"{c}__{op}", str(v)) for c, op, v in filters] + [("page_size", "1")]
        response = client.get(
            f"/tabular/api/resources/{recompute.resource_id}/data/?{urlencode(params)}"
        )
        assert response.status_code == 200, response.text
        assert response.json()["meta"]["total"] == expected.value


def _named_ids(spec: TaskSpec) -> set[tuple[str, str]]:
    named: set[tuple[str, str]] = {(s.type.value, s.id) for s in spec.expected_sources}
    named |= {(r.type.value, r.id) for r in spec.resources}
    for tier in TIERS:
        for action in spec.chain(tier).required_actions:
            for arg in action.args:
                kind = {
                    "dataset_id": "dataset",
                    "resource_id": "resource",
                    "dataservice_id": "dataservice",
                }
                if arg.name in kind and arg.strict_value is not None:
                    named.add((kind[arg.name], str(arg.strict_value)))
    return named


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.task_id)
def test_every_catalog_id_a_task_names_exists(store: CatalogStore, spec: TaskSpec) -> None:
    lookups = {
        "dataset": store.dataset,
        "resource": store.resource,
        "dataservice": store.dataservice,
        "organization": store.organization,
    }
    for kind, ident in sorted(_named_ids(spec)):
        assert lookups[kind](ident) is not None, f"{spec.task_id}: {kind} {ident}"


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.task_id)
def test_resource_checks_agree_with_the_snapshot(
    store: CatalogStore, client: TestClient, spec: TaskSpec
) -> None:
    for ref in spec.resources:
        for check in ref.checks:
            where = f"{spec.task_id}: {check.fn.value} on {ref.type.value} {ref.id}"
            if check.fn == CheckFn.TABULAR_API_AVAILABLE:
                assert client.get(f"/tabular/api/resources/{ref.id}/").status_code == 200, where
            elif check.fn == CheckFn.TABULAR_API_UNAVAILABLE:
                assert client.get(f"/tabular/api/resources/{ref.id}/profile/").status_code == 404, (
                    where
                )
            elif check.fn == CheckFn.DOWNLOAD_URL_REACHABLE:
                response = client.head(f"/api/1/datasets/r/{ref.id}", follow_redirects=True)
                assert response.status_code == 200, where
            elif check.fn == CheckFn.UPDATE_DATE_MORE_RECENT_THAN:
                assert check.params.get("type") == "absolute", where
                record = (
                    store.resource(ref.id)[1]  # type: ignore[index]
                    if ref.type == SourceType.RESOURCE
                    else store.dataset(ref.id)
                )
                assert record is not None, where
                modified = datetime.fromisoformat(record["last_modified"]).date().isoformat()
                assert modified >= str(check.params["value"]), where
            elif check.fn == CheckFn.SAME_TITLE_DESCRIPTION:
                lookups = {
                    SourceType.DATASERVICE: store.dataservice,
                    SourceType.ORGANIZATION: store.organization,
                }
                record = lookups.get(ref.type, store.dataset)(ref.id)
                # an organization's title is its name
                assert record is not None and (record.get("title") or record.get("name")), where


# ---------------------------------------------------------------- docs/tasks.md metadata facts


def test_finess_announces_deprecation_and_no_specialty_dataset_exists(store: CatalogStore) -> None:
    finess = store.dataset("536c47d9a3a72933d8d1b3b2")
    assert finess is not None
    description = fold(finess["description"])
    assert "deprecie" in description and "ete 2026" in description
    for record in store.datasets.values():
        text = fold(record["title"] + " " + record["description"])
        assert "neurolog" not in text and "sclerose" not in text


def test_palissy_facts(store: CatalogStore) -> None:
    dataset = store.dataset("615bcdd729be9185b3b0681a")
    assert dataset is not None and dataset["frequency"] == "weekly"
    assert "vendredi" in dataset["description"]
    found = store.resource("3e8ed2dd-4052-4f93-ad19-ef71016ab7b4")
    assert found is not None and found[1]["last_modified"] >= "2026-01-01"
    assert any(
        "Mérimée" in d["description"] for d in store.datasets.values() if d["id"] != dataset["id"]
    )


def test_rne_facts(store: CatalogStore) -> None:
    rne = store.dataset("5c34c4d1634f4173183a64f1")
    assert rne is not None
    assert rne["organization"]["name"].startswith("Ministère de l'Intérieur")
    assert rne["frequency"] == "monthly" and rne["last_update"] >= "2025-01-01"
    assert "mis à jour progressivement" in rne["description"] and "mars 2026" in rne["description"]
    municipal = store.resource("3b6b2281-b9d9-4959-ae9d-c2c166dff118")
    intercommunal = store.resource("d5f400de-ae3f-4966-8cb6-a85c70c6c24a")
    assert municipal is not None and intercommunal is not None
    assert municipal[1]["last_modified"].startswith("2026-06-03")
    assert intercommunal[1]["last_modified"].startswith("2026-02-16")
    toulouse = store.aggregate(
        "3b6b2281-b9d9-4959-ae9d-c2c166dff118", [("Libellé de la commune", "exact", "Toulouse")]
    )
    assert toulouse == 69


def test_sirene_permits_and_lycee_facts(store: CatalogStore) -> None:
    sirene = store.dataset("5b7ffc618b4c4169d30727e0")
    assert sirene is not None and sirene["frequency"] == "monthly"
    assert sirene["last_update"] >= "2026-01-01"
    titles = {r["title"] for r in sirene["resources"]}
    assert {"StockEtablissement_utf8.zip", "StockUniteLegale_utf8.zip"} <= titles
    permits = store.dataset("689c42fa521ccf80ce954f83")
    assert permits is not None and len(permits["resources"]) == 4
    assert store.search_datasets("résultats baccalauréat lycées", page_size=3).total > 0


def test_metrics_facts(store: CatalogStore) -> None:
    rows = [row for row in store.metrics["datasets"].rows if row[0] == "53699ebba3a729239d205f4f"]
    by_month = {row[2]: (row[3], row[4]) for row in rows}
    assert by_month["2026-05"] == (3418, 1276)
    earlier = [by_month[m][0] for m in sorted(by_month)[-12:-1]]
    assert len(earlier) == 11 and all(1500 < v < 7000 for v in earlier)


def test_dataservice_facts(store: CatalogStore) -> None:
    entreprises = store.dataservice("672cf684c3488a0c533f7094")
    assert entreprises is not None
    text = entreprises["description"]
    assert "7 appels par seconde" in text and "sans authentification" in text
    assert "quotidiennement" in text and "diffusion partielle" in text
    ban = store.dataservice("672cf67802ef6b1be63b8975")
    assert ban is not None and "result_score" in ban["description"] and "sans" in ban["description"]
    sirene = store.dataservice("6661e60fda535e9773c510ca")
    assert sirene is not None and "gratuite" in sirene["description"]
    assert b"dateCreationEtablissement" in store.specs["6661e60fda535e9773c510ca"][1]
    assert b"matching_etablissements" in store.specs["672cf684c3488a0c533f7094"][1]
    assert b"annuaire" in store.specs["6690aa63b75843d0411ff6af"][1]
    assert b"radius" in store.specs["672cf64ff8b5d52b76263394"][1]
    certif = store.dataservice("68629060ac286e24c94ba08c")
    assert certif is not None and "jeton" in certif["description"]
