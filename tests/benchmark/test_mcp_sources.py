"""MCP entries name where their server comes from: the twin, a deployed URL, or a real build."""

from __future__ import annotations

from pathlib import Path

import pytest

from datagouv_eval_pipeline.core.benchmark.cells import expand_cells
from datagouv_eval_pipeline.core.benchmark.config import McpSource
from datagouv_eval_pipeline.core.benchmark.loader import BENCHMARK_CONFIG_DIR, load_benchmark_config
from tests.benchmark.benchmark_fixtures import write_config
from tests.benchmark.test_benchmark_config import edit, only_error

# Appended to the small configuration's mcp_versions.yml (which ends with its "0.2.5" entry).
SOURCES = """\
  - {version: "0.2.26", active: false, name: branch, build: {path: ../server}}
  - {version: "0.2.19", active: false, build: {package: "srv==0.2.19"}}
  - {version: "0.2.19", active: false, source: twin, name: again}
"""


def sources_config(tmp_path: Path, extra: str = SOURCES) -> Path:
    config_dir = write_config(tmp_path / "benchmark")
    server = tmp_path / "server"
    server.mkdir()
    (server / "pyproject.toml").write_text("[project]\nname = 'srv'\n", encoding="utf-8")
    path = config_dir / "mcp_versions.yml"
    path.write_text(path.read_text(encoding="utf-8") + extra, encoding="utf-8")
    return config_dir


def test_sources_are_inferred_named_and_keyed(tmp_path: Path) -> None:
    config = load_benchmark_config(sources_config(tmp_path))
    entries = config.mcp_versions.mcp_versions
    assert [(e.key, e.origin) for e in entries] == [
        ("0.2.19", McpSource.TWIN),  # a url with {twin_port}
        ("0.2.26", McpSource.TWIN),
        ("0.2.5", McpSource.URL),  # a url without placeholder: the deployed server
        ("0.2.26~branch", McpSource.BUILD),
        ("0.2.19~build", McpSource.BUILD),  # an unnamed build is named "build"
        ("0.2.19~again", McpSource.TWIN),
    ]
    # A twin entry without url gets the twin's endpoint; a build has none until it is started.
    assert entries[5].endpoint == "http://127.0.0.1:{twin_port}/mcp/v0.2.19/mcp"
    assert entries[3].endpoint is None
    assert entries[4].build is not None and entries[4].build.spec == "package:srv==0.2.19"


def test_a_build_and_the_emulation_of_one_version_are_two_cells(tmp_path: Path) -> None:
    config_dir = sources_config(tmp_path)
    edit(config_dir / "evaluation_types.yml", 'mcp_versions: ["0.2.26"]', "mcp_versions: all")
    config = load_benchmark_config(config_dir)
    cells = [c for c in expand_cells(config, ["t2"]) if c.system_prompt == "a"]
    by_key = {c.key: c for c in cells}
    emulation = by_key["albert~openai~gpt-oss-120b__mcp@0.2.26+skills@0.0.1__a"]
    branch = by_key["albert~openai~gpt-oss-120b__mcp@0.2.26~branch+skills@0.0.1__a"]
    assert (emulation.mcp_version, branch.mcp_version) == ("0.2.26", "0.2.26")
    assert (emulation.mcp_source, branch.mcp_source) == ("twin", "build")
    assert emulation.mcp_build is None
    # The path is resolved against the configuration directory; the record keeps it as written.
    assert branch.mcp_build is not None
    assert branch.mcp_build.path == str((tmp_path / "server").resolve())
    assert branch.mcp_url is None
    assert branch.to_record().mcp_build == "path:../server"
    assert branch.to_record().mcp_source == "build"
    assert emulation.to_record().mcp_build is None


@pytest.mark.parametrize(
    ("entry", "field", "message"),
    [
        (
            '{version: "0.2.10", active: false, build: {package: "srv>=1"}}',
            "mcp_versions[3].build.package",
            "expected NAME==VERSION",
        ),
        (
            '{version: "0.2.10", active: false, build: {git: "https://example.org/srv"}}',
            "mcp_versions[3].build.git",
            "expected URL@REF",
        ),
        (
            '{version: "0.2.10", active: false, build: {package: "a==1", path: "."}}',
            "mcp_versions[3].build",
            "exactly one origin: package (NAME==VERSION), git (URL@REF) or path",
        ),
        (
            '{version: "0.2.10", active: false, build: {}}',
            "mcp_versions[3].build",
            "got none",
        ),
        (
            '{version: "0.2.10", active: false, build: {package: "a==1", python: "3"}}',
            "mcp_versions[3].build.python",
            "expected a Python version such as '3.13'",
        ),
        (
            '{version: "0.2.10", active: false, source: url, build: {package: "a==1"}}',
            "mcp_versions[3]",
            "source 'url' needs a url without placeholder",
        ),
        (
            '{version: "0.2.10", active: false, build: {package: "a==1"}, url: "https://x.org/mcp"}',
            "mcp_versions[3]",
            "give build or url, not both",
        ),
        (
            '{version: "0.2.10", active: false, name: "Build", build: {package: "a==1"}}',
            "mcp_versions[3].name",
            "",
        ),
        (
            '{version: "0.2.10", active: false, build: {path: no-such-dir}}',
            "mcp_versions[3].build.path",
            "no such directory 'no-such-dir'",
        ),
        (
            '{version: "0.2.10", active: false, build: {path: skills}}',
            "mcp_versions[3].build.path",
            "'skills' has no pyproject.toml",
        ),
    ],
)
def test_bad_sources_are_located_errors(
    tmp_path: Path, entry: str, field: str, message: str
) -> None:
    config_dir = sources_config(tmp_path, f"  - {entry}\n")
    error = only_error(config_dir)
    assert (error.file.name, error.field_path) == ("mcp_versions.yml", field)
    assert message in error.message


def test_two_entries_of_one_version_need_names(tmp_path: Path) -> None:
    extra = '  - {version: "0.2.19", active: false}\n'
    error = only_error(sources_config(tmp_path, extra))
    assert error.field_path == "mcp_versions[3].version"
    assert "duplicate MCP version '0.2.19'" in error.message
    assert "need distinct `name`s" in error.message


def test_an_evaluation_type_selects_a_build_by_its_name(tmp_path: Path) -> None:
    config_dir = sources_config(tmp_path)
    edit(
        config_dir / "evaluation_types.yml",
        'mcp_versions: ["0.2.26"]',
        'mcp_versions: ["0.2.19~build", "0.2.26~brnch"]',
    )
    error = only_error(config_dir)
    assert error.field_path == "evaluation_types[1].mcp_versions[1]"
    assert "did you mean '0.2.26~branch'" in error.message


def test_the_real_configuration_has_the_real_0_2_14_build() -> None:
    config = load_benchmark_config(BENCHMARK_CONFIG_DIR)
    builds = [e for e in config.mcp_versions.mcp_versions if e.origin == McpSource.BUILD]
    assert [(e.key, e.build.spec if e.build else None) for e in builds] == [
        ("0.2.14~build", "package:iflow-mcp-datagouv-datagouv-mcp==0.2.14")
    ]
