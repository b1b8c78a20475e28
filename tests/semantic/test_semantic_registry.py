"""The action registry: loading, version resolution, URL/CLI matching, strict file errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from packaging.version import Version

from datagouv_eval_pipeline.core.semantic.registry import (
    SEMANTIC_ARGUMENTS,
    ActionRegistry,
    RegistryError,
    UncoveredVersionError,
    UnknownVersionError,
    UnmappedTool,
    default_action_names,
    load_registry,
)

# Tool names and argument names of the real server's tools/list at three tags.
REAL_TOOLS = json.loads(
    (Path(__file__).parent / "fixtures" / "real_mcp_tools.json").read_text(encoding="utf-8")
)
PACKAGED = Path(__file__).resolve().parents[2] / "datagouv_eval_pipeline/core/semantic/actions.yml"

ELEVEN = {
    "search.datasets",
    "search.dataservices",
    "search.organizations",
    "get.dataset.info",
    "get.dataset.resources",
    "get.resource.info",
    "get.resource.profile",
    "get.data",
    "get.dataservice.info",
    "get.dataservice.openapi_spec",
    "get.metrics",
}


@pytest.fixture(scope="module")
def registry() -> ActionRegistry:
    return load_registry()


def test_registry_loads_the_eleven_actions(registry: ActionRegistry) -> None:
    assert registry.action_names == ELEVEN
    assert default_action_names() == ELEVEN
    assert registry.version == "1.0.0"
    assert load_registry() is load_registry()  # the packaged file is parsed once


# Expected mapping of every real tool, written out per version.
EXPECTED = {
    "0.2.5": {
        "search_datasets": ("search.datasets",),
        "query_dataset_data": ("get.data",),
        "get_dataset_info": ("get.dataset.info",),
        "list_dataset_resources": ("get.dataset.resources",),
        "get_resource_info": ("get.resource.info",),
        "download_and_parse_resource": ("get.data",),
        "get_metrics": ("get.metrics",),
    },
    "0.2.19": {
        "search_datasets": ("search.datasets",),
        "search_dataservices": ("search.dataservices",),
        "get_dataservice_info": ("get.dataservice.info",),
        "get_dataservice_openapi_spec": ("get.dataservice.openapi_spec",),
        "query_resource_data": ("get.data",),
        "get_dataset_info": ("get.dataset.info",),
        "list_dataset_resources": ("get.dataset.resources",),
        "get_resource_info": ("get.resource.info",),
        "download_and_parse_resource": ("get.data",),
        "get_metrics": ("get.metrics",),
    },
    "0.2.26": {
        "search_datasets": ("search.datasets",),
        "search_organizations": ("search.organizations",),
        "search_dataservices": ("search.dataservices",),
        "get_dataservice_info": ("get.dataservice.info",),
        "get_dataservice_openapi_spec": ("get.dataservice.openapi_spec",),
        "query_resource_data": ("get.data",),
        "get_dataset_info": ("get.dataset.info",),
        "list_dataset_resources": ("get.dataset.resources",),
        "get_resource_info": ("get.resource.info",),
        "get_metrics": ("get.metrics",),
    },
}


@pytest.mark.parametrize("version", sorted(EXPECTED))
def test_every_real_tool_maps(registry: ActionRegistry, version: str) -> None:
    names = list(REAL_TOOLS[version])
    assert sorted(names) == sorted(EXPECTED[version])
    assert registry.unmapped_tools(names, version) == []
    for name in names:
        # Plain arguments (no profile condition): one action per tool.
        assert registry.actions_for_mcp_tool(name, version, {}) == EXPECTED[version][name]


@pytest.mark.parametrize("version", sorted(EXPECTED))
def test_required_identifiers_have_semantic_names(registry: ActionRegistry, version: str) -> None:
    for tool, schema in REAL_TOOLS[version].items():
        for argument in schema["required"]:
            if argument == "question":
                continue  # free text of query_*_data before 0.2.24, deliberately not mapped
            renamed = registry.semantic_args("mcp", {argument: "x"})
            assert set(renamed) <= set(SEMANTIC_ARGUMENTS)
            assert len(renamed) == 1, (tool, argument)


@pytest.mark.parametrize(
    ("tool", "version", "expected"),
    [
        ("query_dataset_data", "0.2.5", ("get.data",)),
        ("query_dataset_data", "0.2.6", ()),
        ("query_resource_data", "0.2.5", ()),
        ("query_resource_data", "0.2.6", ("get.data",)),
        ("download_and_parse_resource", "0.2.19", ("get.data",)),
        ("download_and_parse_resource", "0.2.20", ()),
        ("search_dataservices", "0.2.14", ()),
        ("get_dataservice_openapi_spec", "0.2.15", ("get.dataservice.openapi_spec",)),
        ("search_organizations", "0.2.24", ()),
        ("search_organizations", "0.2.25", ("search.organizations",)),
        ("get_metrics", "0.2.1", ()),
        ("get_metrics", "0.2.2", ("get.metrics",)),
        ("create_dataset", "0.2.0", ()),
        ("search_datasets", "v0.2.26", ("search.datasets",)),
        ("search_datasets", "0.2.27.dev3+g1234", ("search.datasets",)),
    ],
)
def test_version_boundaries(
    registry: ActionRegistry, tool: str, version: str, expected: tuple[str, ...]
) -> None:
    assert registry.actions_for_mcp_tool(tool, version, {}) == expected


def test_mcp_tools_per_action_and_version(registry: ActionRegistry) -> None:
    assert set(registry.mcp_tools("get.data", "0.2.5")) == {
        "query_dataset_data",
        "download_and_parse_resource",
    }
    assert set(registry.mcp_tools("get.data", "0.2.19")) == {
        "query_resource_data",
        "download_and_parse_resource",
    }
    assert registry.mcp_tools("get.data", "0.2.26") == ("query_resource_data",)
    assert registry.mcp_tools("get.resource.profile", "0.2.26") == ("query_resource_data",)
    assert registry.mcp_tools("get.resource.profile", "0.2.10") == ()
    assert registry.mcp_tools("search.organizations", "0.2.19") == ()
    with pytest.raises(KeyError, match=r"unknown semantic action 'get\.everything'"):
        registry.mcp_tools("get.everything", "0.2.26")


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"resource_id": "r", "page_size": 3}, "get.resource.profile"),
        ({"resource_id": "r", "page_size": 5}, "get.resource.profile"),
        ({"resource_id": "r", "page_size": "2"}, "get.resource.profile"),
        ({"resource_id": "r", "page_size": 5, "page": 1}, "get.resource.profile"),
        ({"resource_id": "r", "page_size": 6}, "get.data"),
        ({"resource_id": "r"}, "get.data"),
        ({"resource_id": "r", "page_size": 3, "page": 2}, "get.data"),
        (
            {"resource_id": "r", "page_size": 3, "filter_column": "a", "filter_value": "1"},
            "get.data",
        ),
        ({"resource_id": "r", "page_size": 3, "sort_column": "a"}, "get.data"),
        (
            {"resource_id": "r", "page_size": 3, "filter_column": None, "sort_column": ""},
            "get.resource.profile",
        ),
    ],
)
def test_query_resource_data_is_exactly_one_action(
    registry: ActionRegistry, arguments: dict[str, object], expected: str
) -> None:
    assert registry.actions_for_mcp_tool("query_resource_data", "0.2.26", arguments) == (expected,)


def test_profile_rule_needs_page_size_which_exists_from_0_2_11(registry: ActionRegistry) -> None:
    arguments = {"resource_id": "r", "page_size": 3}
    assert registry.actions_for_mcp_tool("query_resource_data", "0.2.10", arguments) == (
        "get.data",
    )
    assert registry.actions_for_mcp_tool("query_resource_data", "0.2.11", arguments) == (
        "get.resource.profile",
    )


@pytest.mark.parametrize("label", ["local", "", "latest", "0.2.x"])
def test_non_pep440_version_raises(registry: ActionRegistry, label: str) -> None:
    with pytest.raises(UnknownVersionError) as caught:
        registry.actions_for_mcp_tool("search_datasets", label, {})
    message = str(caught.value)
    assert repr(label) in message
    assert "PEP 440" in message
    assert "0.2.26" in message  # says what is expected
    with pytest.raises(UnknownVersionError):
        registry.mcp_tools("search.datasets", label)
    with pytest.raises(UnknownVersionError):
        registry.unmapped_tools(["search_datasets"], label)


def test_unmapped_tools_reports_unknown_and_known(registry: ActionRegistry) -> None:
    tools = ["search_datasets", "create_dataset", "get_reuse_info", "query_dataset_data"]
    assert registry.unmapped_tools(tools, "0.2.0") == [
        UnmappedTool(
            "create_dataset", True, "write tool (creates a dataset); no read-only semantic action"
        ),
        UnmappedTool("get_reuse_info", False, "no action maps 'get_reuse_info' at 0.2.0"),
    ]
    late = registry.unmapped_tools(["query_dataset_data", "create_dataset"], "0.2.26")
    assert [(t.name, t.known) for t in late] == [
        ("query_dataset_data", False),
        ("create_dataset", False),
    ]
    assert "mapped only for versions" in late[0].reason


def test_semantic_args_rename_and_combine_filters(registry: ActionRegistry) -> None:
    arguments = {
        "resource_id": "  r1 ",
        "page": 2,
        "page_size": 10,
        "filter_column": "COMM",
        "filter_value": "31557",
        "filter_operator": "EXACT",
        "sort_column": None,
        "question": "how many?",
    }
    assert registry.semantic_args("mcp", arguments) == {
        "resource_id": "r1",
        "page_size": 10,
        "filters": "COMM__exact=31557",
    }
    assert registry.semantic_args("mcp", {"dataset_query": "vélos", "dataset_id": ""}) == {
        "query": "vélos"
    }


def test_url_v1_dataset_is_info_and_resources(registry: ActionRegistry) -> None:
    match = registry.match_url("https://www.data.gouv.fr/api/1/datasets/5d13a8b6634f41070a43dff3")
    assert match.family == "main"
    assert [(a.action, a.args, a.confidence) for a in match.actions] == [
        ("get.dataset.info", {"dataset_id": "5d13a8b6634f41070a43dff3"}, 0.9),
        ("get.dataset.resources", {"dataset_id": "5d13a8b6634f41070a43dff3"}, 0.9),
    ]
    v2 = registry.match_url("https://www.data.gouv.fr/api/2/datasets/abc/")
    assert [a.action for a in v2.actions] == ["get.dataset.info"]


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "https://www.data.gouv.fr/api/1/datasets/?q=velo&organization=o1&page_size=5",
            ("search.datasets", {"query": "velo", "organization_id": "o1", "page_size": 5}),
        ),
        (
            "https://www.data.gouv.fr/api/2/datasets/search/?q=%C3%A9lus",
            ("search.datasets", {"query": "élus"}),
        ),
        (
            "https://www.data.gouv.fr/api/1/organizations/o9/datasets/",
            ("search.datasets", {"organization_id": "o9"}),
        ),
        (
            "https://www.data.gouv.fr/api/2/dataservices/search/?q=api",
            ("search.dataservices", {"query": "api"}),
        ),
        (
            "https://www.data.gouv.fr/api/2/organizations/search/?q=insee",
            ("search.organizations", {"query": "insee"}),
        ),
        (
            "https://www.data.gouv.fr/api/1/datasets/d1/resources/r1/",
            ("get.resource.info", {"dataset_id": "d1", "resource_id": "r1"}),
        ),
        (
            "https://www.data.gouv.fr/api/2/datasets/resources/r1/",
            ("get.resource.info", {"resource_id": "r1"}),
        ),
        (
            "https://tabular-api.data.gouv.fr/api/resources/r1/profile/",
            ("get.resource.profile", {"resource_id": "r1"}),
        ),
        (
            "https://tabular-api.data.gouv.fr/api/resources/r1/data/?COMM__exact=31557&page_size=20&DATE__sort=desc&b__greater=3",
            (
                "get.data",
                {"resource_id": "r1", "page_size": 20, "filters": "COMM__exact=31557&b__greater=3"},
            ),
        ),
        (
            "https://tabular-api.data.gouv.fr/api/resources/r1/data/csv/",
            ("get.data", {"resource_id": "r1"}),
        ),
        ("https://www.data.gouv.fr/fr/datasets/r/r1", ("get.data", {"resource_id": "r1"})),
        ("https://www.data.gouv.fr/api/1/datasets/r/r1", ("get.data", {"resource_id": "r1"})),
        ("https://static.data.gouv.fr/resources/slug/20240101/file.csv", ("get.data", {})),
        (
            "https://www.data.gouv.fr/api/1/dataservices/s1/",
            ("get.dataservice.info", {"dataservice_id": "s1"}),
        ),
        (
            "https://metric-api.data.gouv.fr/api/resources/data/?resource_id__exact=r1&metric_month__sort=desc",
            ("get.metrics", {"resource_id": "r1"}),
        ),
        ("www.data.gouv.fr/api/1/datasets/d1/", ("get.dataset.info", {"dataset_id": "d1"})),
    ],
)
def test_url_matching(
    registry: ActionRegistry, url: str, expected: tuple[str, dict[str, object]]
) -> None:
    match = registry.match_url(url)
    assert match.catalog
    assert (match.actions[0].action, match.actions[0].args) == expected


def test_pages_specs_and_misses(registry: ActionRegistry) -> None:
    page = registry.match_url("https://www.data.gouv.fr/fr/datasets/velos-en-libre-service/")
    assert [(a.action, a.args, a.page, a.confidence) for a in page.actions] == [
        ("get.dataset.info", {"dataset_id": "velos-en-libre-service"}, True, 0.7)
    ]
    spec = registry.match_url("https://api.example.org/v2/openapi.json")
    assert spec.family is None
    assert [(a.action, a.confidence) for a in spec.actions] == [
        ("get.dataservice.openapi_spec", 0.6)
    ]
    reuse = registry.match_url("https://www.data.gouv.fr/api/1/reuses/")
    assert reuse.catalog and reuse.actions == ()
    outside = registry.match_url("https://example.org/data.csv")
    assert not outside.catalog and outside.actions == ()
    post = registry.match_url("https://www.data.gouv.fr/api/1/datasets/", "POST")
    assert post.actions == ()


def test_host_aliases_for_a_local_twin(registry: ActionRegistry) -> None:
    url = "http://127.0.0.1:8765/api/1/datasets/d1/"
    assert registry.match_url(url).actions == ()
    twin = registry.with_host_aliases({"127.0.0.1:8765": "main", "localhost:9000": "tabular"})
    assert [a.action for a in twin.match_url(url).actions] == [
        "get.dataset.info",
        "get.dataset.resources",
    ]
    tabular = twin.match_url("http://localhost:9000/api/resources/r1/data/")
    assert tabular.actions[0].args == {"resource_id": "r1"}
    with pytest.raises(RegistryError, match="unknown host family 'nope'"):
        registry.with_host_aliases({"x": "nope"})


def test_cli_matching(registry: ActionRegistry) -> None:
    display = registry.match_cli(["dataset", "display", "d1"])
    assert display is not None
    assert display.actions == (("get.dataset.info", {"dataset_id": "d1"}),)
    get = registry.match_cli(["dataset", "get", "d1"])
    assert get is not None
    assert get.actions == (
        ("get.dataset.info", {"dataset_id": "d1"}),
        ("get.dataset.resources", {"dataset_id": "d1"}),
    )
    download = registry.match_cli(["resource", "download", "r1", "/tmp/x.csv"], "0.4.2")
    assert download is not None
    assert download.actions == (("get.data", {"resource_id": "r1"}),)
    organization = registry.match_cli(["organization", "get", "o1"])
    assert organization is not None
    assert organization.actions == ()
    assert "organization lookup by id" in organization.known_no_action
    assert registry.match_cli(["reuse", "get", "x"]) is None
    with pytest.raises(UnknownVersionError, match="datagouv CLI version 'local'"):
        registry.match_cli(["dataset", "get", "d1"], "local")


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "actions.yml"
    path.write_text(text, encoding="utf-8")
    return path


def test_strict_file_errors_name_file_and_field(tmp_path: Path) -> None:
    base = PACKAGED.read_text(encoding="utf-8")
    typo = _write(
        tmp_path, base.replace("    description: Full-text", "    descripton: Full-text", 1)
    )
    with pytest.raises(RegistryError) as caught:
        load_registry(typo)
    message = str(caught.value)
    assert str(typo) in message
    assert "actions.search.datasets.descripton" in message

    bad_spec = _write(tmp_path, base.replace('versions: ">=0.2.15"', 'versions: "from 0.2.15"', 1))
    with pytest.raises(RegistryError, match=r"'from 0\.2\.15' is not a PEP 440 version specifier"):
        load_registry(bad_spec)

    bad_family = _write(tmp_path, base.replace("{family: metrics,", "{family: metric,", 1))
    with pytest.raises(
        RegistryError, match=r"get\.metrics\.api\[0\]\.family: unknown host family 'metric'"
    ):
        load_registry(bad_family)

    bad_placeholder = _write(tmp_path, base.replace('{dataservice_id}/"}', '{service}/"}', 1))
    with pytest.raises(
        RegistryError, match=r"placeholder \{service\} is neither a semantic argument"
    ):
        load_registry(bad_placeholder)

    not_yaml = _write(tmp_path, "actions: [\n")
    with pytest.raises(RegistryError, match="not valid YAML"):
        load_registry(not_yaml)


def test_client_specs_cover_the_library_calls(registry: ActionRegistry) -> None:
    targets = {(spec.target, spec.action) for spec in registry.client_specs("0.5.0")}
    assert ("Dataset", "get.dataset.info") in targets
    assert ("Resource.rows", "get.data") in targets
    assert ("Resource.profile", "get.resource.profile") in targets
    assert ("Dataset.get_monthly_traffic_metrics", "get.metrics") in targets
    assert ("Organization.datasets", "search.datasets") in targets


def test_a_version_the_registry_does_not_cover_is_an_error_naming_the_ranges(
    registry: ActionRegistry,
) -> None:
    # 9.9.9 used to resolve silently to the newest tool set through open-ended specifiers.
    with pytest.raises(UncoveredVersionError) as caught:
        registry.actions_for_mcp_tool("search_datasets", "9.9.9", {})
    message = str(caught.value)
    assert "'9.9.9' is not covered" in message
    assert "'>=0.1.0,<=0.2.26'" in message
    assert isinstance(caught.value, UnknownVersionError)  # callers report it as a mapping error
    assert registry.check_mcp_version("0.2.26") == Version("0.2.26")
