"""Criterion assertions (the ``assert`` key): valid shapes load, bad ones are located errors."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from datagouv_eval_pipeline.base import vocabulary
from datagouv_eval_pipeline.core.tasks.errors import SpecError, TaskSpecErrors
from datagouv_eval_pipeline.core.tasks.loader import load_task_specs
from datagouv_eval_pipeline.core.tasks.spec import ContainsWords, TaskSpec

VALID: dict[str, Any] = {
    "task_id": "task_0001",
    "version": 1,
    "task_name": "Équipements sportifs du Gers",
    "meta": {"status": "active", "source": "forum"},
    "prompt": "Combien d'équipements sportifs dans le Gers ?",
    "evaluation_criteria": {
        "minimal": [{"criteria": "Donne 1023 équipements pour le Gers."}],
        "optimal": [{"criteria": "Donne le lien."}],
    },
    "action_chain": {
        "minimal": {
            "chain": "search.datasets",
            "required_actions": [
                {"name": "search.datasets", "args": [{"name": "query", "criteria": "sport"}]}
            ],
        }
    },
    "expected_values": [{"name": "equipements_gers", "value": 1023, "unit": "équipements"}],
}


def with_assert(assertion: Any, *, tier: str = "minimal") -> dict[str, Any]:
    data = copy.deepcopy(VALID)
    data["evaluation_criteria"][tier][0]["assert"] = assertion
    return data


def write(directory: Path, data: dict[str, Any]) -> Path:
    path = directory / "task_0001.yml"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def load(directory: Path) -> TaskSpec:
    (spec,) = load_task_specs(
        [directory],
        known_actions=vocabulary.ACTION_NAMES,
        known_args=frozenset(vocabulary.ARGUMENT_NAMES),
    )
    return spec


def only_error(directory: Path) -> SpecError:
    with pytest.raises(TaskSpecErrors) as raised:
        load(directory)
    (error,) = raised.value.errors
    return error


@pytest.mark.parametrize(
    "assertion",
    [
        {"contains": "Gers"},
        {"contains": ["Gers", "équipements"]},
        {"contains": {"any": ["Data ES", "Recensement des équipements sportifs"]}},
        {"contains": {"none": ["/20"]}},
        {"regex": r"\b1[\s.,]?023\b"},
        {"number": {"value": 1023, "tolerance": 0, "unit": "équipements", "about": ["Gers"]}},
        {"number": {"expected": "equipements_gers", "about": [["Gers", "32"]]}},
        {"numeric_range": {"min": 1000, "max": 1100, "about": ["Gers"]}},
        {"numeric_range": {"max": 5}},
        {"equals": ["oui", "yes"]},
        {"cites": {"dataset": "53699ebba3a729239d205f4f"}},
        {"cites": {"dataservice": "672cf66f5e554cca4a916026"}},
        {"cites": {"url": "equipements.sports.gouv.fr"}},
        {"declines": True},
        {"all": [{"contains": "Gers"}, {"any": [{"regex": "1023"}, {"declines": False}]}]},
    ],
)
def test_every_assertion_kind_loads(tmp_path: Path, assertion: dict[str, Any]) -> None:
    write(tmp_path, with_assert(assertion))
    criterion = load(tmp_path).evaluation_criteria.minimal[0]
    assert criterion.assertion is not None
    assert criterion.assertion.kinds() == [next(iter(assertion))]


def test_contains_shorthands_mean_all_of_the_strings(tmp_path: Path) -> None:
    write(tmp_path, with_assert({"contains": {"any": ["a", "b"]}}))
    criterion = load(tmp_path).evaluation_criteria.minimal[0]
    assert criterion.assertion is not None
    assert criterion.assertion.contains == ContainsWords(any=["a", "b"])


@pytest.mark.parametrize(
    ("assertion", "field", "message"),
    [
        (
            {"contains": "Gers", "regex": "32"},
            "evaluation_criteria.minimal[0].assert",
            "an assertion needs exactly one of contains, regex, number, numeric_range, equals, "
            "cites, declines, all, any (found contains, regex); combine several with 'all' or "
            "'any'",
        ),
        (
            {},
            "evaluation_criteria.minimal[0].assert",
            "an assertion needs exactly one of contains, regex, number, numeric_range, equals, "
            "cites, declines, all, any (found none); combine several with 'all' or 'any'",
        ),
        (
            {"regex": "(unclosed"},
            "evaluation_criteria.minimal[0].assert",
            "'regex' '(unclosed' is not a valid regular expression: missing ), unterminated "
            "subpattern at position 0",
        ),
        (
            {"number": {"value": 3, "expected": "equipements_gers"}},
            "evaluation_criteria.minimal[0].assert.number",
            "'number' needs exactly one of 'value' or 'expected' (found both)",
        ),
        (
            {"numeric_range": {"min": 10, "max": 2}},
            "evaluation_criteria.minimal[0].assert.numeric_range",
            "'numeric_range' has min 10 above max 2",
        ),
        (
            {"contains": {"any": ["a"], "all": ["b"]}},
            "evaluation_criteria.minimal[0].assert.contains",
            "'contains' needs exactly one of 'any', 'all' or 'none' (found any, all)",
        ),
        (
            {"cites": {}},
            "evaluation_criteria.minimal[0].assert.cites",
            "'cites' needs exactly one of 'dataset', 'dataservice' or 'url' (found none of them)",
        ),
        (
            {"number": {"value": 3, "about": [""]}},
            "evaluation_criteria.minimal[0].assert.number",
            "'about' has an empty entity: give a word the sentence must contain",
        ),
    ],
)
def test_a_bad_assertion_is_a_located_error(
    tmp_path: Path, assertion: dict[str, Any], field: str, message: str
) -> None:
    path = write(tmp_path, with_assert(assertion))
    error = only_error(tmp_path)
    assert (error.file, error.field_path, error.message) == (path, field, message)
    # The line is the one of the criterion's `assert` key or below it, never unknown.
    lines = path.read_text(encoding="utf-8").splitlines()
    assert error.line is not None
    assert "assert:" in "\n".join(lines[: error.line])


def test_an_unknown_assertion_kind_lists_the_allowed_keys(tmp_path: Path) -> None:
    write(tmp_path, with_assert({"matches": "Gers"}))
    error = only_error(tmp_path)
    assert error.field_path == "evaluation_criteria.minimal[0].assert.matches"
    assert error.message == (
        "unknown key 'matches'; allowed keys: all, any, cites, contains, declines, equals, "
        "number, numeric_range, regex"
    )


def test_an_unknown_key_of_a_contains_mapping_lists_its_keys(tmp_path: Path) -> None:
    write(tmp_path, with_assert({"contains": {"some": ["Gers"]}}))
    errors = [e for e in _errors(tmp_path) if e.field_path.endswith("contains.some")]
    assert [e.message for e in errors] == ["unknown key 'some'; allowed keys: all, any, none"]


def test_a_bad_part_of_a_combination_is_located_by_its_index(tmp_path: Path) -> None:
    write(tmp_path, with_assert({"any": [{"contains": "Gers"}, {"regex": "("}]}))
    error = only_error(tmp_path)
    assert error.field_path == "evaluation_criteria.minimal[0].assert.any[1]"
    assert error.message.startswith("'regex' '(' is not a valid regular expression")


def test_number_expected_must_name_an_expected_value_of_the_task(tmp_path: Path) -> None:
    path = write(tmp_path, with_assert({"number": {"expected": "equipement_gers"}}, tier="optimal"))
    error = only_error(tmp_path)
    assert str(error).startswith(f"{path}:")
    assert error.field_path == "evaluation_criteria.optimal[0].assert"
    assert error.message == (
        "number.expected 'equipement_gers' is not an expected value of this task "
        "(expected_values: equipements_gers)"
    )


def test_an_absent_assertion_keeps_the_spec_hash_and_a_present_one_changes_it(
    tmp_path: Path,
) -> None:
    write(tmp_path, VALID)
    plain = load(tmp_path)
    # The hash of a spec without assertion is what it was before the field existed.
    dumped = plain.model_dump(mode="json")
    for tier in ("minimal", "optimal"):
        for criterion in dumped["evaluation_criteria"][tier]:
            assert criterion.pop("assertion") is None
    for source in dumped["expected_sources"]:
        source.pop("slug", None)
    import hashlib
    import json

    before = hashlib.sha256(
        json.dumps(dumped, sort_keys=True, ensure_ascii=False).encode("utf-8")
    ).hexdigest()
    assert plain.spec_hash() == before
    write(tmp_path, with_assert({"contains": "Gers"}))
    assert load(tmp_path).spec_hash() != before


def _errors(directory: Path) -> list[SpecError]:
    with pytest.raises(TaskSpecErrors) as raised:
        load(directory)
    return raised.value.errors
