"""Wire behaviour of the MCP endpoints: SSE framing, statelessness, Host checks, /health."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from datagouv_eval_pipeline.world.catalogue.urls import TwinUrls
from datagouv_eval_pipeline.world.mcp.server import mcp_url

ACCEPT = {"Accept": "application/json, text/event-stream"}
TRANSPORTS = "55e4129788ee386899a46ec1"


def endpoint(urls: TwinUrls, version: str) -> str:
    return mcp_url(urls.site, version)


def _rpc(method: str, params: dict[str, Any], rpc_id: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params}


def _sse_message(response: httpx.Response) -> dict[str, Any]:
    """Parse a reply that must be exactly one SSE ``message`` event."""
    assert response.headers["content-type"].startswith("text/event-stream")
    events = [e for e in response.text.replace("\r\n", "\n").split("\n\n") if e.strip()]
    assert len(events) == 1, response.text
    lines = events[0].split("\n")
    assert lines[0] == "event: message"
    assert lines[1].startswith("data: ")
    message: dict[str, Any] = json.loads(lines[1][len("data: ") :])
    return message


def test_tools_call_without_initialize_is_one_sse_frame_and_stateless(live_twin: TwinUrls) -> None:
    call = _rpc("tools/call", {"name": "get_dataset_info", "arguments": {"dataset_id": TRANSPORTS}})
    response = httpx.post(endpoint(live_twin, "0.2.26"), json=call, headers=ACCEPT, timeout=10)
    assert response.status_code == 200
    assert "mcp-session-id" not in response.headers
    message = _sse_message(response)
    result = message["result"]
    assert message["id"] == 1 and result["isError"] is False
    text = result["content"][0]["text"]
    assert text.startswith("Dataset Information: Transports\n")
    assert result["structuredContent"] == {"result": text}


def test_initialize_echoes_the_protocol_and_names_the_server(live_twin: TwinUrls) -> None:
    init = _rpc(
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    )
    response = httpx.post(endpoint(live_twin, "0.2.19"), json=init, headers=ACCEPT, timeout=10)
    result = _sse_message(response)["result"]
    assert result["protocolVersion"] == "2025-06-18"
    assert result["serverInfo"] == {"name": "data.gouv.fr MCP server", "version": "1.26.0"}
    # mcp 1.x announces an empty experimental capability too.
    assert set(result["capabilities"]) == {"experimental", "tools", "prompts", "resources"}
    assert result["capabilities"]["experimental"] == {}
    assert result["capabilities"]["tools"] == {"listChanged": False}
    assert "mcp-session-id" not in response.headers


def _initialize(live_twin: TwinUrls, version: str, asked: str, host: str | None = None) -> Any:
    init = _rpc(
        "initialize",
        {"protocolVersion": asked, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    )
    headers = {**ACCEPT, "Host": host} if host else ACCEPT
    return httpx.post(endpoint(live_twin, version), json=init, headers=headers, timeout=10)


def test_0_2_5_negotiates_as_mcp_1_22_and_keeps_sessions(live_twin: TwinUrls) -> None:
    # mcp 1.22 knew protocol versions up to 2025-06-18: a newer one gets its newest.
    newer = _initialize(live_twin, "0.2.5", "2025-11-25")
    assert _sse_message(newer)["result"]["protocolVersion"] == "2025-06-18"
    older = _initialize(live_twin, "0.2.5", "2025-03-26")
    assert _sse_message(older)["result"]["protocolVersion"] == "2025-03-26"
    assert (
        _sse_message(_initialize(live_twin, "0.2.14", "2025-11-25"))["result"]["protocolVersion"]
        == "2025-11-25"
    )
    # Up to 0.2.17 the server keeps a session per client: initialize opens one, and a request
    # without it is refused.
    assert newer.headers["mcp-session-id"]
    call = _rpc("tools/call", {"name": "get_dataset_info", "arguments": {"dataset_id": TRANSPORTS}})
    for version in ("0.2.5", "0.2.14"):
        refused = httpx.post(endpoint(live_twin, version), json=call, headers=ACCEPT, timeout=10)
        assert refused.status_code == 400
        assert refused.json()["error"]["message"] == "Bad Request: Missing session ID"
    # A request carrying a protocol version mcp 1.22 did not know is refused.
    header = {**ACCEPT, "mcp-protocol-version": "2025-11-25"}
    unknown = httpx.post(endpoint(live_twin, "0.2.5"), json=call, headers=header, timeout=10)
    assert unknown.status_code == 400
    assert unknown.json()["error"]["message"] == (
        "Bad Request: Unsupported protocol version: 2025-11-25. "
        "Supported versions: 2024-11-05, 2025-03-26, 2025-06-18"
    )
    # 0.2.5 checks no Host header.
    assert _initialize(live_twin, "0.2.5", "2025-06-18", host="datagouv-mcp:8000").status_code == (
        200
    )


@pytest.mark.parametrize(
    ("version", "host", "status"),
    [
        ("0.2.26", "datagouv-mcp:8000", 421),
        ("0.2.26", "localhost:8000", 200),
        ("0.2.26", "mcp.data.gouv.fr", 200),
        ("0.2.19", "example.org", 421),
    ],
)
def test_host_allow_list_per_release(
    live_twin: TwinUrls, version: str, host: str, status: int
) -> None:
    call = _rpc("tools/call", {"name": "get_dataset_info", "arguments": {"dataset_id": TRANSPORTS}})
    response = httpx.post(
        endpoint(live_twin, version), json=call, headers={**ACCEPT, "Host": host}, timeout=10
    )
    assert response.status_code == status
    if status == 421:
        assert response.text == "Invalid Host header"
    else:
        # Links in the output are production URLs, whatever host the client used.
        assert (
            "URL: https://www.data.gouv.fr/datasets/transports/"
            in _sse_message(response)["result"]["content"][0]["text"]
        )


def test_mcp_1x_wire_rules(live_twin: TwinUrls) -> None:
    url = endpoint(live_twin, "0.2.26")
    modern = httpx.post(
        url,
        json=_rpc("server/discover", {}),
        headers={**ACCEPT, "mcp-protocol-version": "2026-07-28"},
        timeout=10,
    )
    assert modern.status_code == 400
    assert modern.json()["error"]["message"].startswith(
        "Bad Request: Unsupported protocol version: 2026-07-28. Supported versions: 2024-11-05"
    )
    assert httpx.get(url, headers={"Accept": "*/*"}, timeout=10).status_code == 406
    wrong_type = httpx.post(url, content=b"{}", headers={**ACCEPT, "Content-Type": "text/plain"})
    assert (wrong_type.status_code, wrong_type.text) == (400, "Invalid Content-Type header")
    unknown = httpx.post(live_twin.site + "mcp/v0.2.99/mcp", json={}, headers=ACCEPT)
    assert unknown.status_code == 404
    slash = httpx.post(url + "/", json={}, headers=ACCEPT)
    assert (slash.status_code, slash.headers["location"]) == (307, "/mcp/v0.2.26/mcp")
    assert httpx.get(f"{live_twin.site}mcp/v0.2.26/other").status_code == 404


def test_health_shape_per_release(live_twin: TwinUrls) -> None:
    with httpx.Client(timeout=10) as http:
        old = http.get(f"{live_twin.site}mcp/v0.2.5/health").json()
        middle = http.get(f"{live_twin.site}mcp/v0.2.19/health").json()
        new = http.get(f"{live_twin.site}mcp/v0.2.26/health")
    assert set(old) == {"status", "timestamp"} and old["status"] == "ok"
    assert set(middle) == {"status", "timestamp", "version"} and middle["version"] == "0.2.19"
    assert new.status_code == 200
    assert new.json()["status"] == "ok"
    assert set(new.json()) == {"status", "uptime_since", "version", "env", "data_env"}


def test_a_pydantic_ai_agent_uses_the_twin(live_twin: TwinUrls) -> None:
    """The agent client the pipeline uses lists and calls the tools of a release."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            names = sorted(t.name for t in info.function_tools)
            assert "query_dataset_data" in names and "query_resource_data" not in names
            return ModelResponse(
                parts=[ToolCallPart("get_dataset_info", {"dataset_id": TRANSPORTS})]
            )
        returned = [
            p for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)
        ]
        return ModelResponse(parts=[TextPart(str(returned[0].content).splitlines()[0])])

    agent = Agent(FunctionModel(model), toolsets=[MCPToolset(endpoint(live_twin, "0.2.5"))])
    result = agent.run_sync("Quel est ce jeu de données ?")
    assert result.output == "Dataset Information: Transports"


@pytest.mark.parametrize(("version", "pydantic_docs"), [("0.2.19", "2.12"), ("0.2.26", "2.13")])
def test_argument_errors_link_the_pydantic_of_the_release(
    live_twin: TwinUrls, version: str, pydantic_docs: str
) -> None:
    call = _rpc("tools/call", {"name": "get_dataset_info", "arguments": {}})
    response = httpx.post(endpoint(live_twin, version), json=call, headers=ACCEPT, timeout=10)
    result = _sse_message(response)["result"]
    assert result["isError"] is True
    (block,) = result["content"]
    assert block["text"].startswith("Error executing tool get_dataset_info: 1 validation error")
    assert block["text"].endswith(
        f"For further information visit https://errors.pydantic.dev/{pydantic_docs}/v/missing"
    )
