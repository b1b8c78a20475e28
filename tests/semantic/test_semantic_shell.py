"""map_trace on shell commands: the datagouv CLI, curl/wget/httpie, scripts, web fetch."""

from __future__ import annotations

from typing import Any

from datagouv_eval_pipeline.core.semantic import (
    CallCategory,
    MappingStatus,
    TraceMapping,
    map_trace,
)
from datagouv_eval_pipeline.core.semantic.code_calls import (
    CliInvocation,
    HttpRequest,
    analyze_shell,
)
from datagouv_eval_pipeline.core.traces import Trace

DS = "536c47d9a3a72933d8d1b3b2"
RID = "98f3161f-79ff-4f16-8f6a-6d571a80fea2"


def _run(*commands: str, tool: str = "execute_cli", result: str = "ok") -> TraceMapping:
    calls: list[dict[str, Any]] = [
        {"id": f"c{i}", "name": tool, "arguments": {"command": command}, "result": result}
        for i, command in enumerate(commands)
    ]
    return map_trace(Trace.model_validate({"task_id": "t", "tool_calls": calls}))


def _pairs(mapping: TraceMapping) -> list[tuple[str, dict[str, Any]]]:
    return [(instance.action, instance.args) for instance in mapping.instances]


def test_cli_commands() -> None:
    mapping = _run(
        f"datagouv dataset display {DS}",
        f"datagouv dataset get {DS} | jq '.resources[].url'",
        f"datagouv resource display {RID} && datagouv resource download {RID} /tmp/x.csv",
    )
    assert _pairs(mapping) == [
        ("get.dataset.info", {"dataset_id": DS}),
        ("get.dataset.info", {"dataset_id": DS}),
        ("get.dataset.resources", {"dataset_id": DS}),
        ("get.resource.info", {"resource_id": RID}),
        ("get.data", {"resource_id": RID}),
    ]
    assert {c.category for c in mapping.calls} == {CallCategory.DATAGOUV_CLI}
    assert {i.confidence for i in mapping.instances} == {0.9}
    assert mapping.instances[4].reason == "CLI 'datagouv resource download'"


def test_cli_without_action() -> None:
    mapping = _run(
        "datagouv --help",
        "datagouv organization get 534fff81a3a7292c64a77e5c",
        "datagouv dataset create 'T' 'D' --organization-id o1",
        "datagouv reuse list",
    )
    assert mapping.instances == []
    assert [c.status for c in mapping.calls] == [
        MappingStatus.NO_ACTION,
        MappingStatus.NO_ACTION,
        MappingStatus.NO_ACTION,
        MappingStatus.UNMAPPED,
    ]
    assert "help" in mapping.calls[0].reason
    assert "organization lookup by id" in mapping.calls[1].reason
    assert "write command" in mapping.calls[2].reason
    assert mapping.unmapped_call_ids == ["c3"]


def test_curl_wget_httpie() -> None:
    mapping = _run(
        "curl -sS -H 'Accept: application/json' "
        "'https://www.data.gouv.fr/api/2/datasets/search/?q=finess&page_size=5' | jq .total",
        "curl -G https://www.data.gouv.fr/api/1/datasets/ --data-urlencode 'q=hôpitaux'",
        f"wget -q -O /tmp/f.csv https://www.data.gouv.fr/fr/datasets/r/{RID}",
        f"http GET https://tabular-api.data.gouv.fr/api/resources/{RID}/data/ dep_code__exact==32",
        "curl -X POST https://www.data.gouv.fr/api/1/datasets/ -d '{}'",
    )
    assert _pairs(mapping) == [
        ("search.datasets", {"query": "finess", "page_size": 5}),
        ("search.datasets", {"query": "hôpitaux"}),
        ("get.data", {"resource_id": RID}),
        ("get.data", {"resource_id": RID, "filters": "dep_code__exact=32"}),
    ]
    assert mapping.calls[4].status is MappingStatus.UNMAPPED  # a write: no read action matches
    assert mapping.calls[0].category is CallCategory.DATAGOUV_API_HTTP


def test_shell_variables_loops_and_comments() -> None:
    script = f"""
# fetch both resources
API=https://tabular-api.data.gouv.fr/api/resources
for rid in r1 r2; do
  curl -s "$API/$rid/profile/"   # column types
done
RID={RID}; curl -s "${{API}}/${{RID}}/data/?page_size=2"
"""
    assert _pairs(_run(script)) == [
        ("get.resource.profile", {"resource_id": "r1"}),
        ("get.resource.profile", {"resource_id": "r2"}),
        ("get.data", {"resource_id": RID, "page_size": 2}),
    ]


def test_python_inside_shell() -> None:
    inline = _run(
        'python3 -c "import requests; print(requests.get('
        f"'https://www.data.gouv.fr/api/1/datasets/{DS}/').status_code)\""
    )
    assert [i.action for i in inline.instances] == ["get.dataset.info", "get.dataset.resources"]
    heredoc = _run(
        "cat > /tmp/q.py <<'EOF'\n"
        "import httpx\n"
        "print(httpx.get('https://www.data.gouv.fr/api/2/dataservices/search/?q=annuaire').text)\n"
        "EOF\n"
        "python3 /tmp/q.py | head -5"
    )
    assert _pairs(heredoc) == [("search.dataservices", {"query": "annuaire"})]


def test_local_commands_perform_no_action() -> None:
    mapping = _run("ls -la /tmp && head -3 /tmp/f.csv | cut -d';' -f1")
    assert mapping.calls[0].category is CallCategory.PYTHON_LOCAL_ANALYSIS
    assert mapping.calls[0].status is MappingStatus.NO_ACTION


def test_web_fetch_of_api_pages_and_others() -> None:
    calls = [
        {
            "id": "a",
            "name": "http_fetch",
            "arguments": {"url": f"https://www.data.gouv.fr/api/1/datasets/{DS}/"},
        },
        {
            "id": "b",
            "name": "http_fetch",
            "arguments": {"url": "https://www.data.gouv.fr/fr/datasets/finess/"},
        },
        {
            "id": "c",
            "name": "http_fetch",
            "arguments": {"url": "https://fr.wikipedia.org/wiki/FINESS"},
        },
        {
            "id": "d",
            "name": "http_fetch",
            "arguments": {"url": "https://www.data.gouv.fr/api/1/reuses/"},
        },
        {"id": "e", "name": "web_search", "arguments": {"query": "finess data.gouv"}},
    ]
    mapping = map_trace(Trace.model_validate({"task_id": "t", "tool_calls": calls}))
    assert [(c.category, c.status) for c in mapping.calls] == [
        (CallCategory.DATAGOUV_API_HTTP, MappingStatus.MAPPED),
        (CallCategory.WEB_PAGE_FETCH, MappingStatus.MAPPED),
        (CallCategory.WEB_PAGE_FETCH, MappingStatus.NO_ACTION),
        (CallCategory.DATAGOUV_API_HTTP, MappingStatus.UNMAPPED),
        (CallCategory.WEB_SEARCH, MappingStatus.NO_ACTION),
    ]
    assert [(i.source_call_id, i.action, i.confidence) for i in mapping.instances] == [
        ("a", "get.dataset.info", 0.9),
        ("a", "get.dataset.resources", 0.9),
        ("b", "get.dataset.info", 0.7),
    ]


def test_openapi_spec_url_linked_from_dataservice_info() -> None:
    info = (
        "Third-party API information: API Adresse\nID: 672cf67802ef6b1be63b8975\n"
        "OpenAPI/Swagger spec: https://data.geopf.fr/geocodage/openapi.yaml\n"
    )
    calls = [
        {
            "id": "a",
            "name": "get_dataservice_info",
            "arguments": {"dataservice_id": "672cf67802ef6b1be63b8975"},
            "result": info,
        },
        {
            "id": "b",
            "name": "http_fetch",
            "arguments": {"url": "https://data.geopf.fr/geocodage/openapi.yaml"},
        },
    ]
    mapping = map_trace(
        Trace.model_validate({"task_id": "t", "mcp_version": "0.2.26", "tool_calls": calls})
    )
    spec = mapping.instances[1]
    assert (spec.action, spec.args, spec.confidence, spec.category) == (
        "get.dataservice.openapi_spec",
        {"dataservice_id": "672cf67802ef6b1be63b8975"},
        0.85,
        CallCategory.WEB_PAGE_FETCH,
    )


def test_analyze_shell_events() -> None:
    analysis = analyze_shell(
        "datagouv dataset get abc 2>&1 | tee out.json; curl -I https://x.org/a"
    )
    assert analysis.events == [
        CliInvocation("datagouv", ("dataset", "get", "abc")),
        HttpRequest("HEAD", "https://x.org/a", (), "curl"),
    ]
