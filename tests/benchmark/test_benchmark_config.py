"""The benchmark configuration loader: strict files, located errors, cross-file checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from datagouv_eval_pipeline.core.benchmark.loader import (
    BENCHMARK_CONFIG_DIR,
    BenchmarkConfigErrors,
    load_benchmark_config,
)
from datagouv_eval_pipeline.core.tasks.errors import SpecError
from tests.benchmark.benchmark_fixtures import write_config


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path.name}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def errors_of(directory: Path) -> list[SpecError]:
    with pytest.raises(BenchmarkConfigErrors) as raised:
        load_benchmark_config(directory)
    return raised.value.errors


def only_error(directory: Path) -> SpecError:
    errors = errors_of(directory)
    assert len(errors) == 1, errors
    return errors[0]


def test_the_small_configuration_loads(tmp_path: Path) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    config = load_benchmark_config(config_dir)
    assert [p.name for p in config.models.providers] == ["offline", "albert"]
    assert set(config.skills_texts) == {"0.0.1"}


def test_the_real_configuration_loads() -> None:
    config = load_benchmark_config(BENCHMARK_CONFIG_DIR)
    providers = {p.name: p for p in config.models.providers}
    assert set(providers) == {"offline", "mistral", "openai", "albert"}
    offline = [m.name for m in providers["offline"].models if m.active]
    assert offline == ["baseline-oneshot", "baseline-thorough", "baseline-coder"]
    for name in ("mistral", "openai", "albert"):
        assert not any(model.active for model in providers[name].models)
    assert [v.version for v in config.mcp_versions.mcp_versions if v.active] == [
        "0.2.5",
        "0.2.19",
        "0.2.26",
    ]


def test_an_api_key_in_place_of_its_variable_name_is_refused_and_not_echoed(
    tmp_path: Path,
) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    edit(config_dir / "models.yml", "api_key_env: ALBERT_API_KEY", "api_key_env: sk-live-123abc")
    error = only_error(config_dir)
    assert (error.file.name, error.line, error.field_path) == (
        "models.yml",
        11,
        "providers[1].api_key_env",
    )
    assert "NAME of an environment variable" in error.message
    assert "sk-live" not in error.message


def test_provider_kind_decides_what_is_required(tmp_path: Path) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    models = config_dir / "models.yml"
    edit(models, "    base_url: https://albert.example/v1\n", "")
    edit(models, "    kind: offline\n", "    kind: offline\n    api_key_env: OFFLINE_KEY\n")
    messages = sorted(error.message for error in errors_of(config_dir))
    assert messages == [
        "an offline provider takes no api_key_env",
        "an openai_compatible provider needs base_url",
    ]


def test_duplicate_model_and_no_active_model(tmp_path: Path) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    models = config_dir / "models.yml"
    edit(models, "name: m2", "name: m1")
    errors = errors_of(config_dir)
    assert [(e.field_path, e.message) for e in errors] == [
        (
            "providers[0].models[1].name",
            "duplicate model 'm1': already defined at providers[0].models[0]",
        )
    ]
    text = models.read_text().replace("active: true", "active: false")
    models.write_text(text)
    assert any(e.message == "no active model: activate at least one" for e in errors_of(config_dir))


def test_model_names_must_be_key_safe(tmp_path: Path) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    edit(config_dir / "models.yml", "name: m1,", "name: 'm1 [beta]',")
    error = only_error(config_dir)
    assert error.field_path == "providers[0].models[0].name"
    assert "may only use letters, digits" in error.message


@pytest.mark.parametrize(
    ("version", "message"),
    [
        ('"1.x"', "'1.x' is not a valid PEP 440 version (e.g. '0.2.26')"),
        ('"v0.2.19"', "write the version in its normalised PEP 440 form '0.2.19'"),
        ('"0.2.19+local"', "'0.2.19+local': epochs ('!') and local labels ('+') are not allowed"),
        ("1.0", "Input should be a valid string; got 1.0 (quote the value in YAML"),
    ],
)
def test_mcp_versions_must_be_normalised_pep440(tmp_path: Path, version: str, message: str) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    edit(config_dir / "mcp_versions.yml", 'version: "0.2.19"', f"version: {version}")
    error = only_error(config_dir)
    assert (error.file.name, error.field_path) == ("mcp_versions.yml", "mcp_versions[0].version")
    assert error.message.startswith(message)


def test_mcp_url_placeholders_are_checked(tmp_path: Path) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    edit(config_dir / "mcp_versions.yml", "{twin_port}/mcp/v0.2.19", "{port}/mcp/v0.2.19")
    error = only_error(config_dir)
    assert error.field_path == "mcp_versions[0].url"
    assert error.message == "unknown placeholder(s) ['port'] in URL; allowed: {twin_port}"


def test_skills_document_must_exist_inside_the_directory(tmp_path: Path) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    skills = config_dir / "skills_versions.yml"
    edit(skills, "skills/s1.md", "skills/s2.md")
    error = only_error(config_dir)
    assert (error.field_path, error.message) == (
        "skills_versions[0].file",
        "cannot read the skills document 'skills/s2.md' (no such file)",
    )
    edit(skills, "skills/s2.md", "../outside.md")
    assert "must be a relative path inside" in only_error(config_dir).message
    edit(skills, "../outside.md", "skills/s1.md")
    (config_dir / "skills" / "s1.md").write_text("  \n")
    assert only_error(config_dir).message == "the skills document 'skills/s1.md' is empty"


def test_unknown_prompt_name_in_a_selector_suggests_a_close_one(tmp_path: Path) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    edit(config_dir / "evaluation_types.yml", "system_prompts: [b]", "system_prompts: [bb]")
    error = only_error(config_dir)
    assert error.field_path == "evaluation_types[3].system_prompts[0]"
    assert error.message == "'bb' is not defined in system_prompts.yml; did you mean 'b'?"


def test_unknown_mcp_version_in_a_selector(tmp_path: Path) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    edit(config_dir / "evaluation_types.yml", 'mcp_versions: ["0.2.26"]', 'mcp_versions: ["3.0"]')
    error = only_error(config_dir)
    assert error.field_path == "evaluation_types[1].mcp_versions[0]"
    assert error.message.startswith("'3.0' is not defined in mcp_versions.yml; ")


def test_a_selection_that_yields_nothing_is_an_error(tmp_path: Path) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    edit(config_dir / "system_prompts.yml", "name: a, active: true", "name: a, active: false")
    errors = errors_of(config_dir)
    # t1 and t3 select the active prompts; t2 uses all, t4 names b.
    assert [e.field_path for e in errors] == [
        "evaluation_types[0].system_prompts",
        "evaluation_types[2].system_prompts",
    ]
    assert "would produce no cells" in errors[0].message


def test_bad_selector_word(tmp_path: Path) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    edit(config_dir / "evaluation_types.yml", "system_prompts: all", "system_prompts: every")
    error = only_error(config_dir)
    assert error.field_path == "evaluation_types[1].system_prompts"
    assert error.message.startswith("expected 'active', 'all' or a list of names; got 'every'")


def test_capability_sets_are_sets(tmp_path: Path) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    edit(config_dir / "evaluation_types.yml", "[[], [mcp]]", "[[], [mcp], [mcp]]")
    error = only_error(config_dir)
    assert error.field_path == "evaluation_types[0].capability_sets"
    assert "capability sets 1 and 2 are the same set" in error.message


def test_unknown_capability_lists_the_allowed_ones(tmp_path: Path) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    edit(config_dir / "evaluation_types.yml", "[[code]]", "[[code, websearch]]")
    error = only_error(config_dir)
    assert error.field_path == "evaluation_types[3].capability_sets[0][1]"
    assert "'mcp', 'skills', 'code', 'web_search', 'datagouv-cli' or 'python-sdk'" in error.message


def test_unknown_key_in_an_evaluation_type(tmp_path: Path) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    edit(config_dir / "evaluation_types.yml", "    description: d4\n", "    descripton: d4\n")
    errors = errors_of(config_dir)
    found = {e.field_path: e.message for e in errors}
    assert set(found) == {"evaluation_types[3].description", "evaluation_types[3].descripton"}
    assert found["evaluation_types[3].description"] == (
        "missing required field 'description': The question this evaluation type answers."
    )
    assert found["evaluation_types[3].descripton"].startswith(
        "unknown key 'descripton'; allowed keys: active, capability_sets, compares, description,"
    )


def test_missing_file_and_errors_of_several_files_are_reported_together(
    tmp_path: Path,
) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    (config_dir / "system_prompts.yml").unlink()
    edit(config_dir / "models.yml", "currency: EUR", "currency: euro")
    edit(config_dir / "mcp_versions.yml", "active: false", "active: maybe")
    errors = errors_of(config_dir)
    assert sorted((e.file.name, e.field_path) for e in errors) == [
        ("mcp_versions.yml", "mcp_versions[2].active"),
        ("models.yml", "currency"),
        ("system_prompts.yml", ""),
    ]


def test_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    (config_dir / "system_prompts.yml").write_text("- a\n")
    error = only_error(config_dir)
    assert error.message == ("expected a mapping with 'system_prompts' at the top level, got list")


def test_models_file_must_be_a_mapping(tmp_path: Path) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    (config_dir / "models.yml").write_text("")
    error = only_error(config_dir)
    assert error.message == (
        "expected a mapping with 'currency' and 'providers' at the top level, got nothing"
    )


def test_an_mcp_version_the_registry_does_not_cover_is_an_error(tmp_path: Path) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    edit(config_dir / "mcp_versions.yml", 'version: "0.2.19"', 'version: "9.9.9"')
    error = only_error(config_dir)
    assert (error.file.name, error.field_path) == ("mcp_versions.yml", "mcp_versions[0].version")
    assert error.line is not None
    assert "'9.9.9' is not covered by the action registry" in error.message
    assert "'>=0.1.0,<=0.2.26'" in error.message


def test_unknown_factor_names_the_file_field_and_the_factors(tmp_path: Path) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    edit(config_dir / "evaluation_types.yml", "compares: [capability]", "compares: [tools]")
    error = only_error(config_dir)
    assert error.file.name == "evaluation_types.yml"
    assert error.field_path == "evaluation_types[0].compares[0]"
    assert "'model', 'mcp_version', 'capability', 'skills' or 'system_prompt'" in error.message


def test_every_evaluation_type_says_what_its_question_compares(tmp_path: Path) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    edit(config_dir / "evaluation_types.yml", "    compares: [capability]\n", "")
    error = only_error(config_dir)
    assert error.field_path == "evaluation_types[0].compares"
    assert "required" in error.message.lower()


def test_a_factor_is_compared_once(tmp_path: Path) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    edit(config_dir / "evaluation_types.yml", "[capability]", "[capability, capability]")
    error = only_error(config_dir)
    assert error.field_path == "evaluation_types[0].compares"
    assert "a factor is listed more than once" in error.message
