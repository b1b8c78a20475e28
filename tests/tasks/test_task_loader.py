"""The task-spec loader: every problem of every file, located by file, field path and line."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from datagouv_eval_pipeline.base import vocabulary
from datagouv_eval_pipeline.core.tasks.errors import SpecError, TaskSpecErrors
from datagouv_eval_pipeline.core.tasks.loader import (
    default_action_names,
    default_arg_names,
    load_task_specs,
)

ACTIONS = vocabulary.ACTION_NAMES
ARGS = frozenset(vocabulary.ARGUMENT_NAMES)

VALID: dict[str, Any] = {
    "task_id": "task_0001",
    "version": 1,
    "task_name": "Jeux de données avant 2012",
    "meta": {"status": "active", "source": "forum"},
    "prompt": "Combien de jeux de données avant 2012 ?",
    "evaluation_criteria": {
        "minimal": [{"criteria": "Donne 2076."}],
        "optimal": [{"criteria": "Explique le filtre."}],
    },
    "action_chain": {
        "minimal": {
            "chain": "search.datasets > get.dataset.info",
            "required_actions": [
                {"name": "search.datasets", "args": [{"name": "query", "criteria": "catalogue"}]},
                {
                    "name": "get.dataset.info",
                    "args": [{"name": "dataset_id", "strict_value": "5d13a8b6634f41070a43dff3"}],
                },
            ],
        },
        "optimal": {
            "chain": "search.datasets > get.dataset.info > get.dataset.resources",
            "required_actions": [{"name": "get.dataset.resources"}],
        },
    },
    "toolset_constraints": {"mcp": ">=0.2.5"},
}


def spec(**changes: Any) -> dict[str, Any]:
    """A deep copy of VALID with top-level keys replaced (None deletes)."""
    data = copy.deepcopy(VALID)
    for key, value in changes.items():
        if value is None:
            data.pop(key)
        else:
            data[key] = value
    return data


def write(directory: Path, name: str, content: dict[str, Any] | str) -> Path:
    path = directory / name
    text = content if isinstance(content, str) else yaml.safe_dump(content, sort_keys=False)
    path.write_text(text, encoding="utf-8")
    return path


def load_errors(*paths: Path) -> list[SpecError]:
    with pytest.raises(TaskSpecErrors) as raised:
        load_task_specs(list(paths), known_actions=ACTIONS, known_args=ARGS)
    return raised.value.errors


def only_error(*paths: Path) -> SpecError:
    errors = load_errors(*paths)
    assert len(errors) == 1, errors
    return errors[0]


def test_a_valid_spec_loads_with_optimal_as_minimal_plus_additions(tmp_path: Path) -> None:
    write(tmp_path, "task_0001.yml", VALID)
    (loaded,) = load_task_specs([tmp_path], known_actions=ACTIONS, known_args=ARGS)
    assert loaded.task_id == "task_0001"
    optimal = loaded.chain("optimal")
    assert [action.name for action in optimal.required_actions] == [
        "search.datasets",
        "get.dataset.info",
        "get.dataset.resources",
    ]


def test_yaml_syntax_error_gives_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "task_0001.yml", "task_id: task_0001\nmeta: [status\nversion: 1\n")
    error = only_error(path)
    assert error.file == path
    assert error.line == 3
    assert error.message.startswith("invalid YAML:")


def test_missing_field_names_the_field_and_the_parent_line(tmp_path: Path) -> None:
    data = spec(meta={"status": "active"})
    path = write(tmp_path, "task_0001.yml", data)
    error = only_error(path)
    assert error.field_path == "meta.source"
    assert "missing required field 'source'" in error.message
    # The allowed values of the missing enum are listed.
    assert "'forum', 'support', 'interview', 'synthetic'" in error.message
    assert error.line == 4  # the `meta:` line


def test_unknown_key_lists_the_allowed_keys(tmp_path: Path) -> None:
    path = write(
        tmp_path, "task_0001.yml", spec(meta={"status": "active", "source": "forum", "x": 1})
    )
    error = only_error(path)
    assert error.field_path == "meta.x"
    assert error.message == (
        "unknown key 'x'; allowed keys: "
        "difficulty, exercises, history, language, paraphrases, source, status"
    )


def test_wrong_type_says_what_was_found(tmp_path: Path) -> None:
    path = write(tmp_path, "task_0001.yml", spec(version="one"))
    error = only_error(path)
    assert error.field_path == "version"
    assert "valid integer" in error.message and "got 'one'" in error.message


def test_number_where_a_string_is_expected_suggests_quoting(tmp_path: Path) -> None:
    path = write(tmp_path, "task_0001.yml", spec(task_name=2024))
    error = only_error(path)
    assert error.field_path == "task_name"
    assert "quote the value" in error.message


def test_wrong_enum_lists_the_allowed_values(tmp_path: Path) -> None:
    path = write(tmp_path, "task_0001.yml", spec(meta={"status": "actve", "source": "forum"}))
    error = only_error(path)
    assert error.field_path == "meta.status"
    assert error.message == "Input should be 'draft', 'active' or 'deprecated'; got 'actve'"


def test_union_type_errors_are_merged_into_one(tmp_path: Path) -> None:
    data = spec()
    data["action_chain"]["minimal"]["required_actions"][1]["args"][0]["strict_value"] = [1, 2]
    path = write(tmp_path, "task_0001.yml", data)
    error = only_error(path)
    assert error.field_path == "action_chain.minimal.required_actions[1].args[0].strict_value"
    assert error.message == "expected a string, an integer, a number or a boolean; got a list"


def test_duplicate_task_id_names_both_files(tmp_path: Path) -> None:
    first = write(tmp_path, "a.yml", VALID)
    second = write(tmp_path, "b.yml", VALID)
    errors = load_errors(tmp_path)
    assert {(error.file, error.field_path) for error in errors} == {
        (first, "task_id"),
        (second, "task_id"),
    }
    by_file = {error.file: error.message for error in errors}
    assert str(second) in by_file[first] and str(first) in by_file[second]
    assert "duplicate task id 'task_0001'" in by_file[first]


def test_unknown_action_in_required_actions_suggests_close_matches(tmp_path: Path) -> None:
    data = spec()
    data["action_chain"]["minimal"]["required_actions"][1]["name"] = "get.datasets.info"
    data["action_chain"]["minimal"]["chain"] = "search.datasets > get.datasets.info"
    path = write(tmp_path, "task_0001.yml", data)
    errors = load_errors(path)
    required = [e for e in errors if "unknown" in e.message and "required_actions" in e.field_path]
    assert len(required) == 1
    assert required[0].field_path == "action_chain.minimal.required_actions[1].name"
    assert required[0].message.startswith("unknown semantic action 'get.datasets.info'")
    assert "did you mean 'get.dataset.info'" in required[0].message


def test_unknown_action_in_a_chain_gives_its_position(tmp_path: Path) -> None:
    data = spec()
    data["action_chain"]["optimal"]["chain"] = (
        "search.datasets > get.dataset.info > get.dataset.resources > get.everything"
    )
    path = write(tmp_path, "task_0001.yml", data)
    errors = load_errors(path)
    unknown = [e for e in errors if "unknown semantic action" in e.message]
    assert len(unknown) == 1
    assert unknown[0].field_path == "action_chain.optimal.chain"
    assert "'get.everything'" in unknown[0].message and "position 61" in unknown[0].message


def test_unknown_actions_without_close_match_list_the_vocabulary(tmp_path: Path) -> None:
    data = spec()
    data["action_chain"]["minimal"]["required_actions"][1]["name"] = "zzz.qqq"
    data["action_chain"]["minimal"]["chain"] = "search.datasets > zzz.qqq"
    path = write(tmp_path, "task_0001.yml", data)
    errors = load_errors(path)
    assert any("known actions: get.data, get.dataservice.info" in e.message for e in errors)


def test_malformed_chain_shows_the_position_with_a_caret(tmp_path: Path) -> None:
    data = spec()
    data["action_chain"]["minimal"]["chain"] = "search.datasets > > get.dataset.info"
    path = write(tmp_path, "task_0001.yml", data)
    error = only_error(path)
    assert error.field_path == "action_chain.minimal.chain"
    lines = error.message.splitlines()
    assert lines[0].startswith("malformed chain: expected an action name or '(' but found '>'")
    assert lines[1].strip() == "search.datasets > > get.dataset.info"
    assert lines[2].index("^") - lines[1].index("s") == 18


def test_chain_action_missing_from_required_actions(tmp_path: Path) -> None:
    data = spec()
    data["action_chain"]["minimal"]["chain"] = "search.datasets > get.dataset.info > get.data"
    data["action_chain"]["optimal"]["chain"] = (
        "search.datasets > get.dataset.info > get.data > get.dataset.resources"
    )
    data["action_chain"]["optimal"]["required_actions"].append({"name": "get.data"})
    path = write(tmp_path, "task_0001.yml", data)
    error = only_error(path)
    assert error.field_path == "action_chain.minimal.chain"
    assert error.message == (
        "the minimal chain names 'get.data' (position 37) but "
        "action_chain.minimal.required_actions does not list it"
    )


def test_required_action_missing_from_the_chain(tmp_path: Path) -> None:
    data = spec()
    data["action_chain"]["minimal"]["required_actions"].append({"name": "get.resource.info"})
    data["action_chain"]["optimal"]["chain"] += " > get.resource.info"
    path = write(tmp_path, "task_0001.yml", data)
    error = only_error(path)
    assert error.field_path == "action_chain.minimal.required_actions[2].name"
    assert error.message.startswith(
        "required action 'get.resource.info' does not appear in the minimal chain"
    )


def test_optimal_chain_is_checked_against_minimal_plus_additions(tmp_path: Path) -> None:
    # The optimal chain may name minimal actions without repeating them in its additions, but
    # it must name every minimal one (the original task_0002 defect).
    data = spec()
    data["action_chain"]["optimal"]["chain"] = "search.datasets > get.dataset.resources"
    path = write(tmp_path, "task_0001.yml", data)
    error = only_error(path)
    assert error.field_path == "action_chain.minimal.required_actions[1].name"
    assert "does not appear in the optimal chain" in error.message
    assert "also required in the optimal tier" in error.message


def test_optimal_chain_action_in_no_required_list(tmp_path: Path) -> None:
    data = spec()
    data["action_chain"]["optimal"]["chain"] += " > get.resource.profile"
    path = write(tmp_path, "task_0001.yml", data)
    error = only_error(path)
    assert error.field_path == "action_chain.optimal.chain"
    assert "'get.resource.profile'" in error.message
    assert "neither action_chain.minimal.required_actions nor" in error.message


@pytest.mark.parametrize(
    ("arg", "found"),
    [
        ({"name": "query", "strict_value": "x", "criteria": "y"}, "both"),
        ({"name": "query"}, "neither"),
    ],
)
def test_argument_needs_exactly_one_of_strict_value_or_criteria(
    tmp_path: Path, arg: dict[str, Any], found: str
) -> None:
    data = spec()
    data["action_chain"]["minimal"]["required_actions"][0]["args"] = [arg]
    path = write(tmp_path, "task_0001.yml", data)
    error = only_error(path)
    assert error.field_path == "action_chain.minimal.required_actions[0].args[0]"
    assert error.message == (
        f"argument 'query' needs exactly one of 'strict_value' or 'criteria' (found {found})"
    )


def test_unknown_argument_name_suggests_the_right_one(tmp_path: Path) -> None:
    data = spec()
    data["action_chain"]["minimal"]["required_actions"][1]["args"][0]["name"] = "dataset-id"
    path = write(tmp_path, "task_0001.yml", data)
    error = only_error(path)
    assert error.field_path == "action_chain.minimal.required_actions[1].args[0].name"
    assert "unknown semantic argument 'dataset-id'; did you mean 'dataset_id'" in error.message


def test_invalid_pep440_specifier(tmp_path: Path) -> None:
    path = write(tmp_path, "task_0001.yml", spec(toolset_constraints={"mcp": ">=0.2.x"}))
    error = only_error(path)
    assert error.field_path == "toolset_constraints.mcp"
    assert "not a valid PEP 440 version specifier" in error.message


def test_empty_prompt(tmp_path: Path) -> None:
    path = write(tmp_path, "task_0001.yml", spec(prompt="   \n"))
    error = only_error(path)
    assert error.field_path == "prompt"
    assert "the prompt is empty" in error.message


def test_line_numbers_point_at_nested_fields(tmp_path: Path) -> None:
    text = (
        "task_id: task_0001\n"  # 1
        "version: 1\n"
        "task_name: n\n"
        "meta: {status: active, source: forum}\n"
        "prompt: p\n"  # 5
        "evaluation_criteria:\n"
        "  minimal: [{criteria: c}]\n"
        "action_chain:\n"
        "  minimal:\n"
        "    chain: search.datasets\n"  # 10
        "    required_actions:\n"
        "      - name: search.datasets\n"
        "        args:\n"
        "          - name: query\n"
        "            strict_value: {a: 1}\n"  # 15
    )
    path = write(tmp_path, "task_0001.yml", text)
    error = only_error(path)
    assert (error.line, error.field_path) == (
        15,
        "action_chain.minimal.required_actions[0].args[0].strict_value",
    )
    assert str(error).startswith(f"{path}:15: action_chain.minimal")


def test_duplicate_yaml_keys_are_errors(tmp_path: Path) -> None:
    text = yaml.safe_dump(VALID, sort_keys=False) + "version: 2\n"
    path = write(tmp_path, "task_0001.yml", text)
    error = only_error(path)
    assert error.field_path == "version"
    assert error.message.startswith("duplicate key 'version': already set at line 2")


def test_empty_file_and_non_mapping(tmp_path: Path) -> None:
    empty = write(tmp_path, "task_0001.yml", "# nothing yet\n")
    listing = write(tmp_path, "task_0002.yml", "- a\n- b\n")
    errors = load_errors(empty, listing)
    assert [(e.file, e.message) for e in errors] == [
        (empty, "the file is empty: expected a task specification"),
        (listing, "expected a mapping of task fields at the top level, got list"),
    ]


def test_task_id_must_match_the_file_name(tmp_path: Path) -> None:
    path = write(tmp_path, "task_0002.yml", VALID)
    error = only_error(path)
    assert error.field_path == "task_id"
    assert error.message == "task id 'task_0001' does not match the file name: expected 'task_0002'"


def test_example_file_is_loaded_but_must_stay_draft(tmp_path: Path) -> None:
    draft = spec(task_id="task_0000", meta={"status": "draft", "source": "synthetic"})
    write(tmp_path, "example_task_0000.yml", draft)
    (loaded,) = load_task_specs([tmp_path], known_actions=ACTIONS, known_args=ARGS)
    assert loaded.task_id == "task_0000"
    write(tmp_path, "example_task_0000.yml", spec(task_id="task_0000"))
    error = only_error(tmp_path)
    assert error.field_path == "meta.status"
    assert "must keep status 'draft'" in error.message


def test_directories_read_yaml_files_but_not_schemas_or_subdirectories(tmp_path: Path) -> None:
    write(tmp_path, "task_0001.yml", VALID)
    write(tmp_path, "task_spec.schema.yml", "not: [a, task")
    (tmp_path / "benchmark").mkdir()
    write(tmp_path / "benchmark", "models.yml", "providers: []\n")
    write(tmp_path, "notes.txt", "ignored")
    specs = load_task_specs([tmp_path], known_actions=ACTIONS, known_args=ARGS)
    assert [s.task_id for s in specs] == ["task_0001"]


def test_missing_path_and_empty_directory_are_errors(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    errors = load_errors(tmp_path / "nope", tmp_path / "empty")
    assert sorted(e.message for e in errors) == [
        "no such file or directory",
        "no task specification (*.yml) here",
    ]


def test_all_or_nothing_reports_every_problem_of_every_file(tmp_path: Path) -> None:
    write(tmp_path, "task_0001.yml", VALID)
    write(tmp_path, "task_0002.yml", spec(task_id="task_0002", version=0))
    write(tmp_path, "task_0003.yml", spec(task_id="task_0003", prompt="", extra=True))
    errors = load_errors(tmp_path)
    assert sorted((e.file.name, e.field_path) for e in errors) == [
        ("task_0002.yml", "version"),
        ("task_0003.yml", "extra"),
        ("task_0003.yml", "prompt"),
    ]


def test_specs_are_sorted_by_task_id_whatever_the_path_order(tmp_path: Path) -> None:
    b = write(tmp_path, "task_0002.yml", spec(task_id="task_0002"))
    a = write(tmp_path, "task_0001.yml", VALID)
    specs = load_task_specs([b, a, b], known_actions=ACTIONS, known_args=ARGS)
    assert [s.task_id for s in specs] == ["task_0001", "task_0002"]


def test_known_actions_are_taken_from_the_caller(tmp_path: Path) -> None:
    path = write(tmp_path, "task_0001.yml", VALID)
    narrow = ACTIONS - {"get.dataset.info"}
    with pytest.raises(TaskSpecErrors) as raised:
        load_task_specs([path], known_actions=narrow, known_args=ARGS)
    assert {e.field_path for e in raised.value.errors} == {
        "action_chain.minimal.required_actions[1].name",
        "action_chain.minimal.chain",
        "action_chain.optimal.chain",
    }


def test_the_default_vocabulary_is_the_shared_one() -> None:
    assert default_action_names() == vocabulary.ACTION_NAMES
    assert default_arg_names() == {"query", "dataset_id", "resource_id", "dataservice_id"} | {
        "organization_id",
        "filters",
        "page_size",
    }
    assert len(default_action_names()) == 11


def test_a_pattern_that_does_not_compile_is_an_error_naming_file_field_and_regex_error(
    tmp_path: Path,
) -> None:
    criteria = {"minimal": [{"criteria": "Donne 2076.", "patterns": ["2\\s?076", "(2076"]}]}
    path = write(tmp_path, "task_0001.yml", spec(evaluation_criteria=criteria))
    error = only_error(path)
    assert error.file == path
    assert error.field_path.startswith("evaluation_criteria.minimal[0].patterns")
    assert "pattern 1 ('(2076') is not a valid regular expression" in error.message
    assert "missing ), unterminated subpattern" in error.message


def test_check_params_are_validated_by_the_check_model_at_load(tmp_path: Path) -> None:
    resources = [
        {
            "type": "resource",
            "id": "f868cca6-8da1-4369-a78d-47463f19a9a3",
            "dataset_id": "5d13a8b6634f41070a43dff3",
            "checks": [
                {"fn": "tabular_api_available"},
                {"fn": "row_count_within", "params": {"maximum": 3}},
            ],
        }
    ]
    path = write(tmp_path, "task_0001.yml", spec(resources=resources))
    error = only_error(path)
    assert error.field_path == "resources[0].checks[1].params"
    assert error.line is not None
    assert error.message.startswith("invalid params for row_count_within: maximum:")


def test_history_notes_must_be_dated(tmp_path: Path) -> None:
    meta = {"status": "active", "source": "forum", "history": ["2076 became 2066."]}
    error = only_error(write(tmp_path, "task_0001.yml", spec(meta=meta)))
    assert error.field_path.startswith("meta.history")
    assert "does not start with 'YYYY-MM-DD: '" in error.message
    meta["history"] = ["2026-12-06: 2076 became 2066."]
    path = write(tmp_path, "task_0001.yml", spec(meta=meta))
    (loaded,) = load_task_specs([path], known_actions=ACTIONS, known_args=ARGS)
    assert loaded.meta.history == ["2026-12-06: 2076 became 2066."]


def test_about_names_every_entity_with_a_word_or_a_code(tmp_path: Path) -> None:
    values = [{"name": "gers", "value": 1023, "about": [["Gers", "32"], []]}]
    error = only_error(write(tmp_path, "task_0001.yml", spec(expected_values=values)))
    assert error.field_path == "expected_values[0].about"
    assert "about[1] must list at least one name" in error.message
    values = [{"name": "gers", "value": 1023, "about": [["Gers", " - "]]}]
    error = only_error(write(tmp_path, "task_0001.yml", spec(expected_values=values)))
    assert "about[0] has the name ' - ': expected a word or a code" in error.message
    values = [{"name": "gers", "value": 1023, "about": [["Gers", "32"]]}]
    (loaded,) = load_task_specs(
        [write(tmp_path, "task_0001.yml", spec(expected_values=values))],
        known_actions=ACTIONS,
        known_args=ARGS,
    )
    assert loaded.expected_values[0].about == [["Gers", "32"]]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (".inf", "finite number"),
        ("-.inf", "finite number"),
        (".nan", "finite number"),
        ("-1", "greater than or equal to 0"),
    ],
)
def test_a_tolerance_must_be_a_finite_non_negative_number(
    tmp_path: Path, text: str, expected: str
) -> None:
    values = [{"name": "total", "value": 2076, "tolerance": 0}]
    content = yaml.safe_dump(spec(expected_values=values), sort_keys=False)
    path = write(tmp_path, "task_0001.yml", content.replace("tolerance: 0", f"tolerance: {text}"))
    error = only_error(path)
    assert error.file == path
    assert error.field_path == "expected_values[0].tolerance"
    assert error.line is not None
    assert expected in error.message


def test_a_row_count_tolerance_must_be_finite(tmp_path: Path) -> None:
    resources = [
        {
            "type": "resource",
            "id": "f868cca6-8da1-4369-a78d-47463f19a9a3",
            "dataset_id": "5d13a8b6634f41070a43dff3",
            "checks": [{"fn": "row_count_within", "params": {"tolerance": 0.5}}],
        }
    ]
    content = yaml.safe_dump(spec(resources=resources), sort_keys=False)
    path = write(tmp_path, "task_0001.yml", content.replace("tolerance: 0.5", "tolerance: .inf"))
    error = only_error(path)
    assert error.file == path
    assert error.field_path == "resources[0].checks[0].params"
    assert "tolerance" in error.message and "finite number" in error.message
