"""The command tree, Typer-style help and usage errors, and the version (no HTTP)."""

from __future__ import annotations

import subprocess
import sys

from click.testing import CliRunner, Result

from datagouv_eval_pipeline.world.datagouv_cli import CLI_VERSION, app, user_agent

TREE = {
    "dataset": ["display", "get", "create", "update", "sort-resources", "delete"],
    "organization": ["display", "get", "create", "update", "delete"],
    "resource": ["display", "get", "create", "update", "download", "delete"],
    "topic": ["display", "get", "create", "update", "delete"],
}


def run(*args: str) -> Result:
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "80"})


def panel_rows(text: str, title: str) -> list[str]:
    """The inner lines of the panel titled ``title``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"╭─ {title} "))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("╰"))
    return [line[2:-2].rstrip() for line in lines[start + 1 : end]]


def first_words(rows: list[str]) -> list[str]:
    return [row.split()[0] for row in rows if row and not row.startswith(" ")]


def test_root_help_lists_the_official_commands_in_order() -> None:
    result = run("--help")
    assert result.exit_code == 0
    assert result.stdout.splitlines()[1] == " Usage: datagouv [OPTIONS] COMMAND [ARGS]..."
    assert first_words(panel_rows(result.stdout, "Commands")) == [
        "setup",
        "delete-config",
        "dataset",
        "organization",
        "resource",
        "topic",
    ]
    assert first_words(panel_rows(result.stdout, "Options")) == ["--version", "--help"]
    # Panels are drawn at the terminal width, like rich.
    boxed = [line for line in result.stdout.splitlines() if line and line[0] in "╭│╰"]
    assert boxed and {len(line) for line in boxed} == {80}


def test_every_group_lists_its_subcommands() -> None:
    for group, commands in TREE.items():
        result = run(group, "--help")
        assert result.exit_code == 0, group
        assert f" Usage: datagouv {group} [OPTIONS] COMMAND [ARGS]..." in result.stdout
        assert first_words(panel_rows(result.stdout, "Commands")) == commands
        for command in commands:
            assert run(group, command, "--help").exit_code == 0, (group, command)


def test_command_help_shows_arguments_and_options() -> None:
    create = run("dataset", "create", "--help").stdout
    assert " Usage: datagouv dataset create [OPTIONS] TITLE DESCRIPTION" in create
    assert panel_rows(create, "Arguments") == [
        "*    title            TEXT  [required]",
        "*    description      TEXT  [required]",
    ]
    assert first_words(panel_rows(create, "Options")) == [
        "--organization-id",
        "--owner-id",
        "--set",
        "--help",
    ]
    resource = run("resource", "create", "--help").stdout
    options = " ".join(panel_rows(resource, "Options"))
    assert "--is-communautary    --no-is-communautary" in options
    assert "[default:" in options and "no-is-communautary]" in options
    setup = " ".join(panel_rows(run("setup", "--help").stdout, "Options"))
    assert "--environment" in setup and "[default: prod]" in setup and "--api-key" in setup
    download = run("resource", "download", "--help").stdout
    assert " Usage: datagouv resource download [OPTIONS] ID PATH" in download
    assert " Download a resource to a given path." in download


def test_usage_errors_print_the_typer_error_panel_and_exit_2() -> None:
    missing = run("dataset", "get")
    assert missing.exit_code == 2
    assert missing.stdout == ""
    assert missing.stderr.splitlines()[:2] == [
        "Usage: datagouv dataset get [OPTIONS] ID",
        "Try 'datagouv dataset get --help' for help.",
    ]
    assert panel_rows(missing.stderr, "Error") == ["Missing argument 'ID'."]
    bare = run("resource")
    assert bare.exit_code == 2
    assert panel_rows(bare.stderr, "Error") == ["Missing command."]
    # The README's underscore spelling is rejected, as with Typer.
    underscore = run("dataset", "create", "T", "D", "--organization_id", "x")
    assert underscore.exit_code == 2
    assert "No such option" in panel_rows(underscore.stderr, "Error")[0]
    unknown = run("reuse", "list")
    assert unknown.exit_code == 2
    assert "No such command 'reuse'" in panel_rows(unknown.stderr, "Error")[0]


def test_version_flag_and_user_agent() -> None:
    result = run("--version")
    assert result.exit_code == 0
    assert result.stdout.startswith(f"datagouv-cli {CLI_VERSION} ")
    assert "datagouv-client 0.5." in result.stdout
    assert user_agent() == f"datagouv-cli/{CLI_VERSION}"


def test_runs_as_a_module() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "datagouv_eval_pipeline.world.datagouv_cli", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith(f"datagouv-cli {CLI_VERSION} ")
