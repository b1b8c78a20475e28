"""Code calls whose HTTP requests were recorded on the wire map what was sent, not the code."""

from __future__ import annotations

from typing import Any

from datagouv_eval_pipeline.core.semantic import map_trace
from datagouv_eval_pipeline.core.traces import Trace

DS = "536c47d9a3a72933d8d1b3b2"
RID = "98f3161f-79ff-4f16-8f6a-6d571a80fea2"
API = "https://www.data.gouv.fr/api/1/datasets/"


def _trace(code: str, wire: list[dict[str, Any]] | None, *, result: str = "ok") -> Trace:
    call: dict[str, Any] = {
        "id": "c0",
        "name": "execute_python",
        "arguments": {"code": code},
        "result": result,
    }
    if wire is not None:
        call["http_requests"] = wire
    return Trace.model_validate({"task_id": "t", "tool_calls": [call]})


def _sent(url: str, status: int = 200) -> dict[str, Any]:
    return {"method": "GET", "url": url, "status": status, "bytes": 10, "duration_ms": 1.0}


def test_a_request_that_never_ran_is_not_credited() -> None:
    code = f'import requests\nif False:\n    requests.get("{API}{DS}/")\n'
    assert [i.action for i in map_trace(_trace(code, None)).instances] == [
        "get.dataset.info",
        "get.dataset.resources",
    ]  # the static reading credits it
    assert map_trace(_trace(code, [])).instances == []  # nothing was sent


def test_a_404_is_errored_per_request_and_a_local_error_errors_nothing() -> None:
    code = f'import requests\nrequests.get("{API}{DS}/").json()["missing"]\n'
    traceback = (
        "[stderr]\nTraceback (most recent call last):\nKeyError: 'missing'\n[error] exit code 1"
    )
    wire = [_sent(f"{API}nope/", 404), _sent(f"{API}{DS}/")]
    mapping = map_trace(_trace(code, wire, result=traceback))
    pairs = [(i.action, i.args, i.errored) for i in mapping.instances]
    assert pairs == [
        ("get.dataset.info", {"dataset_id": "nope"}, True),
        ("get.dataset.resources", {"dataset_id": "nope"}, True),
        ("get.dataset.info", {"dataset_id": DS}, False),
        ("get.dataset.resources", {"dataset_id": DS}, False),
    ]
    assert "sent, HTTP 404" in mapping.instances[0].reason


def test_exact_arguments_come_from_the_wire() -> None:
    # The code builds its URL in a way static analysis cannot follow; the wire has it.
    code = "import httpx, os\nhttpx.get(os.environ['SOMEWHERE'] + compute())\n"
    url = f"https://tabular-api.data.gouv.fr/api/resources/{RID}/data/?page_size=5&nom__exact=x"
    mapping = map_trace(_trace(code, [_sent(url)]))
    assert [(i.action, i.args) for i in mapping.instances] == [
        ("get.data", {"resource_id": RID, "page_size": 5, "filters": "nom__exact=x"})
    ]


def test_tunnels_only_fall_back_to_reading_the_code() -> None:
    code = f'import requests\nrequests.get("{API}{DS}/")\n'
    tunnel = {"method": "CONNECT", "url": "https://www.data.gouv.fr:443", "status": 200}
    mapping = map_trace(_trace(code, [tunnel]))
    assert [i.action for i in mapping.instances] == ["get.dataset.info", "get.dataset.resources"]


def _shell(command: str, wire: list[dict[str, Any]] | None, *, result: str = "ok") -> Trace:
    call: dict[str, Any] = {
        "id": "c0",
        "name": "bash",
        "arguments": {"command": command},
        "result": result,
    }
    if wire is not None:
        call["http_requests"] = wire
    return Trace.model_validate({"task_id": "t", "tool_calls": [call]})


def test_shell_requests_go_to_the_cli_invocation_that_sent_them() -> None:
    other = "5d13a8b6634f41070a43dff3"
    command = (
        f"datagouv dataset display nope; curl -s {API}{other}/; "
        f"datagouv resource download {RID} f.csv; datagouv dataset get $ID"
    )
    wire = [
        *[_sent(f"{API}nope/", 404)] * 5,  # the library's retries
        _sent(f"{API}{other}/"),  # curl
        _sent(f"https://www.data.gouv.fr/api/2/datasets/resources/{RID}/"),
        _sent("https://static.data.gouv.fr/resources/x/f.csv"),
        _sent(f"{API}{DS}/", 503),  # `$ID`, unknown statically: the wire says which id
    ]
    traceback = "Traceback (most recent call last):\nException: not found"
    mapping = map_trace(_shell(command, wire, result=traceback))
    rows = [(i.action, i.args, i.category.value, i.errored) for i in mapping.instances]
    assert rows == [
        ("get.dataset.info", {"dataset_id": "nope"}, "datagouv_cli", True),
        ("get.dataset.info", {"dataset_id": other}, "datagouv_api_http", False),
        ("get.dataset.resources", {"dataset_id": other}, "datagouv_api_http", False),
        ("get.data", {"resource_id": RID}, "datagouv_cli", False),
        ("get.dataset.info", {"dataset_id": DS}, "datagouv_cli", True),
        ("get.dataset.resources", {"dataset_id": DS}, "datagouv_cli", True),
    ]
    assert mapping.unmapped_call_ids == []


def test_a_cli_invocation_that_sent_nothing_never_ran() -> None:
    command = f"false && datagouv dataset get {DS}"
    static = map_trace(_shell(command, None))
    assert [i.action for i in static.instances] == ["get.dataset.info", "get.dataset.resources"]
    mapping = map_trace(_shell(command, []))
    assert mapping.instances == []
    assert "sent no request: it never ran" in mapping.calls[0].reason


def test_retries_of_a_failed_request_are_one_attempt_with_its_last_status() -> None:
    code = f'from datagouv import Dataset\nDataset("{DS}")\n'
    wire = [_sent(f"{API}{DS}/", 503), _sent(f"{API}{DS}/", 503), _sent(f"{API}{DS}/")]
    mapping = map_trace(_trace(code, wire))
    assert [(i.action, i.errored) for i in mapping.instances] == [
        ("get.dataset.info", False),
        ("get.dataset.resources", False),
    ]
