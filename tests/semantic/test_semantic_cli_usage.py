"""A ``datagouv`` command that failed with a usage error ran nothing: errored, no instance."""

from __future__ import annotations

from datagouv_eval_pipeline.core.semantic import (
    CallCategory,
    MappingStatus,
    detect_error,
    load_registry,
    map_trace,
)
from datagouv_eval_pipeline.core.semantic.mapper import UsageError, usage_errors
from datagouv_eval_pipeline.core.traces import ToolCall, Trace

DS = "536c47d9a3a72933d8d1b3b2"

# What the emulated CLI prints (Typer layout) for `datagouv dataset get` without its id, exit 2.
MISSING_ID = (
    "Usage: datagouv dataset get [OPTIONS] ID\n"
    "Try 'datagouv dataset get --help' for help.\n"
    "╭─ Error ──────────────────────────────────────────────────────────────────────╮\n"
    "│ Missing argument 'ID'.                                                       │\n"
    "╰──────────────────────────────────────────────────────────────────────────────╯\n"
)
# Plain click layout, for an unknown subcommand.
NO_SUCH_COMMAND = (
    "Usage: datagouv dataset [OPTIONS] COMMAND [ARGS]...\n"
    "Try 'datagouv dataset --help' for help.\n"
    "\n"
    "Error: No such command 'frob'.\n"
)
DATASET_BODY = '{"id": "' + DS + '", "resources": []}\n'


def _map(command: str, result: str, error: bool = False) -> Trace:
    return Trace.model_validate(
        {
            "task_id": "t",
            "tool_calls": [
                {
                    "id": "c0",
                    "name": "execute_cli",
                    "arguments": {"command": command},
                    "result": result,
                    "error": error,
                }
            ],
        }
    )


def test_usage_errors_are_read_from_both_layouts() -> None:
    assert usage_errors(MISSING_ID) == [
        UsageError(("datagouv", "dataset", "get"), "Missing argument 'ID'.")
    ]
    assert usage_errors("[stderr]\n" + NO_SUCH_COMMAND) == [
        UsageError(("datagouv", "dataset"), "No such command 'frob'.")
    ]
    # Help output has a usage line but no "Try ... for help." hint and no error.
    assert usage_errors("Usage: datagouv dataset get [OPTIONS] ID\n\n Show a dataset.\n") == []


def test_a_usage_error_is_an_error() -> None:
    call = ToolCall(id="c", name="execute_cli", result=MISSING_ID)
    assert detect_error(call) == (True, "command-line usage error ('Usage: ...' then an error)")
    # A usage line with a hint but no error after it is not one.
    hint_only = "Usage: tool [OPTIONS]\nTry 'tool --help' for help.\nErrors: 0 found\n"
    assert detect_error(ToolCall(id="c", name="x", result=hint_only)) == (False, "")


def test_a_command_missing_its_id_is_not_credited() -> None:
    mapping = map_trace(_map("datagouv dataset get", MISSING_ID))
    (call,) = mapping.calls
    assert call.instances == ()
    assert call.errored
    assert call.status is MappingStatus.NO_ACTION
    assert call.category is CallCategory.DATAGOUV_CLI
    assert call.reason == (
        "'datagouv dataset get' failed with a usage error (Missing argument 'ID'.): nothing ran"
    )


def test_the_error_goes_to_the_invocation_whose_arguments_do_not_fit() -> None:
    # The sandbox shows stdout, then stderr; the good command ran, the bare one did not.
    result = DATASET_BODY + "[stderr]\n" + MISSING_ID + "[error] exit code 2"
    mapping = map_trace(_map(f"datagouv dataset get; datagouv dataset get {DS}", result))
    (call,) = mapping.calls
    assert [(i.action, i.args) for i in call.instances] == [
        ("get.dataset.info", {"dataset_id": DS}),
        ("get.dataset.resources", {"dataset_id": DS}),
    ]
    assert call.status is MappingStatus.MAPPED and call.errored
    # With two fitting invocations and one error, the first one takes it.
    twice = map_trace(_map(f"datagouv dataset get {DS}; datagouv dataset get {DS}", result))
    assert [i.action for i in twice.instances] == ["get.dataset.info", "get.dataset.resources"]


def test_an_unknown_subcommand_with_a_usage_error_is_decided() -> None:
    # Without its usage error an unknown command is left for a classifier; with it, nothing ran.
    unknown = map_trace(_map("datagouv dataset frob x", "ok"))
    assert unknown.calls[0].status is MappingStatus.UNMAPPED
    failed = map_trace(_map("datagouv dataset frob x", "[stderr]\n" + NO_SUCH_COMMAND, True))
    (call,) = failed.calls
    assert call.status is MappingStatus.NO_ACTION and call.errored and call.instances == ()
    assert "usage error (No such command 'frob'.)" in call.reason


def test_a_usage_error_of_another_command_leaves_the_invocation_credited() -> None:
    other = MISSING_ID.replace("dataset get", "resource get")
    mapping = map_trace(_map(f"datagouv dataset get {DS}", other))
    assert [i.action for i in mapping.instances] == ["get.dataset.info", "get.dataset.resources"]


def test_cli_matches_carry_the_positional_count_of_the_command() -> None:
    registry = load_registry()
    get = registry.match_cli(["dataset", "get"])
    assert get is not None and get.command == "dataset get" and get.arity == 1
    download = registry.match_cli(["resource", "download", "r", "/tmp/f.csv"])
    assert download is not None and download.arity == 2  # ID and PATH
    known = registry.match_cli(["topic", "get", "t"])
    assert known is not None and known.actions == () and known.arity is None
