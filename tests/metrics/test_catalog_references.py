"""Slugs resolved through the catalog, and expected values compared with their references."""

from __future__ import annotations

from datagouv_eval_pipeline.core.metrics.catalog import (
    CatalogObject,
    StaticCatalogLookup,
    resolve_slug_arguments,
    with_catalog_slugs,
)
from datagouv_eval_pipeline.core.metrics.checks import value_check
from datagouv_eval_pipeline.core.metrics.references import with_references
from datagouv_eval_pipeline.core.metrics.scorer import score_trace
from datagouv_eval_pipeline.core.tasks.references import Reference
from datagouv_eval_pipeline.core.tasks.spec import TaskSpec
from tests.metrics.metrics_factories import inst, make_task, make_trace, req

DS = "53699ebba3a729239d205f4f"
SLUG = "recensement-des-equipements-sportifs-espaces-et-sites-de-pratiques"
CATALOG = StaticCatalogLookup.of([CatalogObject("dataset", DS, SLUG)])


def _task() -> TaskSpec:
    return make_task(
        "get.dataset.info",
        [req("get.dataset.info", dataset_id=DS)],
        expected_values=[{"name": "gers", "value": 1023}],
        expected_sources=[{"type": "dataset", "id": DS}],
    )


def test_a_slug_given_for_an_id_argument_matches_the_strict_id() -> None:
    task = _task()
    by_slug = [inst("get.dataset.info", "c1", dataset_id=SLUG)]
    trace = make_trace(answer="1 023")
    # Without the catalog the slug is another value than the id: no match.
    assert score_trace(task, trace, instances=by_slug).minimal.action_recall.value == 0.0
    score = score_trace(task, trace, instances=by_slug, catalog=CATALOG)
    assert score.minimal.action_recall.value == 1.0
    (resolved,) = score.actions
    assert resolved.args["dataset_id"] == DS
    assert "resolved from its slug" in resolved.reason
    # An unknown slug and a non-id argument stay as they are.
    other = resolve_slug_arguments(
        [inst("get.dataset.info", "c2", dataset_id="inconnu", query=SLUG)], CATALOG
    )
    assert other[0].args == {"dataset_id": "inconnu", "query": SLUG}


def test_the_expected_source_gets_the_slug_of_its_catalog_record() -> None:
    task = _task()
    (source,) = with_catalog_slugs(task, CATALOG).expected_sources
    assert (source.id, source.slug) == (DS, SLUG)
    # The spec's hash does not depend on the filled slug being unset in YAML.
    assert task.spec_hash() == _task().spec_hash()
    assert with_catalog_slugs(task, None) is task


def _reference(value: float | None, error: str | None = None) -> Reference:
    return Reference(
        task_id="task_0900",
        name="gers",
        spec_value=1023,
        value=value,
        source="twin twin-2026-06-12 (Tabular API http://127.0.0.1/tabular/api/)",
        error=error,
    )


def test_the_value_check_follows_the_changed_count() -> None:
    # The regression of issue 10: the catalog now has 1 031 facilities in the Gers. The agent
    # that says so is right; the one repeating the spec's old 1 023 is not.
    task = _task()
    moved = {"gers": _reference(1031)}
    new = make_trace(answer="Le Gers compte 1 031 équipements.")
    old = make_trace(answer="Le Gers compte 1 023 équipements.")
    assert value_check(task, new).passed is False  # the literal alone marks it wrong
    result = value_check(task, new, moved)
    assert result.passed is True
    assert result.details["expected"]["gers"]["value"] == 1031
    assert result.details["expected"]["gers"]["spec_value"] == 1023
    assert result.details["expected"]["gers"]["source"].startswith("twin twin-2026-06-12")
    assert value_check(task, old, moved).passed is False
    # Through the scorer, with the provenance kept on the spec's own hash.
    score = score_trace(task, new, instances=[], references=list(moved.values()))
    assert score.checks["value"].passed is True
    assert score.provenance.spec_hash == task.spec_hash()


def test_a_failed_recompute_keeps_the_spec_value() -> None:
    task = _task()
    failed = {"gers": _reference(None, "resource gone")}
    result = value_check(task, make_trace(answer="1 023 équipements"), failed)
    assert result.passed is True
    assert result.details["expected"]["gers"]["source"] == "task spec"
    assert with_references(task, failed) is task
    moved = with_references(task, {"gers": _reference(1031)})
    assert [v.value for v in moved.expected_values] == [1031]
    assert [v.value for v in task.expected_values] == [1023]
