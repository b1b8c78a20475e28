"""``tools/list`` and ``initialize`` of each release against the real server's answers."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from datagouv_eval_pipeline.world.catalogue.urls import TwinUrls
from datagouv_eval_pipeline.world.mcp.server import mcp_url
from datagouv_eval_pipeline.world.mcp.versions import (
    REQUIRED,
    VERSIONS,
    get_version,
)

SERVED = ("0.2.5", "0.2.14", "0.2.19", "0.2.26")


def endpoint(urls: TwinUrls, version: str) -> str:
    return mcp_url(urls.site, version)


def load_fixture(name: str) -> Any:
    return json.loads((Path(__file__).parent / "fixtures" / name).read_text(encoding="utf-8"))


async def _list(url: str) -> tuple[list[dict[str, Any]], dict[str, Any], bool]:
    async with Client(url) as client:
        listed = await client.list_tools()
        session = client.session
        init = session.initialize_result
        # Auto mode: the twin refuses the 2026 discover probe as an mcp 1.x server does, so
        # the client falls back to the handshake-era initialize.
        assert init is not None
        info = init.server_info.model_dump(mode="json", exclude_none=True)
        tools = [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in listed.tools]
        return tools, info, init.capabilities.tools is not None


@pytest.mark.parametrize("version", SERVED)
def test_tools_list_is_the_real_one(live_twin: TwinUrls, version: str) -> None:
    tools, server_info, has_tools = asyncio.run(_list(endpoint(live_twin, version)))
    facts = load_fixture("server_facts.json")[version]
    assert [t["name"] for t in tools] == facts["order"]
    assert server_info == facts["serverInfo"]
    assert has_tools
    descriptions = {t["name"]: t.pop("description") for t in tools}
    # Own descriptions, non-trivial; everything else identical to the real dump.
    assert all(len(d) > 60 for d in descriptions.values())
    expected = load_fixture(f"tools_list_v{version}.json")
    assert sorted(tools, key=lambda t: t["name"]) == expected


def test_titles_and_annotations_only_where_the_release_had_them(live_twin: TwinUrls) -> None:
    old, _, _ = asyncio.run(_list(endpoint(live_twin, "0.2.19")))
    new, _, _ = asyncio.run(_list(endpoint(live_twin, "0.2.26")))
    assert all("title" not in t and "annotations" not in t for t in old)
    titles = {t["name"]: t["title"] for t in new}
    assert titles["search_dataservices"] == "Search third-party APIs"
    assert titles["get_metrics"] == "Get usage metrics"
    assert {frozenset(t["annotations"].items()) for t in new} == {
        frozenset(
            {
                "readOnlyHint": True,
                "destructiveHint": False,
                "idempotentHint": True,
                "openWorldHint": True,
            }.items()
        )
    }


def test_version_table_matches_the_reference_signatures() -> None:
    spec = get_version("v0.2.5")
    query = spec.tool("query_dataset_data")
    assert query is not None
    assert [(p.name, p.default) for p in query.params] == [
        ("question", REQUIRED),
        ("dataset_id", None),
        ("dataset_query", None),
        ("limit_per_resource", 100),
    ]
    download = get_version("0.2.19").tool("download_and_parse_resource")
    assert download is not None and download.param_names() == ("resource_id", "max_rows")
    assert get_version("0.2.26").tool("download_and_parse_resource") is None
    assert VERSIONS["0.2.26"].behaviour.metrics_limit_max == 50
    assert VERSIONS["0.2.19"].behaviour.metrics_limit_max == 100
    with pytest.raises(KeyError, match=r"'0\.2\.99' is not emulated by the twin; served: "):
        get_version("0.2.99")
