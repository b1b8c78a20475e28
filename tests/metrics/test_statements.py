"""``find_statement``: a figure stated about its entities, not negated, retracted or drowned."""

from __future__ import annotations

import pytest

from datagouv_eval_pipeline.core.metrics.statements import (
    MANY_CANDIDATES,
    Entity,
    Outcome,
    find_statement,
)

GERS = Entity("place", ("Gers", "32"))
MAY_2026 = Entity("year", ("2026",))


def outcome(text: str, expected: float, *entities: Entity, **options: object) -> Outcome:
    return find_statement(text, expected, entities=entities, **options).outcome  # type: ignore[arg-type]


def test_without_entities_any_plain_occurrence_counts() -> None:
    found = find_statement("Il y a 1 023 équipements.", 1023)
    assert found.passed
    assert found.stated is not None
    assert (found.stated.text, found.stated.start, found.reason) == (
        "1 023",
        7,
        "stated as '1 023'",
    )
    assert find_statement("Il y a 1 024 équipements.", 1023).outcome == Outcome.ABSENT


def test_tolerance_is_absolute() -> None:
    assert find_statement("143 885 immatriculations", 143885.1, 0.5).passed
    assert not find_statement("143 884 immatriculations", 143885.1, 0.5).passed


@pytest.mark.parametrize(
    "text",
    [
        "Le Gers compte 1 023 équipements.",
        "Dans le département 32, 1 023 équipements.",
        "| Gers | 1 023 |",
        "Équipements du Gers :\n- total : 1 023",
        "### Gers\n1 023 équipements.",
        "Le GERS (Occitanie) : 1 023.",
    ],
)
def test_an_entity_may_be_named_in_the_sentence_or_its_lead_in(text: str) -> None:
    assert outcome(text, 1023, GERS) == Outcome.STATED


@pytest.mark.parametrize(
    "text",
    [
        "Le Gers est en Occitanie. Le Lot compte 1 023 équipements.",
        "Il y a 1 032 équipements dans le Lot et 1 023 dans l'Aude.",  # "32" inside "1 032"
        "Équipements du Lot :\n- total : 1 023\n\nLe Gers est voisin.",
    ],
)
def test_an_entity_named_elsewhere_does_not_count(text: str) -> None:
    assert outcome(text, 1023, GERS) == Outcome.OFF_SUBJECT


def test_every_entity_is_needed() -> None:
    found = find_statement("En mai, le Gers a eu 3 418 visites.", 3418, entities=(GERS, MAY_2026))
    assert found.outcome == Outcome.OFF_SUBJECT
    assert found.reason == "'3 418' is stated, but its context does not name 2026"
    assert outcome("En mai 2026, le Gers a eu 3 418 visites.", 3418, GERS, MAY_2026) == (
        Outcome.STATED
    )


@pytest.mark.parametrize(
    "text",
    [
        "Le Gers ne compte pas 1 023 équipements.",
        "Le Gers compte 1 130 équipements et non 1 023.",
        "Le Gers compte 1 130 équipements, plutôt que 1 023.",
        "The Gers does not have 1,023 facilities.",
        "Le chiffre de 1 023 n'est pas le bon pour le Gers.",
        "For the Gers, 1023 is wrong.",
    ],
)
def test_a_negated_figure_does_not_count(text: str) -> None:
    assert outcome(text, 1023, GERS) == Outcome.NEGATED


@pytest.mark.parametrize(
    "text",
    [
        "Le Gers ne compte pas moins de 1 023 équipements.",
        "Je n'ai pas pu filtrer, mais le Gers compte 1 023 équipements.",
        "Le jeu n'est pas mis à jour : le Gers compte 1 023 équipements.",
        "Le Gers compte 1 023 équipements, qui ne sont pas tous ouverts au public.",
        "La surface de locaux non résidentiels du Gers est de 1 023 m².",
    ],
)
def test_a_negation_elsewhere_in_the_sentence_does_not_negate_the_figure(text: str) -> None:
    assert outcome(text, 1023, GERS) == Outcome.STATED


@pytest.mark.parametrize(
    "text",
    [
        "Le Gers compte 1 023 équipements… non, en fait 1 130.",
        "Le Gers compte 1 023, ou plutôt 1 130 équipements.",
        "Le Gers compte 1 023 équipements. Pardon : 1 130.",
        "The Gers has 1,023 facilities, sorry, I mean 1,130.",
    ],
)
def test_a_retracted_figure_does_not_count(text: str) -> None:
    assert outcome(text, 1023, GERS) == Outcome.RETRACTED


@pytest.mark.parametrize(
    "text",
    [
        # The cue is followed by a year, or by a figure too far from it to replace the first.
        "Le Gers compte 1 023 équipements. Pardon pour le retard : les données datent de 2024.",
        "Le Gers compte 1 023 équipements. Non, ce n'est pas peu : la Haute-Garonne en a 3 950.",
        # Restated after the correction: that occurrence counts.
        "Le Gers compte 1 130… non, en fait le Gers compte 1 023 équipements.",
    ],
)
def test_a_figure_that_is_not_retracted_counts(text: str) -> None:
    assert outcome(text, 1023, GERS) == Outcome.STATED


def dump(count: int) -> str:
    rows = [f"- Département {n} : {900 + 7 * n}" for n in range(1, count + 1)]
    return "Par département :\n" + "\n".join(rows) + "\n- Gers : 1 023"


def test_a_figure_among_many_of_the_same_kind_is_drowned() -> None:
    found = find_statement(dump(MANY_CANDIDATES), 1023, entities=(GERS,))
    assert found.outcome == Outcome.DROWNED
    assert (
        found.reason == f"'1 023' is stated among {MANY_CANDIDATES} other figures of the same kind"
    )
    assert found.candidates == tuple(str(900 + 7 * n) for n in range(1, MANY_CANDIDATES + 1))
    assert find_statement(dump(MANY_CANDIDATES - 1), 1023, entities=(GERS,)).passed
    assert find_statement(dump(MANY_CANDIDATES), 1023, entities=(GERS,), many=0).passed


def test_what_is_not_a_same_kind_candidate() -> None:
    text = (
        "En 2024 et 2025, le Gers comptait 1 023 équipements dont 73 bassins et 8 piscines ; "
        "la France en compte 330 000, soit 12 012 (2026) par région ; 7, 9, 5 et 3 stades."
    )
    # Years, figures more than 10 times smaller or larger, the other asked figures.
    found = find_statement(text, 1023, entities=(GERS,), others=(12012,))
    assert found.passed
    assert found.candidates == ()


def test_same_kind_figures_about_the_same_entities_are_not_candidates() -> None:
    text = "\n".join(f"- Gers, catégorie {n} : {500 + n}" for n in range(10)) + "\n- Gers : 1 023"
    assert find_statement(text, 1023, entities=(GERS,)).passed


def test_a_dump_on_one_line_is_drowned_too() -> None:
    figures = ", ".join(
        f"{name} {count}" for name, count in zip("ABCDEFG", range(901, 908), strict=True)
    )
    found = find_statement(f"Par département : {figures}, Gers 1 023.", 1023, entities=(GERS,))
    assert found.outcome == Outcome.DROWNED
    assert len(found.candidates) == 7


def test_a_table_row_naming_the_entities_holds_no_candidate() -> None:
    # Visits and downloads for three months and their totals: the rows name the year.
    table = (
        "| Mois | Visites | Téléchargements |\n|---|---|---|\n"
        "| 2026-03 | 12 000 | 5 012 |\n| 2026-04 | 11 500 | 4 882 |\n"
        "| 2026-05 | 12 500 | 4 050 |\n| Total | 36 000 | 13 944 |"
    )
    found = find_statement(table, 4882, entities=(MAY_2026,), others=(4050,))
    assert found.passed
    assert found.candidates == ("36 000", "13 944")
