"""The deterministic judge decides a criterion from its assertion, kind by kind."""

from __future__ import annotations

from typing import Any

import pytest

from datagouv_eval_pipeline.core.judges.assertions import describe, evaluate
from datagouv_eval_pipeline.core.judges.deterministic import DeterministicJudge
from datagouv_eval_pipeline.core.judges.protocol import CriterionInput
from datagouv_eval_pipeline.core.judges.verdict import NEEDS_LLM, VerdictStatus
from datagouv_eval_pipeline.core.tasks.spec import Assertion, Criterion, TaskSpec

JUDGE = DeterministicJudge()
SPORTS = "53699ebba3a729239d205f4f"
API_ES = "672cf66f5e554cca4a916026"


def make_task(*criteria: dict[str, Any]) -> TaskSpec:
    return TaskSpec.model_validate(
        {
            "task_id": "task_0900",
            "version": 1,
            "task_name": "test",
            "meta": {"status": "active", "source": "synthetic"},
            "prompt": "Combien d'équipements sportifs dans le Gers en 2024 ?",
            "evaluation_criteria": {"minimal": list(criteria) or [{"criteria": "x"}]},
            "action_chain": {
                "minimal": {
                    "chain": "search.datasets",
                    "required_actions": [{"name": "search.datasets"}],
                }
            },
            "expected_values": [
                {"name": "equipements_gers", "value": 1023, "unit": "équipements"},
                {"name": "immatriculations", "value": 143885.1, "tolerance": 0.5},
            ],
            "expected_sources": [
                {"type": "dataset", "id": SPORTS, "slug": "recensement-des-equipements"},
                {"type": "dataservice", "id": API_ES},
            ],
        }
    )


def decide(assertion: dict[str, Any], answer: str) -> tuple[bool | None, str]:
    """The judge's verdict on one criterion carrying ``assertion``: passed (None if unscored)."""
    criterion = Criterion.model_validate({"criteria": "La réponse convient.", "assert": assertion})
    task = make_task({"criteria": "La réponse convient.", "assert": assertion})
    verdict = JUDGE.criterion_sync(CriterionInput(task.prompt, answer, criterion, [], task=task))
    if verdict.status is not VerdictStatus.OK:
        return None, verdict.reason
    return verdict.passed, verdict.reason


def outcome_of(assertion: dict[str, Any], answer: str) -> str:
    task = make_task()
    return evaluate(Assertion.model_validate(assertion), answer, task=task).reason


# --- contains ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("assertion", "answer", "passed"),
    [
        # One string: folded for case, accents and ligatures.
        ({"contains": "Annuaire Santé"}, "Voir l'ANNUAIRE SANTE (API FHIR).", True),
        ({"contains": "Annuaire Santé"}, "Voir l'annuaire des professionnels.", False),
        # A list: every string.
        ({"contains": ["FINESS", "télécharger"]}, "Le FINESS est à Télécharger.", True),
        ({"contains": ["FINESS", "télécharger"]}, "Le FINESS est en ligne.", False),
        ({"contains": {"any": ["Palissy", "objets mobiliers"]}}, "Les objets  mobiliers", True),
        ({"contains": {"any": ["Palissy", "objets mobiliers"]}}, "La base Mérimée.", False),
        ({"contains": {"none": ["/20", "mention bien"]}}, "Je ne peux pas le dire.", True),
        ({"contains": {"none": ["/20", "mention bien"]}}, "Il a eu 14/20.", False),
        ({"contains": "cœur"}, "Le COEUR du sujet.", True),
    ],
)
def test_contains(assertion: dict[str, Any], answer: str, passed: bool) -> None:
    assert decide(assertion, answer)[0] is passed


def test_the_reason_names_the_assertion_and_what_failed() -> None:
    passed, reason = decide({"contains": {"any": ["Palissy"]}}, "La base Mérimée.")
    assert passed is False
    assert reason == "hint failed: assert contains any ['Palissy']: none found"
    passed, reason = decide({"regex": r"\bPOP\b"}, "Consultez POP en ligne.")
    assert passed is True
    assert (
        reason == "every hint holds (assert regex '\\\\bPOP\\\\b'); only these hints were verified"
    )


# --- regex and equals ----------------------------------------------------------------------------


def test_regex_is_searched_in_the_answer_as_written() -> None:
    assertion = {"regex": r"fields=\S*population"}
    assert decide(assertion, "GET /communes?codePostal=32000&fields=nom,population")[0] is True
    assert decide(assertion, "Ajoutez le paramètre fields et demandez la population.")[0] is False
    # Case matters unless the pattern says otherwise.
    assert decide({"regex": "ars"}, "Contactez l'ARS.")[0] is False
    assert decide({"regex": "(?i)\\bars\\b"}, "Contactez l'ARS.")[0] is True


def test_equals_compares_the_whole_folded_answer() -> None:
    assertion = {"equals": ["oui", "yes"]}
    assert decide(assertion, "  **Oui.** ")[0] is True
    assert decide(assertion, "Oui, mais seulement en 2024.")[0] is False


# --- numbers -------------------------------------------------------------------------------------

GERS = {
    "number": {"expected": "equipements_gers", "unit": ["équipement"], "about": [["Gers", "32"]]}
}


@pytest.mark.parametrize(
    ("answer", "passed", "why"),
    [
        ("Le Gers compte 1 023 équipements sportifs.", True, "stated as '1 023'"),
        ("Dans le département 32, on recense 1023 équipements.", True, "stated as '1023'"),
        # The right number, about the wrong place: not what the question asks.
        ("Dans le Gard (30), on recense 1 023 équipements sportifs.", False, "lacks 'Gers'"),
        # Right place in another sentence: the number is not stated about it.
        ("Voici le Gers. On recense 1 023 équipements en France.", False, "lacks 'Gers'"),
        # Right number and place, another quantity.
        ("Le Gers compte 1 023 installations sportives.", False, "lacks unit"),
        ("Le Gers compte 1 024 équipements sportifs.", False, "no such number"),
        # A heading ending with ":" introduces the list item that states the number.
        ("Pour le Gers (32) :\n- 1 023 équipements sportifs", True, "stated as '1 023'"),
        # A filler after the number: the unit may come before it in the sentence.
        ("Équipements recensés dans le Gers : 1 023.", True, "stated as '1 023'"),
    ],
)
def test_a_number_must_be_stated_about_its_entities(answer: str, passed: bool, why: str) -> None:
    decided, reason = decide(GERS, answer)
    assert decided is passed
    assert "number equipements_gers about unit 'équipement', 'Gers|32'" in reason
    # The verdict's details keep what the assertion found, for passes too.
    assert why in outcome_of(GERS, answer)


def test_a_number_for_the_wrong_year_fails() -> None:
    assertion = {"number": {"value": 3418, "unit": ["visite"], "about": [["mai 2026", "2026-05"]]}}
    assert decide(assertion, "En mai 2026, la page a reçu 3 418 visites.")[0] is True
    assert decide(assertion, "Statistiques 2026-05 : 3418 visites et 1276 téléchargements.")[0]
    assert decide(assertion, "En mai 2025, la page a reçu 3 418 visites.")[0] is False
    # Two figures of the same sentence swapped: the word after 3 418 is its unit.
    assert decide(assertion, "Mai 2026 : 1 276 visites et 3 418 téléchargements.")[0] is False


def test_an_expected_value_brings_its_value_and_tolerance() -> None:
    assertion = {"number": {"expected": "immatriculations", "about": ["avril"]}}
    assert decide(assertion, "En avril 2026 : 143 885 immatriculations.")[0] is True
    assert decide(assertion, "En avril 2026 : 143 885,1 immatriculations.")[0] is True
    assert decide(assertion, "En avril 2026 : 143 887 immatriculations.")[0] is False


def test_unit_words_are_not_truncated() -> None:
    women = {"number": {"value": 35, "unit": ["femme", "conseillère"]}}
    assert decide(women, "Toulouse compte 69 élus, dont 35 femmes.")[0] is True
    assert decide(women, "Toulouse compte 69 élus, dont 35 conseillères.")[0] is True
    # "35 d'entre eux": fillers are skipped, the unit is found in the sentence.
    assert decide(women, "Sur 69 élus, 35 d'entre eux sont des femmes.")[0] is True
    assert decide(women, "Toulouse compte 35 conseillers municipaux, dont 69 femmes.")[0] is False


def test_numeric_range() -> None:
    share = {"numeric_range": {"min": 50, "max": 52, "about": [["femme", "parité"]]}}
    assert decide(share, "Les femmes représentent 50,7 % des élus.")[0] is True
    assert decide(share, "Les femmes représentent 48 % des élus.")[0] is False
    assert decide({"numeric_range": {"max": 10}}, "Il y en a 7.")[0] is True


# --- cites and declines --------------------------------------------------------------------------


def test_cites_reads_the_page_by_id_or_by_the_slug_of_an_expected_source() -> None:
    dataset = {"cites": {"dataset": SPORTS}}
    assert decide(dataset, f"Voir https://www.data.gouv.fr/datasets/{SPORTS}/")[0] is True
    assert decide(
        dataset, "Voir https://www.data.gouv.fr/fr/datasets/recensement-des-equipements/"
    )[0]
    assert decide(dataset, "Voir https://www.data.gouv.fr/datasets/equipements-sportifs-28/")[
        0
    ] is (False)
    # A dataservice page is not the dataset's page.
    service = {"cites": {"dataservice": API_ES}}
    assert decide(service, f"https://www.data.gouv.fr/dataservices/{API_ES}")[0] is True
    assert decide(service, f"https://www.data.gouv.fr/datasets/{API_ES}")[0] is False


def test_cites_a_url_prefix() -> None:
    assertion = {"cites": {"url": "https://data.geopf.fr/geocodage"}}
    assert decide(assertion, "Base : https://data.geopf.fr/geocodage/search?q=Auch")[0] is True
    assert decide(assertion, "Base : data.geopf.fr (géocodage)")[0] is False


def test_declines() -> None:
    assert decide({"declines": True}, "Je n'ai trouvé aucun jeu de données sur ce sujet.")[0]
    assert decide({"declines": True}, "Il n'existe pas de liste des services.")[0] is True
    assert decide({"declines": True}, "Voici la liste : CHU de Toulouse.")[0] is False
    assert decide({"declines": False}, "Voici la liste : CHU de Toulouse.")[0] is True


# --- combinations and the rest of the judge ------------------------------------------------------


def test_all_and_any_combine_parts() -> None:
    both = {"all": [{"declines": True}, {"contains": "neurolog"}]}
    assert decide(both, "Aucun jeu de données ne recense les services de neurologie.")[0] is True
    passed, reason = decide(both, "Aucun jeu de données ne recense les hôpitaux.")
    assert passed is False
    assert reason.endswith("all: contains all ['neurolog']: absent ['neurolog']")
    either = {"any": [{"contains": "Palissy"}, {"cites": {"dataset": SPORTS}}]}
    assert decide(either, "La base Palissy.")[0] is True
    assert decide(either, "La base Mérimée.")[0] is False


def test_the_assertion_replaces_the_implicit_value_link_but_keeps_explicit_hints() -> None:
    # Without an assertion the text "1023" links the expected value (unit "équipements").
    linked = Criterion(criteria="La réponse indique 1023 équipements pour le Gers.")
    task = make_task()
    answer = "Dans le Gard, on recense 1 023 équipements sportifs."
    assert JUDGE.criterion_sync(CriterionInput("", answer, linked, [], task=task)).passed is True
    asserted = linked.model_copy(update={"assertion": Assertion.model_validate(GERS)})
    assert JUDGE.criterion_sync(CriterionInput("", answer, asserted, [], task=task)).passed is False
    # Keywords still apply next to the assertion.
    both = Criterion.model_validate(
        {"criteria": "x", "keywords": ["Data ES"], "assert": {"contains": "Gers"}}
    )
    verdict = JUDGE.criterion_sync(
        CriterionInput("", "Le Gers compte 1 023 équipements.", both, [], task=task)
    )
    assert verdict.passed is False
    assert verdict.reason == "hint failed: keyword 'Data ES': absent"


def test_a_criterion_without_assertion_or_hint_is_still_left_to_an_llm() -> None:
    verdict = JUDGE.criterion_sync(
        CriterionInput("", "Réponse.", Criterion(criteria="Prudente."), [], task=None)
    )
    assert verdict.status is VerdictStatus.UNSCORED
    assert verdict.error == NEEDS_LLM


def test_an_expected_value_without_the_task_is_undecided() -> None:
    assertion = Assertion.model_validate({"number": {"expected": "equipements_gers"}})
    outcome = evaluate(assertion, "1 023 équipements", task=None)
    assert outcome.holds is None
    assert describe(assertion) == "number equipements_gers"
