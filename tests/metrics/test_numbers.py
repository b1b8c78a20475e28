from __future__ import annotations

import pytest

from datagouv_eval_pipeline.core.metrics.numbers import find_value, read_numbers


def values(text: str) -> list[tuple[float, ...]]:
    return [reading.values for reading in read_numbers(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2076", [(2076.0,)]),
        ("2 076 jeux", [(2076.0,)]),  # ordinary space between thousands
        ("1\u00a0023", [(1023.0,)]),  # no-break space
        ("1\u202f023", [(1023.0,)]),  # narrow no-break space (French typography)
        ("1\u2009023", [(1023.0,)]),  # thin space
        ("3 500 000 habitants", [(3500000.0,)]),
        ("6,3 %", [(6.3,)]),  # decimal comma
        ("1 023,5", [(1023.5,)]),  # thousands space + decimal comma
        ("12,500", [(12.5, 12500.0)]),  # ambiguous: French decimal or English thousands
        ("1.023", [(1.023, 1023.0)]),  # ambiguous: English decimal or dotted thousands
        ("0,500", [(0.5,)]),  # a leading 0 cannot start a thousands group
        ("12,5000", [(12.5,)]),  # 4 digits after the comma: decimal only
        ("1234,567", [(1234.567,)]),  # 4 digits before: not a thousands group
        ("12,500.75", [(12500.75,)]),  # both marks: the last one is the decimal
        ("1.234,5", [(1234.5,)]),
        ("1.234.567", [(1234567.0,)]),
        ("1,234,567", [(1234567.0,)]),
        ("1.2.3", []),  # a version, not a number
        ("-5 et \u22123", [(-5.0,), (-3.0,)]),
        ("2,1 millions", [(2.1, 2100000.0)]),
        ("3 milliards", [(3.0, 3e9)]),
    ],
)
def test_read_numbers(text: str, expected: list[tuple[float, ...]]) -> None:
    assert values(text) == [tuple(pytest.approx(v) for v in group) for group in expected]


def test_year_then_grouped_number_stay_apart() -> None:
    # "2012" has 4 digits so it cannot start a thousands group; "2 076" is one number.
    assert values("avant 2012 2 076 jeux") == [(2012.0,), (2076.0,)]


@pytest.mark.parametrize(
    "text",
    [
        "task_0002",
        "v0.2.26",
        "id 5d13a8b6634f41070a43dff3",
        "ressource f868cca6-8da1-4369-a78d-47463f19a9a3",
        "https://www.data.gouv.fr/datasets/2076",
        "www.example.org/2076",
    ],
)
def test_digits_in_words_ids_and_urls_are_not_numbers(text: str) -> None:
    assert values(text) == []


def test_find_value_uses_tolerance_and_reports_the_text() -> None:
    answer = "Il y avait 2\u202f076 jeux de données avant le 28 juin 2012."
    found = find_value(answer, 2076)
    assert found is not None and found.text == "2\u202f076"
    assert find_value(answer, 2080) is None
    # |2076 - 2080| = 4 <= 5
    assert find_value(answer, 2080, tolerance=5) is not None


def test_find_value_accepts_either_reading_of_an_ambiguous_number() -> None:
    assert find_value("environ 12,500 lignes", 12500) is not None
    assert find_value("taux de 12,500 %", 12.5) is not None
    assert find_value("taux de 12,500 %", 125) is None
