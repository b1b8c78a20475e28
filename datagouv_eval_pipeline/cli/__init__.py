"""The ``datagouv-eval`` command: what is useful outside the Dagster UI.

Each subcommand lives in its own module of this package and exposes a click command named
``command``; ``_COMMANDS`` lists them. Modules are imported lazily so that ``--help`` stays fast.
A name may also stand for a subcommand of a group (``calibrate`` is ``judge calibrate``): it is
that command itself, with its own help and options.
"""

from __future__ import annotations

import importlib

import click

# subcommand name -> module under datagouv_eval_pipeline.cli, then any subcommand of its group
_COMMANDS: dict[str, str] = {
    "demo": "demo",
    "cells": "cells",
    "schema": "schema",
    "validate": "validate",
    "score": "score",
    "twin": "twin",
    "preflight": "validate_resources",
    "replay": "replay",
    "run-cell": "run_cell",
    "judge": "judge",
    "calibrate": "judge calibrate",
    "review": "review",
    "dagster": "dagster_home",
    "experiment": "experiment",
    "sql": "sql",
    "report": "report",
    "gate": "gate",
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = _COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, *path = target.split()
        module = importlib.import_module(f"datagouv_eval_pipeline.cli.{module_name}")
        command: click.Command | None = module.command
        for name in path:
            assert isinstance(command, click.Group), target
            command = command.get_command(ctx, name)
        return command


@click.group(cls=_LazyGroup)
@click.version_option(package_name="datagouv-eval-pipeline")
def main() -> None:
    """Evaluate AI agents on the data.gouv.fr toolsets."""
