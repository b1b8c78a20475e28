"""The code, datagouv-cli and python-sdk capabilities in the real local sandbox."""

from __future__ import annotations

import pytest

from datagouv_eval_pipeline.core.benchmark.cells import Cell
from datagouv_eval_pipeline.core.tasks.spec import TaskSpec
from datagouv_eval_pipeline.pipeline.agents.capabilities import default_sandbox
from datagouv_eval_pipeline.pipeline.agents.output import FinalAnswer
from datagouv_eval_pipeline.pipeline.agents.runner import run_cell
from datagouv_eval_pipeline.world.api.server import TwinServer
from datagouv_eval_pipeline.world.sandbox.base import SandboxUnavailableError
from datagouv_eval_pipeline.world.sandbox.local import LocalSandbox

from .helpers import factory, key_of, scripted, variant


@pytest.fixture(scope="module", autouse=True)
def _needs_sandbox() -> None:
    sandbox = default_sandbox()
    assert isinstance(sandbox, LocalSandbox)
    try:
        _ = sandbox.isolation
    except SandboxUnavailableError as error:
        pytest.skip(f"no local sandbox here: {error}")


def test_coder_baseline_writes_python_against_the_twin(
    cells: dict[str, Cell], twin: TwinServer, tasks: dict[str, TaskSpec]
) -> None:
    (trace,) = run_cell(
        cells[key_of("baseline-coder", "code")], [tasks["task_0003"]], twin_urls=twin.urls
    )
    assert trace.status == "ok", trace.status_reason
    # Every word of a search is required (production semantics): a search whose rows share
    # no word with the question is followed by one with a word fewer, then the dataset step.
    *searches, dataset = trace.tool_calls
    assert {call.name for call in trace.tool_calls} == {"execute_python"}
    assert 1 <= len(searches) <= 6
    assert all("# search the catalogue" in call.arguments["code"] for call in searches)
    search = searches[-1]
    # Production URLs only (the v2 search): the sandbox's proxy answers for them with the twin.
    assert "https://www.data.gouv.fr/api/2/datasets/search/" in search.arguments["code"]
    assert str(twin.urls.site) not in search.arguments["code"] + search.result
    # The sandbox's proxy recorded what the code sent, and the mapper reads that.
    assert search.http_requests is not None
    (sent,) = search.http_requests
    assert sent.method == "GET" and sent.status == 200 and sent.bytes > 0
    assert sent.url.startswith("https://www.data.gouv.fr/api/2/datasets/search/?")
    assert not search.error and not dataset.error
    listed = [line.split(" | ", 1)[0] for line in search.result.splitlines() if " | " in line]
    assert trace.ids_used
    chosen = trace.ids_used[0]
    assert chosen in listed and chosen in dataset.arguments["code"]
    assert f"identifiant {chosen}" in trace.answer
    assert trace.ids_used == [chosen]


def test_sandboxed_tools_report_failures_and_run_the_datagouv_cli(
    cells: dict[str, Cell], twin: TwinServer, tasks: dict[str, TaskSpec]
) -> None:
    base = cells[key_of("baseline-thorough", "code+datagouv-cli")]
    cell = variant(base, capabilities=("code", "datagouv-cli", "python-sdk"))
    model = scripted(
        [
            ("execute_python", {"code": "x = 1\nraise ValueError('boom')"}),
            ("execute_cli", {"command": "cat /etc/passwd"}),
            ("execute_cli", {"command": "datagouv dataset get 5d13a8b6634f41070a43dff3"}),
            (
                "execute_python",
                {
                    "code": "from datagouv import Dataset\n"
                    "d = Dataset('5d13a8b6634f41070a43dff3')\n"
                    "d.title"
                },
            ),
            FinalAnswer(answer="fini"),
        ]
    )
    (trace,) = run_cell(
        cell, [tasks["task_0002"]], twin_urls=twin.urls, model_factory=factory(model)
    )
    assert trace.status == "ok", trace.status_reason
    failing, refused, cli, sdk = trace.tool_calls
    assert failing.error and "line 2, in <module>" in failing.result
    assert "ValueError: boom" in failing.result and "[error] exit code 1" in failing.result
    assert refused.error and "only the datagouv command is available" in refused.result
    assert not cli.error, cli.result
    assert cli.result.startswith('{"id":"5d13a8b6634f41070a43dff3"')
    # python-sdk: the unpatched library reaches the twin, and a trailing expression is printed.
    assert not sdk.error, sdk.result
    assert sdk.result.strip() == "Catalogue des données de data.gouv.fr"
