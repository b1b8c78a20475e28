"""map_trace on MCP calls: version resolution, argument renaming, one action per call."""

from __future__ import annotations

import json
from typing import Any

import pytest

from datagouv_eval_pipeline.core.semantic import (
    CallCategory,
    MappingStatus,
    UnknownVersionError,
    map_trace,
)
from datagouv_eval_pipeline.core.traces import Trace


def _trace(calls: list[dict[str, Any]], mcp_version: str | None = "0.2.26") -> Trace:
    return Trace.model_validate(
        {"task_id": "task_0001", "mcp_version": mcp_version, "tool_calls": calls}
    )


def _call(call_id: str, name: str, arguments: Any, result: str = "ok") -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": arguments, "result": result}


def test_json_string_arguments_are_parsed_renamed_and_normalised() -> None:
    trace = _trace(
        [
            _call(
                "c1",
                "search_datasets",
                json.dumps({"query": "  vélos en libre service ", "page": 2}),
            ),
            _call(
                "c2",
                "query_resource_data",
                '{"resource_id": "3b6b2281-b9d9-4959-ae9d-c2c166dff118", "page_size": 20, '
                '"filter_column": "COMM", "filter_value": "31557", "filter_operator": "exact"}',
            ),
        ]
    )
    mapping = map_trace(trace)
    assert [(i.action, i.args) for i in mapping.instances] == [
        ("search.datasets", {"query": "vélos en libre service"}),
        (
            "get.data",
            {
                "resource_id": "3b6b2281-b9d9-4959-ae9d-c2c166dff118",
                "page_size": 20,
                "filters": "COMM__exact=31557",
            },
        ),
    ]
    first = mapping.instances[0]
    assert first.source_call_id == "c1"
    assert first.source_tool == "search_datasets"
    assert first.category is CallCategory.MCP_TOOL
    assert first.confidence == 1.0
    assert first.errored is False


def test_profile_probe_yields_one_instance_not_two() -> None:
    trace = _trace(
        [
            _call("probe", "query_resource_data", {"resource_id": "r1", "page_size": 3}),
            _call("rows", "query_resource_data", {"resource_id": "r1", "page_size": 50}),
        ]
    )
    mapping = map_trace(trace)
    assert [(i.source_call_id, i.action) for i in mapping.instances] == [
        ("probe", "get.resource.profile"),
        ("rows", "get.data"),
    ]
    assert "page_size <= 5" in mapping.calls[0].reason


def test_every_tool_of_a_realistic_trace_maps_once() -> None:
    calls = [
        _call("1", "search_datasets", {"query": "élus"}),
        _call("2", "get_dataset_info", {"dataset_id": "5c34c4d1634f4173183a64f1"}),
        _call("3", "list_dataset_resources", {"dataset_id": "5c34c4d1634f4173183a64f1"}),
        _call("4", "get_resource_info", {"resource_id": "3b6b2281"}),
        _call("5", "get_metrics", {"dataset_id": "5c34", "resource_id": "3b6b", "limit": 3}),
        _call("6", "search_dataservices", {"query": "entreprises"}),
        _call("7", "get_dataservice_info", {"dataservice_id": "672cf684"}),
        _call("8", "get_dataservice_openapi_spec", {"dataservice_id": "672cf684"}),
        _call("9", "search_organizations", {"query": "insee", "badge": "public-service"}),
    ]
    mapping = map_trace(_trace(calls))
    assert [(i.action, i.args) for i in mapping.instances] == [
        ("search.datasets", {"query": "élus"}),
        ("get.dataset.info", {"dataset_id": "5c34c4d1634f4173183a64f1"}),
        ("get.dataset.resources", {"dataset_id": "5c34c4d1634f4173183a64f1"}),
        ("get.resource.info", {"resource_id": "3b6b2281"}),
        ("get.metrics", {"dataset_id": "5c34", "resource_id": "3b6b"}),
        ("search.dataservices", {"query": "entreprises"}),
        ("get.dataservice.info", {"dataservice_id": "672cf684"}),
        ("get.dataservice.openapi_spec", {"dataservice_id": "672cf684"}),
        ("search.organizations", {"query": "insee"}),
    ]
    assert mapping.mapped_fraction == 1.0
    assert mapping.unmapped_call_ids == []
    assert mapping.counts[CallCategory.MCP_TOOL] == 9
    assert sum(mapping.counts.values()) == 9
    assert mapping.warnings == ()


def test_old_tool_maps_before_0_2_6_only() -> None:
    call = _call(
        "c1",
        "query_dataset_data",
        {"question": "combien ?", "dataset_id": "d1", "dataset_query": "élus"},
    )
    old = map_trace(_trace([call], "0.2.5"))
    assert [(i.action, i.args) for i in old.instances] == [
        ("get.data", {"dataset_id": "d1", "query": "élus"})
    ]
    new = map_trace(_trace([call], "0.2.26"))
    assert new.instances == []
    assert new.calls[0].status is MappingStatus.UNMAPPED
    assert new.calls[0].category is CallCategory.MCP_TOOL
    assert new.unmapped_call_ids == ["c1"]
    assert any("query_dataset_data is not mapped at 0.2.26" in w for w in new.warnings)


def test_known_write_tool_is_decided_without_action() -> None:
    mapping = map_trace(_trace([_call("c1", "create_dataset", {"title": "x"})], "0.2.0"))
    assert mapping.calls[0].status is MappingStatus.NO_ACTION
    assert mapping.instances == []
    assert mapping.unmapped_call_ids == []


@pytest.mark.parametrize("label", ["local", ""])
def test_unknown_version_label_raises(label: str) -> None:
    trace = _trace([_call("c1", "search_datasets", {"query": "x"})], label)
    with pytest.raises(UnknownVersionError, match="PEP 440"):
        map_trace(trace)


def test_version_override_and_missing_version() -> None:
    trace = _trace([_call("c1", "search_datasets", {"query": "x"})], None)
    unversioned = map_trace(trace)
    assert unversioned.mcp_version is None
    assert unversioned.instances[0].confidence == 0.9
    assert unversioned.warnings == (
        "the trace has no mcp_version: MCP tools were matched across all versions",
    )
    pinned = map_trace(trace, mcp_version="0.2.19")
    assert pinned.mcp_version == "0.2.19"
    assert pinned.instances[0].confidence == 1.0
    assert pinned.warnings == ()


def test_server_tool_list_makes_unknown_tools_mcp() -> None:
    trace = _trace([_call("c1", "get_reuse_info", {"reuse_id": "x"})])
    without = map_trace(trace)
    assert without.calls[0].category is CallCategory.UNCLASSIFIED
    with_list = map_trace(trace, mcp_tool_names=["search_datasets", "get_reuse_info"])
    assert with_list.calls[0].category is CallCategory.MCP_TOOL
    assert with_list.calls[0].status is MappingStatus.UNMAPPED
    assert with_list.unmapped_call_ids == ["c1"]


def test_empty_trace_has_no_fraction() -> None:
    mapping = map_trace(_trace([]))
    assert mapping.mapped_fraction is None
    assert mapping.mapped_fraction_reason == "the trace has no tool calls"
    assert mapping.action_fraction is None
    assert mapping.instances == []


def test_fractions_and_json_export() -> None:
    trace = _trace(
        [
            _call("c1", "search_datasets", {"query": "x"}),
            _call("c2", "duckduckgo_search", {"query": "x"}),
            _call("c3", "mystery", {}),
            _call(
                "c4",
                "get_dataset_info",
                {"dataset_id": "d"},
                "Error: Dataset with ID 'd' not found.",
            ),
        ]
    )
    mapping = map_trace(trace)
    # c1, c2 and c4 are decided; c3 is left for a classifier.
    assert mapping.mapped_fraction == 3 / 4
    assert mapping.action_fraction == 2 / 4
    assert mapping.unmapped_call_ids == ["c3"]
    exported = json.loads(json.dumps(mapping.to_dict()))
    assert exported["registry_version"] == "1.0.0"
    assert exported["counts"]["mcp_tool"] == 2
    assert exported["counts"]["web_search"] == 1
    assert exported["counts"]["unclassified"] == 1
    assert exported["calls"][3]["errored"] is True
    assert exported["calls"][3]["instances"][0] == {
        "action": "get.dataset.info",
        "args": {"dataset_id": "d"},
        "source_call_id": "c4",
        "source_tool": "get_dataset_info",
        "category": "mcp_tool",
        "confidence": 1.0,
        "errored": True,
        "reason": "MCP get_dataset_info at 0.2.26 → get.dataset.info",
    }
