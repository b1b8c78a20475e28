"""Code calls whose HTTP requests were recorded on the wire map what was sent, not the code."""

from __future__ import annotations

from typing import Any

from datagouv_eval_pipeline.semantic import map_trace
from datagouv_eval_pipeline.traces import Trace

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
