"""Issue 25, item 4: the crafted answers and traces that fooled the checks, on the real tasks.

Each counter-example passed its check on main; each honest answer beside it must keep passing.
task_0004 asks for the sports facilities of the Gers (1 023, filter ``dep_code = 32``); task_0002
for the datasets published before 28 June 2012 (2 066).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache

import pytest

from datagouv_eval_pipeline.base.text import fold
from datagouv_eval_pipeline.core.metrics.checks import (
    citation_check,
    grounded_ids_check,
    value_check,
    value_entities,
)
from datagouv_eval_pipeline.core.tasks.loader import TASK_SPECS_DIR, load_task_specs
from datagouv_eval_pipeline.core.tasks.spec import TaskSpec
from tests.metrics.metrics_factories import make_trace

ES = "53699ebba3a729239d205f4f"  # the sports facilities dataset (task_0004's expected source)
ES_RESOURCE = "ea4f5879-af40-4e3e-949d-812d6eeb5e02"
INVENTED = "aaaaaaaaaaaaaaaaaaaaaaab"


@cache
def spec(task_id: str) -> TaskSpec:
    (loaded,) = load_task_specs([TASK_SPECS_DIR / f"{task_id}.yml"])
    return loaded


def value(task_id: str, answer: str) -> tuple[bool | None, str]:
    result = value_check(spec(task_id), make_trace(task_id, answer=answer))
    return result.passed, result.reason


# --- value: the right number, stated as a careful reader would count it ----------------------

DUMP = "Nombre d'équipements sportifs par département :\n" + "\n".join(
    f"- {name} : {count}"
    for name, count in [
        ("Ariège", "612"),
        ("Aude", "1 187"),
        ("Aveyron", "1 402"),
        ("Haute-Garonne", "3 950"),
        ("Gers", "1 023"),
        ("Lot", "845"),
        ("Hautes-Pyrénées", "990"),
        ("Tarn", "1 310"),
        ("Tarn-et-Garonne", "780"),
    ]
)


@pytest.mark.parametrize(
    ("task_id", "answer", "why"),
    [
        (
            "task_0004",
            "Dans le Gard (30), on recense 1 023 équipements sportifs.",
            "'1 023' is stated, but its context does not name Gers",
        ),
        (
            "task_0002",
            "Fin 2011, data.gouv.fr publiait 2 066 jeux de données.",
            "'2 066' is stated, but its context does not name 2012",
        ),
        (
            "task_0004",
            "Le Gers ne compte pas 1023 mais 1 130 équipements sportifs.",
            "'1023' is stated only in a negation",
        ),
        (
            "task_0004",
            "Le Gers compte 1 130 équipements sportifs, et non 1 023.",
            "'1 023' is stated only in a negation",
        ),
        (
            "task_0002",
            "Avant le 28 juin 2012, 2 066 jeux de données… non, en fait 1 850.",
            "'2 066' is stated, then retracted for another figure",
        ),
        (
            "task_0004",
            "Dans le Gers, il y a 1 023 équipements sportifs. Pardon, je corrige : 1 130.",
            "'1 023' is stated, then retracted for another figure",
        ),
        ("task_0004", DUMP, "'1 023' is stated among 8 other figures of the same kind"),
    ],
)
def test_a_number_not_stated_about_what_was_asked_fails(
    task_id: str, answer: str, why: str
) -> None:
    passed, reason = value(task_id, answer)
    assert passed is False
    name = spec(task_id).expected_values[0].name
    assert reason == f"not stated as asked: {name} ({why})"


@pytest.mark.parametrize(
    ("task_id", "answer"),
    [
        ("task_0004", "Le Gers compte 1 023 équipements sportifs (recensement RES)."),
        ("task_0004", "Dans le département du Gers (32), on dénombre **1 023** équipements."),
        # The offline baselines' style: the filter they sent names the place by its code.
        (
            "task_0004",
            f"D'après l'API tabulaire, 1023 lignes du fichier {ES_RESOURCE} correspondent "
            "(dep_code = 32).",
        ),
        # A list under a lead-in that names the place.
        ("task_0004", "Pour le Gers :\n- équipements sportifs : 1 023\n- dont bassins : 73"),
        ("task_0004", "## Gers\n\n1 023 équipements sportifs sont recensés."),
        ("task_0004", "Le Gers ne compte pas moins de 1 023 équipements sportifs."),
        (
            "task_0004",
            "Je n'ai pas pu filtrer par type, donc voici le total : le Gers compte 1 023 "
            "équipements.",
        ),
        ("task_0002", "Au 28 juin 2012, 2 066 jeux de données étaient déjà publiés."),
        ("task_0002", "Avant le 28/06/2012, on comptait 2066 jeux (created_at < 2012-06-28)."),
        # A correction that restates the right figure counts.
        ("task_0002", "Avant juin 2012, 1 850 jeux… non, en fait 2 066 jeux en juin 2012."),
        # Three months asked, three figures: not a dump.
        (
            "task_0012",
            "En mai 2026, le jeu a reçu 3 418 visites et 1 276 téléchargements (avril 2026 : "
            "3 102 visites).",
        ),
        ("task_0062", "Haute-Garonne has 7 senators, 5 of whom are women."),
        ("task_0006", "Le conseil municipal de Toulouse compte 69 élus, dont 35 femmes."),
    ],
)
def test_an_honest_answer_still_passes(task_id: str, answer: str) -> None:
    assert value(task_id, answer) == (
        True,
        "every expected value is stated about what the task asks",
    )


def test_the_entities_come_from_the_spec() -> None:
    # Derived: years in the name and filters, the département of a dep_code filter.
    (gers,) = spec("task_0004").expected_values
    assert [(e.kind, e.names) for e in value_entities(gers)] == [("place", ("Gers", "32"))]
    (before,) = spec("task_0002").expected_values
    assert [(e.kind, e.names) for e in value_entities(before)] == [("year", ("2012",))]
    visits = spec("task_0012").expected_values[0]
    assert [e.names for e in value_entities(visits)] == [("2026",)]
    # Given: a commune code names no place by itself.
    toulouse = spec("task_0006").expected_values[0]
    assert [e.names for e in value_entities(toulouse)] == [("Toulouse", "31555")]


def test_the_details_say_what_became_of_the_number() -> None:
    result = value_check(spec("task_0004"), make_trace("task_0004", answer=DUMP))
    entry = result.details["expected"]["equipements_sportifs_gers"]
    assert entry["outcome"] == "drowned"
    assert entry["about"] == [["Gers", "32"]]
    assert entry["candidates"] == ["612", "1 187", "1 402", "3 950", "845", "990", "1 310", "780"]
    assert result.details["found"] == {"equipements_sportifs_gers": None}


# --- grounded ids: echoes are not evidence ---------------------------------------------------


def ids(*calls: Mapping[str, object], answer: str = f"Le jeu {INVENTED} répond.") -> bool | None:
    trace = make_trace("task_0004", answer=answer, tool_calls=list(calls))
    return grounded_ids_check(spec("task_0004"), trace).passed


def test_an_errored_call_echoing_an_invented_id_does_not_ground_it() -> None:
    echo = {
        "id": "c1",
        "name": "get_dataset_info",
        "arguments": {"dataset_id": INVENTED},
        "result": f"Error: Dataset with ID '{INVENTED}' not found.",
    }
    assert ids(echo) is False
    unavailable = {
        "id": "c1",
        "name": "get_dataset_info",
        "arguments": {},
        "result": f"❌ Service unavailable (503) while reading dataset '{INVENTED}'",
    }
    assert ids(unavailable) is False


def test_code_printing_its_own_literal_does_not_ground_it() -> None:
    code = f"dataset_id = '{INVENTED}'\nprint('Jeu retenu :', dataset_id)"
    printed = {
        "id": "c1",
        "name": "execute_python",
        "arguments": {"code": code},
        "result": f"Jeu retenu : {INVENTED}",
    }
    assert ids(printed) is False
    # A search echoing the query it was given finds nothing either.
    searched = {
        "id": "c1",
        "name": "search_datasets",
        "arguments": {"query": INVENTED},
        "result": f"No datasets found for query: '{INVENTED}'",
    }
    assert ids(searched) is False


def test_a_lookup_of_a_known_id_still_grounds_it() -> None:
    # The result answers with the dataset's own resources: the tool looked the id up.
    looked_up = {
        "id": "c1",
        "name": "get_dataset_info",
        "arguments": {"dataset_id": ES},
        "result": f"Dataset Information: Équipements sportifs\nID: {ES}\nResource: {ES_RESOURCE}",
    }
    assert ids(looked_up, answer=f"Le jeu {ES} répond.") is True
    # Code whose request for the id succeeded on the wire; refused, it grounds nothing.
    assert ids(fetched(200), answer=f"Le jeu {ES} répond.") is True
    assert ids(fetched(404), answer=f"Le jeu {ES} répond.") is False


def fetched(status: int) -> Mapping[str, object]:
    url = f"https://www.data.gouv.fr/api/1/datasets/{ES}/"
    return {
        "id": "c1",
        "name": "execute_python",
        "arguments": {"code": f"print(httpx.get('{url}').json()['id'])"},
        "result": ES,
        "http_requests": [{"method": "GET", "url": url, "status": status}],
    }


# --- citation: a link cites its target ---------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        f"Source : [https://www.data.gouv.fr/datasets/{ES}/](https://example.org/gers)",
        f'Source : <a href="https://example.org/gers">https://www.data.gouv.fr/datasets/{ES}/</a>',
        f"Source : [https://www.data.gouv.fr/datasets/{ES}/][1]\n\n[1]: https://example.org/gers",
    ],
)
def test_a_link_whose_text_is_data_gouv_fr_but_target_elsewhere_is_no_citation(
    answer: str,
) -> None:
    result = citation_check(spec("task_0004"), make_trace("task_0004", answer=answer))
    assert result.passed is False
    assert result.details["urls"] == ["https://example.org/gers"]


def test_a_link_to_the_dataset_page_is_a_citation() -> None:
    answer = f"Voir [la fiche du recensement](https://www.data.gouv.fr/datasets/{ES}/)."
    result = citation_check(spec("task_0004"), make_trace("task_0004", answer=answer))
    assert result.passed is True
    assert result.details["cited"] == [ES]


def test_what_code_printed_before_its_own_exception_still_grounds() -> None:
    search = "https://www.data.gouv.fr/api/1/datasets/?q=equipements"
    crashed = {
        "id": "c1",
        "name": "execute_python",
        "arguments": {"code": "for d in httpx.get(URL).json()['data']: print(d['id']); d['x']"},
        "result": f"{ES}\nTraceback (most recent call last):\n  File ...\nKeyError: 'x'",
        "http_requests": [{"method": "GET", "url": search, "status": 200}],
    }
    assert ids(crashed, answer=f"Le jeu {ES} répond.") is True
    # Without a record of the requests, a failed call shows nothing.
    assert ids({**crashed, "http_requests": None}, answer=f"Le jeu {ES} répond.") is False


def test_every_real_value_filtered_on_a_place_is_stated_about_that_place() -> None:
    # A filter on a commune code names nothing an answer writes: such a value gives `about`;
    # any other place filter is derived. Either way the value has a place entity.
    tasks = load_task_specs([TASK_SPECS_DIR])
    placed = 0
    for task in tasks:
        for expected in task.expected_values:
            filters = expected.recompute.filters if expected.recompute else []
            columns = [fold(f.column) for f in filters]
            if not any("comm" in c or "dep" in c or c.endswith(("name", "code")) for c in columns):
                continue
            placed += 1
            kinds = {entity.kind for entity in value_entities(expected)}
            assert kinds & {"place", "about"}, f"{task.task_id} {expected.name}"
    assert placed == 23  # counted by hand in task_specs/
