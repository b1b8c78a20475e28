"""Error values, field paths and YAML line lookup."""

from __future__ import annotations

from pathlib import Path

from datagouv_eval_pipeline.core.tasks.errors import SpecError, TaskSpecErrors, field_path
from datagouv_eval_pipeline.core.tasks.yaml_source import read_yaml


def test_field_path_renders_keys_and_indexes() -> None:
    loc = ("action_chain", "minimal", "required_actions", 2, "args", 0, "strict_value")
    assert field_path(loc) == "action_chain.minimal.required_actions[2].args[0].strict_value"
    assert field_path(()) == ""
    assert field_path((0, "name")) == "[0].name"


def test_spec_error_renders_file_line_field_message() -> None:
    error = SpecError(Path("task_specs/task_0001.yml"), 12, "meta.status", "bad")
    assert str(error) == "task_specs/task_0001.yml:12: meta.status: bad"
    whole_file = SpecError(Path("a.yml"), None, "", "the file is empty")
    assert str(whole_file) == "a.yml: the file is empty"


def test_errors_are_sorted_and_summarised() -> None:
    late = SpecError(Path("b.yml"), 3, "x", "late")
    early = SpecError(Path("a.yml"), 9, "y", "early")
    raised = TaskSpecErrors([late, early])
    assert raised.errors == [early, late]
    assert str(raised).splitlines() == [
        "2 error(s) in 2 file(s)",
        "a.yml:9: y: early",
        "b.yml:3: x: late",
    ]


def test_line_of_follows_keys_and_indexes_and_stops_at_the_deepest_known_node(
    tmp_path: Path,
) -> None:
    path = tmp_path / "a.yml"
    path.write_text("# header\nroot:\n  items:\n    - name: a\n    - name: b\n      x: 1\n")
    document, errors = read_yaml(path)
    assert errors == [] and document is not None
    assert document.line_of(("root",)) == 2
    assert document.line_of(("root", "items", 1)) == 5
    assert document.line_of(("root", "items", 1, "x")) == 6
    assert document.line_of(("root", "items", 1, "missing")) == 5
    assert document.line_of(("root", "items", 7)) == 3


def test_unreadable_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.yml"
    path.write_bytes(b"\xff\xfe\x00bad")
    document, errors = read_yaml(path)
    assert document is None
    assert errors[0].message.startswith("cannot read the file")


def test_duplicate_keys_are_found_at_any_depth(tmp_path: Path) -> None:
    path = tmp_path / "a.yml"
    path.write_text("a:\n  - b: 1\n    b: 2\nc: 1\n")
    document, errors = read_yaml(path)
    assert document is not None and document.data == {"a": [{"b": 2}], "c": 1}
    assert [(e.line, e.field_path) for e in errors] == [(3, "a[0].b")]
