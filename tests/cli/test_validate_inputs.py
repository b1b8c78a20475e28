"""`datagouv-eval validate` on inputs that used to raise or pass silently: one clear line each."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from datagouv_eval_pipeline.cli import main
from datagouv_eval_pipeline.core.benchmark.loader import BENCHMARK_CONFIG_DIR
from datagouv_eval_pipeline.core.tasks import TASK_SPECS_DIR


def _validate(*args: str) -> tuple[int, list[str]]:
    # Absolute paths outside the working directory are shown as given.
    result = CliRunner().invoke(main, ["validate", *args], catch_exceptions=False)
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.output.splitlines()


def test_deeply_nested_yaml_is_one_error_not_a_recursion_error(tmp_path: Path) -> None:
    spec = tmp_path / "task_9999.yml"
    spec.write_text("task_id: " + "[" * 5000 + "]" * 5000 + "\n", encoding="utf-8")
    code, lines = _validate(str(spec))
    assert code == 1
    assert lines[0].endswith(
        "task_9999.yml: invalid YAML: its values are nested too deeply to "
        "read (hundreds of levels of lists or mappings inside each other); "
        "a task spec needs a few"
    )


def test_a_spec_over_the_size_cap_is_refused_without_parsing(tmp_path: Path) -> None:
    spec = tmp_path / "task_9998.yml"
    spec.write_text("task_name: " + "x" * 2_000_000 + "\n", encoding="utf-8")
    code, lines = _validate(str(spec))
    assert code == 1
    assert lines[0] == (
        f"{spec}: the file is 2,000,012 bytes; at most 1,048,576 are read (a task spec or a "
        "benchmark file is a few kilobytes)"
    )


def test_a_symlink_loop_and_a_broken_link_are_named(tmp_path: Path) -> None:
    (tmp_path / "loop_a.yml").symlink_to(tmp_path / "loop_b.yml")
    (tmp_path / "loop_b.yml").symlink_to(tmp_path / "loop_a.yml")
    code, lines = _validate(str(tmp_path / "loop_a.yml"))
    assert code == 1
    assert lines[0].endswith("loop_a.yml: a symbolic link that loops back on itself, not a file")

    specs = tmp_path / "specs"
    specs.mkdir()
    shutil.copy(TASK_SPECS_DIR / "task_0002.yml", specs)
    (specs / "task_0003.yml").symlink_to("nowhere.yml")
    code, lines = _validate(str(specs))
    # Before: "OK: 1 tasks", the broken spec silently left out of the benchmark.
    assert code == 1
    assert lines == [
        f"{specs / 'task_0003.yml'}: a symbolic link to 'nowhere.yml', which does not exist",
        "1 error(s) in 1 file(s)",
    ]


def test_the_benchmark_directory_is_validated_as_the_configuration(tmp_path: Path) -> None:
    code, lines = _validate(str(BENCHMARK_CONFIG_DIR))
    assert code == 0, lines
    assert len(lines) == 1
    assert lines[0].startswith("OK: benchmark configuration ")
    assert lines[0].endswith(" cells")


@pytest.mark.parametrize(
    ("judge_yml", "message"),
    [
        ("kind: llm\n", "kind 'llm' needs a model"),
        ("kind: bogus\n", "kind: Input should be 'deterministic', 'llm' or 'hybrid'"),
        ("kind: llm\nmodel: nobody/none\n", "unknown judge model 'nobody/none'"),
        ("temperature: hot\n", "temperature: Input should be a valid number"),
        ("- a\n- b\n", "expected a mapping of judge settings"),
        ("kind: [unclosed\n", "cannot read the judge configuration"),
    ],
)
def test_a_broken_judge_yml_fails_validate_as_it_fails_experiment(
    tmp_path: Path, judge_yml: str, message: str
) -> None:
    config = tmp_path / "benchmark"
    shutil.copytree(BENCHMARK_CONFIG_DIR, config)
    (config / "judge.yml").write_text(judge_yml, encoding="utf-8")
    code, lines = _validate(str(config))
    assert code == 1
    assert lines[0].startswith(f"{config / 'judge.yml'}: ")
    assert message in lines[0]
