"""The semantic mapper reads the command lines this CLI accepts, and its failures as errors."""

from __future__ import annotations

from typing import Any

from datagouv_eval_pipeline.core.semantic import (
    CallCategory,
    MappingStatus,
    TraceMapping,
    map_trace,
)
from datagouv_eval_pipeline.core.traces import Trace

from .helpers import Cli

SPORTS = "53699ebba3a729239d205f4f"
SPORTS_TABLE = "ea4f5879-af40-4e3e-949d-812d6eeb5e02"
ETALAB = "534fff75a3a7292c64a77de4"


def run_and_map(cli: Cli, *commands: list[str]) -> TraceMapping:
    """Run each command, record it as a shell tool call (stdout then stderr), map the trace."""
    calls: list[dict[str, Any]] = []
    for index, argv in enumerate(commands):
        result = cli(*argv)
        calls.append(
            {
                "id": f"c{index}",
                "name": "execute_cli",
                "arguments": {"command": "datagouv " + " ".join(argv)},
                "result": result.stdout + result.stderr,
            }
        )
    return map_trace(Trace.model_validate({"task_id": "t", "tool_calls": calls}))


def test_read_commands_map_to_their_actions(cli: Cli, tmp_path: Any) -> None:
    mapping = run_and_map(
        cli,
        ["dataset", "display", SPORTS],
        ["dataset", "get", SPORTS],
        ["resource", "display", SPORTS_TABLE],
        ["resource", "get", SPORTS_TABLE],
        ["resource", "download", SPORTS_TABLE, str(tmp_path / "f.csv")],
    )
    assert [(i.action, dict(i.args)) for i in mapping.instances] == [
        ("get.dataset.info", {"dataset_id": SPORTS}),
        ("get.dataset.info", {"dataset_id": SPORTS}),
        ("get.dataset.resources", {"dataset_id": SPORTS}),
        ("get.resource.info", {"resource_id": SPORTS_TABLE}),
        ("get.resource.info", {"resource_id": SPORTS_TABLE}),
        ("get.data", {"resource_id": SPORTS_TABLE}),
    ]
    assert {call.category for call in mapping.calls} == {CallCategory.DATAGOUV_CLI}
    assert not any(call.errored for call in mapping.calls)


def test_failures_are_detected_and_writes_carry_no_action(cli: Cli) -> None:
    mapping = run_and_map(
        cli,
        ["dataset", "get", "no-such-dataset"],
        ["dataset", "update", SPORTS, "--set", "title=x"],
        ["organization", "get", ETALAB],
    )
    missing, write, organization = mapping.calls
    assert missing.errored and missing.error_reason == "Python traceback in result"
    assert [i.action for i in missing.instances] == ["get.dataset.info", "get.dataset.resources"]
    assert write.errored and write.status is MappingStatus.NO_ACTION
    assert "write command" in write.reason
    assert not organization.errored and organization.status is MappingStatus.NO_ACTION
