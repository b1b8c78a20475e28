"""The ``datagouv`` CLI's requests in the real sandbox are on the wire, and mapped from there."""

from __future__ import annotations

import pytest

from datagouv_eval_pipeline.core.benchmark.cells import Cell
from datagouv_eval_pipeline.core.semantic import CallCategory, map_trace
from datagouv_eval_pipeline.core.tasks.spec import TaskSpec
from datagouv_eval_pipeline.core.traces import Trace
from datagouv_eval_pipeline.pipeline.agents.capabilities import default_sandbox
from datagouv_eval_pipeline.pipeline.agents.output import FinalAnswer
from datagouv_eval_pipeline.pipeline.agents.runner import run_cell
from datagouv_eval_pipeline.world.api.server import TwinServer
from datagouv_eval_pipeline.world.sandbox.base import SandboxUnavailableError
from datagouv_eval_pipeline.world.sandbox.local import LocalSandbox

from .helpers import factory, key_of, scripted, variant

CATALOGUE = "5d13a8b6634f41070a43dff3"
SLUG = "catalogue-des-donnees-de-data-gouv-fr"
INVENTED = "5d13a8b6634f41070a43dfff"
TABLE = "f868cca6-8da1-4369-a78d-47463f19a9a3"
API = "https://www.data.gouv.fr/api/1/datasets/"


@pytest.fixture(scope="module", autouse=True)
def _needs_sandbox() -> None:
    sandbox = default_sandbox()
    assert isinstance(sandbox, LocalSandbox)
    try:
        _ = sandbox.isolation
    except SandboxUnavailableError as error:
        pytest.skip(f"no local sandbox here: {error}")


@pytest.fixture(scope="module")
def trace(cells: dict[str, Cell], twin: TwinServer, tasks: dict[str, TaskSpec]) -> Trace:
    cell = cells[key_of("baseline-thorough", "code+datagouv-cli")]
    commands = [
        f"datagouv dataset get {CATALOGUE}",
        f"datagouv dataset display {INVENTED}",
        f"datagouv dataset get {SLUG}",
        f"datagouv dataset display {CATALOGUE}",
        f"datagouv resource download {TABLE} /tmp/table.csv",
        "datagouv dataset get",
        f"datagouv resource download {TABLE} /no/such/dir/table.csv",
    ]
    steps = [("execute_cli", {"command": command}) for command in commands]
    model = scripted([*steps, FinalAnswer(answer="fini")])
    (run,) = run_cell(
        variant(cell, capabilities=("datagouv-cli",)),
        [tasks["task_0002"]],
        twin_urls=twin.urls,
        model_factory=factory(model),
    )
    assert run.status == "ok", run.status_reason
    return run


def test_every_cli_request_is_recorded_with_its_status(trace: Trace) -> None:
    sent = [
        [(r.method, r.url, r.status) for r in call.http_requests or []] for call in trace.tool_calls
    ]
    assert [call.http_requests is not None for call in trace.tool_calls] == [True] * 7
    assert sent[0] == [("GET", f"{API}{CATALOGUE}/", 200)]
    # Dataset(...).refresh() is retried by the library: five attempts, all on the wire.
    assert sent[1] == [("GET", f"{API}{INVENTED}/", 404)] * 5
    assert sent[2] == [("GET", f"{API}{SLUG}/", 200)]
    assert sent[3] == [("GET", f"{API}{CATALOGUE}/", 200)] * 2  # the library reads it twice
    info, download = sent[4]
    assert info == ("GET", f"https://www.data.gouv.fr/api/2/datasets/resources/{TABLE}/", 200)
    assert download[1].startswith("https://static.data.gouv.fr/") and download[2] == 200
    # The whole catalogue export (the real catalogue's rows) fits the sandbox's /tmp.
    assert (trace.tool_calls[4].http_requests or [])[1].bytes > 50_000_000
    assert "downloaded successfully" in str(trace.tool_calls[4].result)
    assert sent[5] == []  # a usage error: nothing was sent
    # It read the resource, then could not open the file: the download was never sent.
    assert [status for _, _, status in sent[6]] == [200]
    assert all(r.bytes > 0 for call in trace.tool_calls for r in call.http_requests or [])


def test_cli_calls_are_mapped_from_the_wire(trace: Trace) -> None:
    mapping = map_trace(trace)
    by_call = [
        [(i.action, dict(i.args), i.errored) for i in call.instances] for call in mapping.calls
    ]
    assert by_call == [
        [
            ("get.dataset.info", {"dataset_id": CATALOGUE}, False),
            ("get.dataset.resources", {"dataset_id": CATALOGUE}, False),
        ],
        # Five retries of one 404 are one errored attempt, with the exact id that was sent.
        [("get.dataset.info", {"dataset_id": INVENTED}, True)],
        [
            ("get.dataset.info", {"dataset_id": SLUG}, False),
            ("get.dataset.resources", {"dataset_id": SLUG}, False),
        ],
        # `display` shows attributes, not the resource list: the command decides the actions.
        [("get.dataset.info", {"dataset_id": CATALOGUE}, False)],
        [("get.data", {"resource_id": TABLE}, False)],
        [],
        # No request fetched the file and the command failed: the download failed.
        [("get.data", {"resource_id": TABLE}, True)],
    ]
    assert not mapping.calls[4].errored
    assert mapping.calls[6].errored  # the call itself failed (a traceback)
    assert {call.category for call in mapping.calls} == {CallCategory.DATAGOUV_CLI}
    assert mapping.calls[1].errored and "HTTP 404" in mapping.calls[1].instances[0].reason
    assert "usage error" in mapping.calls[5].reason
    assert mapping.unmapped_call_ids == []
