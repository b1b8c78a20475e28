from __future__ import annotations

import json
from typing import Any

import pytest

from datagouv_eval_pipeline.core.metrics.catalog import CatalogObject, StaticCatalogLookup
from datagouv_eval_pipeline.core.metrics.checks import (
    behaviour_check,
    citation_check,
    detect_decline,
    extract_urls,
    grounded_ids_check,
    tools_check,
    value_check,
)
from datagouv_eval_pipeline.core.semantic.instances import CallCategory
from datagouv_eval_pipeline.core.tasks.spec import TaskSpec
from tests.metrics.metrics_factories import inst, make_task, make_trace, req

DS = "5d13a8b6634f41070a43dff3"
RID = "f868cca6-8da1-4369-a78d-47463f19a9a3"
DSV = "68629060ac286e24c94ba08c"


def task(**extra: Any) -> TaskSpec:
    return make_task(
        "search.datasets > get.dataset.info > get.data",
        [req("search.datasets"), req("get.dataset.info", dataset_id=DS), req("get.data")],
        **extra,
    )


# --- tools -------------------------------------------------------------------------------------


def test_tools_passes_when_every_required_action_is_done_with_mcp() -> None:
    trace = make_trace(capabilities=["mcp"])
    instances = [inst("search.datasets"), inst("get.dataset.info"), inst("get.data")]
    result = tools_check(task(), trace, instances)
    assert result.passed is True
    assert result.details["expected"] == {
        "get.data": ["mcp"],
        "get.dataset.info": ["mcp"],
        "search.datasets": ["mcp"],
    }


def test_tools_fails_when_a_reachable_action_is_missing() -> None:
    trace = make_trace(capabilities=["mcp", "web_search"])
    result = tools_check(task(), trace, [inst("search.datasets"), inst("get.dataset.info")])
    assert result.passed is False
    assert result.details["missing"] == ["get.data"]


def test_tools_any_granted_family_satisfies_an_action() -> None:
    trace = make_trace(capabilities=["mcp", "code"])
    http = CallCategory.DATAGOUV_API_HTTP
    instances = [
        inst("search.datasets"),
        inst("get.dataset.info", category=http),
        inst("get.data", category=http),
    ]
    result = tools_check(task(), trace, instances)
    assert result.passed is True
    assert result.details["expected"]["get.data"] == ["api", "mcp"]


def test_tools_cli_cannot_search_so_search_is_not_expected_from_it() -> None:
    trace = make_trace(capabilities=["datagouv-cli"])
    cli = CallCategory.DATAGOUV_CLI
    instances = [inst("get.dataset.info", category=cli), inst("get.data", category=cli)]
    result = tools_check(task(), trace, instances)
    assert result.passed is True
    assert result.details["unreachable"] == ["search.datasets"]


def test_tools_errored_call_does_not_count() -> None:
    trace = make_trace(capabilities=["mcp"])
    instances = [
        inst("search.datasets"),
        inst("get.dataset.info"),
        inst("get.data", errored=True),
    ]
    assert tools_check(task(), trace, instances).passed is False


def test_tools_does_not_apply_without_catalog_tools() -> None:
    result = tools_check(task(), make_trace(capabilities=["web_search"]), [])
    assert result.passed is None
    assert "capabilities" in result.reason


def test_tools_does_not_apply_without_required_actions() -> None:
    no_actions = make_task("search.datasets", [])
    assert tools_check(no_actions, make_trace(capabilities=["mcp"]), []).passed is None


# --- value -------------------------------------------------------------------------------------


def test_value_found_in_french_format() -> None:
    spec = task(expected_values=[{"name": "count", "value": 2076}])
    trace = make_trace(answer="Il y avait 2\u00a0076 jeux de données.")
    result = value_check(spec, trace)
    assert result.passed is True
    assert result.details["found"] == {"count": "2\u00a0076"}


def test_value_every_expected_number_must_be_found() -> None:
    spec = task(
        expected_values=[
            {"name": "count", "value": 2076},
            {"name": "rate", "value": 6.1, "tolerance": 0.05},
        ]
    )
    # 6,3 is 0.2 away from 6.1 > 0.05
    result = value_check(spec, make_trace(answer="2 076 jeux, soit 6,3 %"))
    assert result.passed is False
    assert result.details["found"] == {"count": "2 076", "rate": None}


def test_value_does_not_apply_without_values_or_for_a_decline() -> None:
    assert value_check(task(), make_trace(answer="2076")).passed is None
    decline = task(expected_behaviour="decline", expected_values=[{"name": "n", "value": 1}])
    assert value_check(decline, make_trace(answer="1")).passed is None


# --- citation ----------------------------------------------------------------------------------


def test_extract_urls_strips_trailing_punctuation_and_markdown() -> None:
    text = f"Voir [le jeu](https://www.data.gouv.fr/datasets/{DS}/). Et www.insee.fr, aussi."
    assert extract_urls(text) == [f"https://www.data.gouv.fr/datasets/{DS}/", "www.insee.fr"]


def test_citation_any_url_when_no_source_is_expected() -> None:
    assert citation_check(task(), make_trace(answer="Source : https://x.org/a")).passed is True
    no_url = citation_check(task(), make_trace(answer="Source : le catalogue"))
    assert no_url.passed is False


@pytest.mark.parametrize(
    "url",
    [
        f"https://www.data.gouv.fr/datasets/{DS}",
        f"https://www.data.gouv.fr/fr/datasets/{DS}/",
        f"http://data.gouv.fr/datasets/{DS.upper()}/#resources",
        "https://www.data.gouv.fr/datasets/catalogue-des-donnees-de-data-gouv-fr/",
    ],
)
def test_citation_expected_dataset_by_id_or_known_slug(url: str) -> None:
    spec = task(expected_sources=[{"type": "dataset", "id": DS}])
    aliases = {DS: ["catalogue-des-donnees-de-data-gouv-fr"]}
    assert citation_check(spec, make_trace(answer=f"Source : {url}"), aliases).passed is True


def test_citation_wrong_kind_or_other_dataset_fails() -> None:
    spec = task(expected_sources=[{"type": "dataservice", "id": DSV}])
    trace = make_trace(answer=f"https://www.data.gouv.fr/datasets/{DSV}/")  # dataset path
    result = citation_check(spec, trace)
    assert result.passed is False
    assert result.details["cited"] == []
    ok = make_trace(answer=f"https://www.data.gouv.fr/dataservices/{DSV}/")
    assert citation_check(spec, ok).passed is True


def test_citation_prefers_structured_urls() -> None:
    spec = task(expected_sources=[{"type": "dataset", "id": DS}])
    trace = make_trace(
        answer=f"https://www.data.gouv.fr/datasets/{DS}/",
        cited_urls=["https://www.insee.fr/"],
    )
    result = citation_check(spec, trace)
    assert result.passed is False
    assert result.details["origin"] == "structured cited_urls"


CATALOG = StaticCatalogLookup.of(
    [
        CatalogObject("dataset", DS, "catalogue-des-donnees-de-data-gouv-fr"),
        CatalogObject("dataset", "000000000000000000000000", "autre-jeu"),
    ]
)


def test_citation_takes_the_slug_from_the_catalog_record() -> None:
    spec = task(expected_sources=[{"type": "dataset", "id": DS}])
    by_slug = make_trace(
        answer="Source : https://www.data.gouv.fr/datasets/catalogue-des-donnees-de-data-gouv-fr/"
    )
    # Without a catalog the slug is unknown: only the id counts.
    assert citation_check(spec, by_slug).passed is False
    result = citation_check(spec, by_slug, catalog=CATALOG)
    assert result.passed is True
    assert result.details["accepted_names"][DS] == [DS, "catalogue-des-donnees-de-data-gouv-fr"]
    other = by_slug.model_copy(update={"answer": "https://www.data.gouv.fr/datasets/autre-jeu"})
    assert citation_check(spec, other, catalog=CATALOG).passed is False


def test_citation_takes_the_slug_filled_on_the_expected_source() -> None:
    spec = task(
        expected_sources=[
            {"type": "dataset", "id": DS, "slug": "catalogue-des-donnees-de-data-gouv-fr"}
        ]
    )
    trace = make_trace(
        answer="https://www.data.gouv.fr/fr/datasets/catalogue-des-donnees-de-data-gouv-fr"
    )
    assert citation_check(spec, trace).passed is True


# The regression of issue 10: a code cell printed the search results as one JSON block, the
# expected national census id and the Occitanie regional dataset's slug side by side. Learning
# slugs by co-occurrence made the Occitanie page a citation of the national dataset.
NATIONAL = "53699ebba3a729239d205f4f"
NATIONAL_SLUG = "recensement-des-equipements-sportifs-espaces-et-sites-de-pratiques"
OCCITANIE = "67450feab4e83dc75f7733d4"
OCCITANIE_SLUG = "equipements-sportifs-et-lieux-de-pratiques-en-region-occitanie"
SPORTS = StaticCatalogLookup.of(
    [
        CatalogObject("dataset", NATIONAL, NATIONAL_SLUG),
        CatalogObject("dataset", OCCITANIE, OCCITANIE_SLUG),
    ]
)


def _occitanie_trace(answer: str) -> Any:
    printed = json.dumps(
        [
            {"id": NATIONAL, "slug": NATIONAL_SLUG, "title": "Recensement des équipements"},
            {
                "id": OCCITANIE,
                "slug": OCCITANIE_SLUG,
                "title": "Equipements sportifs en région Occitanie",
                "page": f"https://www.data.gouv.fr/datasets/{OCCITANIE_SLUG}/",
            },
        ],
        ensure_ascii=False,
    )
    return make_trace(
        answer=answer,
        tool_calls=[{"id": "c1", "name": "execute_python", "result": printed}],
        capabilities=["code"],
    )


def test_citation_of_the_occitanie_dataset_is_not_a_citation_of_the_national_one() -> None:
    spec = task(expected_sources=[{"type": "dataset", "id": NATIONAL}])
    wrong = _occitanie_trace(f"Source : https://www.data.gouv.fr/datasets/{OCCITANIE_SLUG}/")
    assert citation_check(spec, wrong).passed is False
    assert citation_check(spec, wrong, catalog=SPORTS).passed is False
    right = _occitanie_trace(f"Source : https://www.data.gouv.fr/datasets/{NATIONAL_SLUG}/")
    assert citation_check(spec, right, catalog=SPORTS).passed is True


def test_citation_does_not_apply_to_a_decline_task() -> None:
    spec = task(expected_behaviour="decline")
    assert citation_check(spec, make_trace(answer="rien")).passed is None


# --- behaviour ---------------------------------------------------------------------------------


def test_behaviour_uses_the_structured_flag_first() -> None:
    # the text sounds like a decline, but the structured flag says it answered
    trace = make_trace(answer="Je n'ai pas trouvé mieux que 2076.", declined=False)
    result = behaviour_check(task(), trace)
    assert result.passed is True
    assert result.details["source"] == "structured declined flag"


@pytest.mark.parametrize(
    "answer",
    [
        "Je n\u2019ai pas trouvé de jeu de données sur ce sujet.",
        "JE NE SUIS PAS EN MESURE de répondre.",
        "Aucun jeu de données ne recense les services de neurologie.",
        "I could not find any dataset about this.",
    ],
)
def test_behaviour_heuristic_detects_declines(answer: str) -> None:
    assert detect_decline(answer) is not None
    decline_task = task(expected_behaviour="decline")
    assert behaviour_check(decline_task, make_trace(answer=answer)).passed is True
    assert behaviour_check(task(), make_trace(answer=answer)).passed is False


def test_behaviour_answer_without_decline_phrase() -> None:
    trace = make_trace(answer="Il y avait 2 076 jeux de données.")
    assert behaviour_check(task(), trace).passed is True
    decline_task = task(expected_behaviour="decline")
    result = behaviour_check(decline_task, trace)
    assert result.passed is False
    assert result.reason == "answered a question it should have declined"


def test_behaviour_empty_answer_fails() -> None:
    assert behaviour_check(task(), make_trace(answer="  ")).passed is False


# --- grounded ids ------------------------------------------------------------------------------


def test_grounded_ids_seen_in_results() -> None:
    trace = make_trace(
        answer=f"Jeu {DS.upper()}, ressource {RID}.",
        tool_calls=[
            {"id": "c1", "name": "search_datasets", "result": f"ID: {DS}"},
            {"id": "c2", "name": "list_dataset_resources", "result": f"- {RID} (csv)"},
        ],
    )
    result = grounded_ids_check(task(), trace)
    assert result.passed is True
    assert result.details["stated"] == sorted([DS, RID])


def test_grounded_ids_an_invented_id_tried_in_code_is_not_grounded() -> None:
    # The regression of issue 10: the agent invented an id, tried it in its code (404) and
    # stated it. Its own arguments are not evidence.
    invented = "0123456789abcdef01234567"
    code = f"import requests\nprint(requests.get('https://www.data.gouv.fr/api/1/datasets/{invented}/'))"
    trace = make_trace(
        answer=f"Le jeu {invented} répond à la question.",
        tool_calls=[
            {
                "id": "c1",
                "name": "execute_python",
                "arguments": {"code": code},
                "result": "<Response [404]>",
                "error": False,
            }
        ],
        capabilities=["code"],
    )
    result = grounded_ids_check(task(), trace)
    assert result.passed is False
    assert result.details["ungrounded"] == [invented]


def test_grounded_ids_flags_an_invented_id() -> None:
    invented = "0123456789abcdef01234567"
    trace = make_trace(
        answer=f"Voir https://www.data.gouv.fr/datasets/{invented}/",
        tool_calls=[{"id": "c1", "name": "search_datasets", "result": f"ID: {DS}"}],
    )
    result = grounded_ids_check(task(), trace)
    assert result.passed is False
    assert result.details["ungrounded"] == [invented]


def test_grounded_ids_from_the_prompt_count() -> None:
    spec = task(prompt=f"Que contient le jeu {DS} ?")
    assert grounded_ids_check(spec, make_trace(answer=f"Le jeu {DS} contient...")).passed is True


def test_grounded_ids_does_not_apply_without_ids() -> None:
    assert grounded_ids_check(task(), make_trace(answer="2 076 jeux")).passed is None


TWIN = {
    "site": "http://127.0.0.1:8765/",
    "datagouv_api": "http://127.0.0.1:8765/api/",
    "tabular_api": "http://127.0.0.1:8765/tabular/api/",
    "metrics_api": "http://127.0.0.1:8765/metrics/api/",
    "crawler_api": "http://127.0.0.1:8765/crawler/api/",
}


def test_citation_reads_the_twin_page_urls_as_data_gouv_fr_pages() -> None:
    spec = task(expected_sources=[{"type": "dataset", "id": DS}])
    cited = make_trace(
        cited_urls=[f"http://127.0.0.1:8765/fr/datasets/{DS}/"],
        provenance={"base_urls": TWIN},
    )
    result = citation_check(spec, cited)
    assert result.passed is True
    assert result.details["cited"] == [DS]
    # Another local server is not the twin the run was given: no alias applies.
    elsewhere = make_trace(
        cited_urls=[f"http://127.0.0.1:9999/datasets/{DS}/"], provenance={"base_urls": TWIN}
    )
    assert citation_check(spec, elsewhere).passed is False


def test_citation_resolves_a_twin_page_by_slug_through_the_catalog() -> None:
    slug = "catalogue-des-donnees-de-data-gouv-fr"
    result_text = f"ID: {DS}\nURL: http://127.0.0.1:8765/datasets/{slug}/\n"
    trace = make_trace(
        answer=f"Source : http://127.0.0.1:8765/datasets/{slug}/",
        tool_calls=[{"id": "c1", "name": "get_dataset_info", "result": result_text}],
        provenance={"base_urls": TWIN},
    )
    spec = task(expected_sources=[{"type": "dataset", "id": DS}])
    assert citation_check(spec, trace).passed is False  # the tool result teaches nothing
    assert citation_check(spec, trace, catalog=CATALOG).passed is True
