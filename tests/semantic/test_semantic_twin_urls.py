"""Traces recorded before the hostname front: their recorded base URLs read as production ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from datagouv_eval_pipeline.core.semantic import (
    CallCategory,
    MappingStatus,
    TraceMapping,
    map_trace,
)
from datagouv_eval_pipeline.core.semantic.aliases import UrlAliases
from datagouv_eval_pipeline.core.traces import Trace, load_trace
from datagouv_eval_pipeline.world.catalogue.urls import TwinUrls

DS = "536c47d9a3a72933d8d1b3b2"
RID = "98f3161f-79ff-4f16-8f6a-6d571a80fea2"
SITE = "http://127.0.0.1:8765/"
TWIN = TwinUrls.for_site(SITE).as_dict()
FIXTURE = Path(__file__).parent / "fixtures" / "twin_coder_trace.json"


def _trace(calls: list[tuple[str, dict[str, Any]]], base_urls: dict[str, str] | None) -> Trace:
    return Trace.model_validate(
        {
            "task_id": "t",
            "tool_calls": [
                {"id": f"c{i}", "name": name, "arguments": args, "result": "ok"}
                for i, (name, args) in enumerate(calls)
            ],
            "provenance": {"base_urls": base_urls},
        }
    )


def _pairs(mapping: TraceMapping) -> list[tuple[str, dict[str, Any]]]:
    return [(instance.action, instance.args) for instance in mapping.instances]


def test_a_recorded_coder_trace_on_the_twin_maps_every_call() -> None:
    # Written by `run-cell offline~baseline-coder__code__data_gouv_context --tasks task_0001`:
    # httpx against http://127.0.0.1:44617/api/1/..., base URLs in its provenance.
    trace = load_trace(FIXTURE)
    assert trace.provenance.base_urls is not None
    assert trace.provenance.base_urls["tabular_api"] == "http://127.0.0.1:44617/tabular/api/"
    mapping = map_trace(trace)
    assert mapping.unmapped_call_ids == []
    assert [call.category for call in mapping.calls] == [CallCategory.DATAGOUV_API_HTTP] * 2
    query = (
        "etude acces soins sclerose plaques services neurologie hopitaux chu chr centres "
        "hospitaliers"
    )
    assert _pairs(mapping) == [
        ("search.datasets", {"query": query, "page_size": 5}),
        ("get.dataset.info", {"dataset_id": DS}),
        ("get.dataset.resources", {"dataset_id": DS}),
    ]
    # The reason shows the URL the agent used and the production pattern it matched.
    assert mapping.instances[0].reason == (
        "GET http://127.0.0.1:44617/api/1/datasets/ ~ main GET /api/1/datasets/"
    )


def test_every_twin_prefix_stands_for_its_production_api() -> None:
    code = f"""
import httpx
httpx.get("{SITE}api/2/datasets/search/", params={{"q": "vélos"}})
httpx.get("{SITE}tabular/api/resources/{RID}/profile/")
httpx.get("{SITE}tabular/api/resources/{RID}/data/", params={{"nom__exact": "x"}})
httpx.get("{SITE}metrics/api/datasets/data/", params={{"dataset_id__exact": "{DS}"}})
httpx.get("{SITE}datasets/r/{RID}")
httpx.get("{SITE}_ext/data.geopf.fr/geocodage/openapi.yaml")
"""
    mapping = map_trace(_trace([("execute_python", {"code": code})], TWIN))
    assert _pairs(mapping) == [
        ("search.datasets", {"query": "vélos"}),
        ("get.resource.profile", {"resource_id": RID}),
        ("get.data", {"resource_id": RID, "filters": "nom__exact=x"}),
        ("get.metrics", {"dataset_id": DS}),
        ("get.data", {"resource_id": RID}),
        ("get.dataservice.openapi_spec", {}),
    ]
    categories = [instance.category for instance in mapping.instances]
    # The spec lives on its producer's host: not a catalog API call.
    assert categories == [CallCategory.DATAGOUV_API_HTTP] * 5 + [CallCategory.FILE_LOAD_EXTERNAL]


def test_curl_and_fetch_on_the_twin() -> None:
    calls = [
        ("execute_shell", {"command": f"curl -s '{SITE}api/1/datasets/{DS}/resources/'"}),
        ("http_fetch", {"url": f"http://localhost:8765/tabular/api/resources/{RID}/"}),
        ("execute_shell", {"command": f"curl -s {SITE}tabular/health/"}),
    ]
    mapping = map_trace(_trace(calls, TWIN))
    assert _pairs(mapping) == [
        ("get.dataset.resources", {"dataset_id": DS}),
        ("get.resource.info", {"resource_id": RID}),  # localhost == the recorded 127.0.0.1
    ]
    # A twin URL under no API endpoint is a catalog URL matching nothing, left undecided.
    assert mapping.calls[2].status is MappingStatus.UNMAPPED
    assert "catalog URL(s) matching no endpoint" in mapping.calls[2].reason


def test_only_the_recorded_base_urls_are_aliases() -> None:
    code = f'import httpx\nhttpx.get("http://127.0.0.1:9999/api/1/datasets/{DS}/")'
    elsewhere = map_trace(_trace([("execute_python", {"code": code})], TWIN))
    assert elsewhere.instances == []  # another port than the run's twin
    live = map_trace(_trace([("execute_python", {"code": code})], TwinUrls.live().as_dict()))
    assert live.instances == []


def test_traces_without_base_urls_map_production_urls_only() -> None:
    loopback = (
        f'import requests\nrequests.get("http://localhost:40123/tabular/api/resources/{RID}/data/")'
    )
    assert map_trace(_trace([("execute_python", {"code": loopback})], None)).instances == []
    production = (
        "import requests\nrequests.get("
        f'"https://tabular-api.data.gouv.fr/api/resources/{RID}/data/")'
    )
    mapping = map_trace(_trace([("execute_python", {"code": production})], None))
    assert _pairs(mapping) == [("get.data", {"resource_id": RID})]
    # The base URLs given to map_trace override the (missing) recorded ones.
    pinned = map_trace(
        _trace([("execute_python", {"code": loopback})], None),
        base_urls=TwinUrls.for_site("http://localhost:40123/").as_dict(),
    )
    assert _pairs(pinned) == [("get.data", {"resource_id": RID})]


def test_resolve_rewrites_prefixes_longest_first() -> None:
    aliases = UrlAliases.from_base_urls(TWIN)
    assert aliases.resolve(f"{SITE}tabular/api/resources/r/") == (
        "https://tabular-api.data.gouv.fr/api/resources/r/"
    )
    assert aliases.resolve("HTTP://LOCALHOST:8765/api/1/site/") == (
        "https://www.data.gouv.fr/api/1/site/"
    )
    assert aliases.resolve("127.0.0.1:8765/crawler/api/resources-exceptions") == (
        "https://crawler.data.gouv.fr/api/resources-exceptions"
    )
    assert aliases.resolve(f"{SITE}_ext/static.data.gouv.fr/resources/a/b.csv?x=1") == (
        "https://static.data.gouv.fr/resources/a/b.csv?x=1"
    )
    assert aliases.resolve("https://example.org/a") == "https://example.org/a"
    assert UrlAliases.from_base_urls(TwinUrls.live().as_dict()).prefixes == ()
    assert UrlAliases.for_trace(None).resolve(f"{SITE}api/1/site/") == f"{SITE}api/1/site/"


def test_the_sandbox_base_url_variables_resolve_to_the_recorded_urls() -> None:
    code = f"""
import os
from os import getenv
import httpx
TAB = os.environ["DATAGOUV_TABULAR_API_URL"]
httpx.get(TAB + "resources/{RID}/data/", params={{"page_size": 5}})
httpx.get(getenv("DATAGOUV_API_URL", "https://www.data.gouv.fr/api/") + "1/datasets/{DS}/")
httpx.get(os.environ.get("NOT_SET", "https://www.data.gouv.fr/api/") + "2/datasets/search/")
"""
    shell = 'curl -s "${DATAGOUV_API_URL}2/organizations/search/?q=insee"'
    calls = [("execute_python", {"code": code}), ("execute_shell", {"command": shell})]
    mapping = map_trace(_trace(calls, TWIN))
    assert _pairs(mapping) == [
        ("get.data", {"resource_id": RID, "page_size": 5}),
        ("get.dataset.info", {"dataset_id": DS}),
        ("get.dataset.resources", {"dataset_id": DS}),
        ("search.datasets", {}),
        ("search.organizations", {"query": "insee"}),
    ]
    # Without recorded base URLs the variables hold the production URLs (what the sandbox
    # is given since the hostname front).
    production = map_trace(_trace(calls[:1], None))
    assert [i.action for i in production.instances] == [
        "get.data",
        "get.dataset.info",
        "get.dataset.resources",
        "search.datasets",
    ]
