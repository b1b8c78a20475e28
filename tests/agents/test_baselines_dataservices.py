"""Baselines with the dataservice tools: when they search APIs, which one they pick, what they say.

Hand-written tool surfaces and results (no twin): the choice reads the whole listing (title,
tags, description) over every dataservice search made, and the answer states the address, the
spec, the description and the endpoints the tools returned.
"""

from __future__ import annotations

from datagouv_eval_pipeline.pipeline.agents.baselines import (
    Call,
    Observation,
    OneShotPolicy,
    Parallel,
    ThoroughPolicy,
    asks_for_api,
)
from datagouv_eval_pipeline.pipeline.agents.baselines.parsing import numbered_items, spec_endpoints
from datagouv_eval_pipeline.pipeline.agents.baselines.policy import listing_text, most_related
from datagouv_eval_pipeline.pipeline.agents.baselines.text import counted_noun
from datagouv_eval_pipeline.pipeline.agents.output import FinalAnswer
from tests.agents.baseline_helpers import catalog_tools, surface, tool

WITH_APIS = surface(
    *catalog_tools(),
    tool("search_dataservices", ["query"]),
    tool("get_dataservice_info", ["dataservice_id"]),
    tool("get_dataservice_openapi_spec", ["dataservice_id"]),
)
WITHOUT_APIS = surface(*catalog_tools())

QUESTION = "Quelle API publique permet de vérifier un numéro SIRET de fournisseur ?"
NOTHING = "No third-party APIs found for query: 'x'"
SIRET_SERVICES = """Found 2 third-party API(s) for query: 'siret'
Page 1 of results:

1. API Annuaire
   ID: 111111111111111111111111
   Description: Un annuaire des services de l'administration.
   Tags: annuaire, administration
   URL: https://www.data.gouv.fr/dataservices/111111111111111111111111

2. API Sirene open data
   ID: 222222222222222222222222
   Description: Recherche unitaire par SIREN ou SIRET.
   Base API URL: https://api.example.fr/sirene
   Tags: sirene, siret
   URL: https://www.data.gouv.fr/dataservices/222222222222222222222222
"""
INFO = """Third-party API information: API Sirene open data

ID: 222222222222222222222222
Description: Recherche unitaire par SIREN ou SIRET ; clé d'API gratuite.

Base API URL: https://api.example.fr/sirene
OpenAPI/Swagger spec: https://api.example.fr/sirene/openapi.json
"""
SPEC = """OpenAPI spec for: API Sirene open data

Endpoints (2 paths):
  GET /siret/{siret}
    Un établissement
      - siret [path, string] (required)
  GET /siret
    Recherche multicritère
      - q [query, string]
      - nombre [query, integer]
"""


def observed(tool_name: str, args: dict[str, str], text: str) -> Observation:
    return Observation(tool_name, args, text, False)


def test_what_asks_for_an_api() -> None:
    assert asks_for_api("Existe-t-il une API pour cela ?")
    assert asks_for_api("Y a-t-il un service public gratuit qui le fasse ?")
    assert asks_for_api("je voudrais récupérer automatiquement la liste")
    assert asks_for_api("I'd like to retrieve them programmatically.")
    # A service as a topic (a hospital department) asks for no API.
    assert not asks_for_api("une liste des services de neurologie des hôpitaux")


def test_counted_noun_is_what_the_question_counts() -> None:
    assert counted_noun("combien de conseillers municipaux siègent au conseil ?") == (
        "conseillers municipaux siègent"
    )
    assert counted_noun("Combien y a-t-il de maires dans le département ?") == "maires"
    assert counted_noun("How many new passenger cars were registered?") == "passenger cars"
    assert counted_noun("combien y en a-t-il ?") is None


def test_spec_endpoints_read_as_example_requests() -> None:
    assert spec_endpoints(SPEC) == ["GET /siret/{siret}", "GET /siret?q=…&nombre=…"]
    assert spec_endpoints(SPEC, limit=1) == ["GET /siret/{siret}"]
    assert spec_endpoints("no spec here") == []


def test_the_listing_beyond_the_title_breaks_ties() -> None:
    items = numbered_items(SIRET_SERVICES)
    # Neither title holds "siret"; the second one's tags and description do.
    assert [i.title for i in most_related(QUESTION, items, lambda i: i.title)] == [
        "API Annuaire",
        "API Sirene open data",
    ]
    ranked = most_related(QUESTION, items, lambda i: i.title, listing_text)
    assert [i.title for i in ranked] == ["API Sirene open data", "API Annuaire"]


def test_thorough_reads_the_best_listed_api_over_every_search() -> None:
    policy = ThoroughPolicy()
    history = [
        observed("search_datasets", {"query": "a"}, "No datasets found for query: 'a'"),
        observed("search_datasets", {"query": "b"}, "No datasets found for query: 'b'"),
        observed("search_datasets", {"query": "c"}, "No datasets found for query: 'c'"),
    ]
    while True:
        step = policy.decide(QUESTION, history, WITH_APIS)
        if not isinstance(step, Call) or step.tool != "search_datasets":
            break
        history.append(observed("search_datasets", step.args, "No datasets found"))
    assert isinstance(step, Call) and step.tool == "search_dataservices"
    # The first search finds nothing; the relaxed one lists two APIs; the listing relates.
    history.append(observed("search_dataservices", step.args, NOTHING))
    second = policy.decide(QUESTION, history, WITH_APIS)
    assert isinstance(second, Call) and second.tool == "search_dataservices"
    history.append(observed("search_dataservices", second.args, SIRET_SERVICES))
    read = policy.decide(QUESTION, history, WITH_APIS)
    assert isinstance(read, Parallel)
    assert [(c.tool, c.args) for c in read.calls] == [
        ("get_dataservice_info", {"dataservice_id": "222222222222222222222222"}),
        ("get_dataservice_openapi_spec", {"dataservice_id": "222222222222222222222222"}),
    ]
    history += [
        observed("get_dataservice_info", read.calls[0].args, INFO),
        observed("get_dataservice_openapi_spec", read.calls[1].args, SPEC),
    ]
    answer = policy.decide(QUESTION, history, WITH_APIS)
    assert isinstance(answer, FinalAnswer) and not answer.declined
    lines = answer.answer.split("\n")
    assert lines[0] == (
        "API : « API Sirene open data » "
        "(https://www.data.gouv.fr/dataservices/222222222222222222222222), "
        "adresse de base https://api.example.fr/sirene, "
        "spécification OpenAPI https://api.example.fr/sirene/openapi.json."
    )
    assert (
        lines[1]
        == "Sa fiche indique : « Recherche unitaire par SIREN ou SIRET ; clé d'API gratuite. »."
    )
    assert lines[2] == "Points d'accès : GET /siret/{siret} ; GET /siret?q=…&nombre=…."
    assert answer.ids_used == ["222222222222222222222222"]


def test_oneshot_searches_apis_only_when_asked_and_offered() -> None:
    policy = OneShotPolicy()
    first = policy.decide(QUESTION, [], WITH_APIS)
    assert isinstance(first, Call) and first.tool == "search_dataservices"
    answer = policy.decide(
        QUESTION, [observed("search_dataservices", first.args, SIRET_SERVICES)], WITH_APIS
    )
    assert isinstance(answer, FinalAnswer)
    assert answer.answer == (
        "L'API la plus pertinente trouvée sur data.gouv.fr est « API Sirene open data » : "
        "https://www.data.gouv.fr/dataservices/222222222222222222222222, "
        "adresse de base https://api.example.fr/sirene."
    )
    # Without the dataservice tools (MCP 0.2.19) the same question searches datasets.
    without = policy.decide(QUESTION, [], WITHOUT_APIS)
    assert isinstance(without, Call) and without.tool == "search_datasets"
    # A question that asks for no API searches datasets even when APIs are offered.
    plain = policy.decide("Où trouver la liste des écoles ?", [], WITH_APIS)
    assert isinstance(plain, Call) and plain.tool == "search_datasets"


def test_thorough_reads_no_api_sharing_no_topic_word() -> None:
    # Only an unrelated API listed (a broad last search): nothing is read, nothing claimed.
    unrelated = SIRET_SERVICES.split("\n2. ")[0]
    history = [
        observed("search_datasets", {"query": "a"}, "No datasets found"),
        observed("search_dataservices", {"query": "siret"}, unrelated),
    ]
    policy = ThoroughPolicy()
    step = policy.decide(QUESTION, history, WITH_APIS)
    while isinstance(step, Call) and step.tool in {"search_datasets", "search_dataservices"}:
        history.append(observed(step.tool, step.args, NOTHING))
        step = policy.decide(QUESTION, history, WITH_APIS)
    assert isinstance(step, FinalAnswer)
    assert step.declined and "API Annuaire" not in step.answer


def test_thorough_says_how_fresh_the_dataset_is_when_asked() -> None:
    search = """Found 1 dataset(s) for query: 'prenoms'
Page 1 of results:

1. Fichier des prénoms
   ID: 333333333333333333333333
   Resources: 0
   URL: https://www.data.gouv.fr/datasets/prenoms/
"""
    info = (
        "Dataset Information: Fichier des prénoms\n"
        "URL: https://www.data.gouv.fr/datasets/prenoms/\n"
        "Last updated: 2024-06-18T10:00:00+00:00\n"
        "Update frequency: annual\n"
    )
    listing = "Resources in dataset: Fichier des prénoms\nTotal resources: 0\n"

    def answer(question: str) -> str:
        history = [
            observed("search_datasets", {"query": "prenoms"}, search),
            observed("get_dataset_info", {"dataset_id": "333333333333333333333333"}, info),
            observed("list_dataset_resources", {"dataset_id": "3" * 24}, listing),
        ]
        step = ThoroughPolicy().decide(question, history, WITHOUT_APIS)
        assert isinstance(step, FinalAnswer)
        return step.answer

    fresh = "D'après sa fiche : fréquence de mise à jour annuelle (une fois par an), "
    fresh += "dernière mise à jour le 2024-06-18."
    assert answer("Le fichier des prénoms est-il mis à jour souvent ?").split("\n")[-1] == fresh
    assert answer("How often are the prénoms updated?").split("\n")[-1] == fresh
    assert fresh not in answer("Où trouver le fichier des prénoms ?")
