"""The ``datagouv-eval`` command: what is useful outside the Dagster UI.

Each subcommand lives in its own module of this package and exposes a click command named
``command``; ``_COMMANDS`` lists them. Modules are imported lazily so that ``--help`` stays fast.
A name may also stand for a subcommand of a group (``calibrate`` is ``judge calibrate``): it is
that command itself, with its own help and options.
"""

from __future__ import annotations

import importlib
from typing import NamedTuple

import click


class _Entry(NamedTuple):
    target: str
    """The module under ``datagouv_eval_pipeline.cli``, then any subcommand of its group."""
    short_help: str
    """The command's short help, as its docstring gives it (a test keeps the two equal)."""


# `--help` lists these without importing a single command module (they import pandas,
# Dagster, pydantic-ai...): the listing would otherwise take seconds.
_COMMANDS: dict[str, _Entry] = {
    "demo": _Entry(
        "demo",
        "Validate the specs, score the example traces and print where the results are.",
    ),
    "cells": _Entry(
        "cells",
        "List the cells (agent setups) the benchmark configuration expands to, without running.",
    ),
    "schema": _Entry(
        "schema",
        "Regenerate the JSON schemas of the task specs, the benchmark configuration and traces.",
    ),
    "architecture": _Entry(
        "architecture",
        "Write docs/architecture.md from the import-linter contracts and package docstrings.",
    ),
    "validate": _Entry(
        "validate",
        "Validate task specs (files or directories; default task_specs/) and the benchmark config.",
    ),
    "score": _Entry(
        "score",
        "Score one trace against one task with the deterministic metrics (no judge, no network).",
    ),
    "twin": _Entry(
        "twin",
        "The local data.gouv.fr twin (REST v1/v2, Tabular, Metrics and crawler APIs).",
    ),
    "preflight": _Entry(
        "preflight",
        "Check the catalog objects every active task relies on; quarantine the tasks that drifted.",
    ),
    "replay": _Entry(
        "replay",
        "Record and replay OpenAI-compatible chat completions (cassettes).",
    ),
    "run-cell": _Entry(
        "run_cell",
        "Run one cell (CELL_KEY, see `datagouv-eval cells`) and write one trace per task run.",
    ),
    "judge": _Entry(
        "judge",
        "Judges: calibration against the labels, judging traces.",
    ),
    "calibrate": _Entry(
        "judge calibrate",
        "Agreement of a judge with the labels of the calibration set.",
    ),
    "review": _Entry(
        "review",
        "Blind review: draw a sample of an experiment, import the labels.",
    ),
    "dagster": _Entry(
        "dagster_home",
        "The project-local Dagster instance: start the UI, pool limits, clean dead runs.",
    ),
    "experiment": _Entry(
        "experiment",
        "Run the default experiment (twin + offline baselines + deterministic judge).",
    ),
    "sql": _Entry(
        "sql",
        "Run a query against the warehouse (read-only) and print the rows.",
    ),
    "report": _Entry(
        "report",
        "The experiment report page and the results browser.",
    ),
    "gate": _Entry(
        "gate",
        "Exit 1 when a cell's headline score dropped significantly since its previous run.",
    ),
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = _COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module_name, *path = entry.target.split()
        module = importlib.import_module(f"datagouv_eval_pipeline.cli.{module_name}")
        command: click.Command | None = module.command
        for name in path:
            assert isinstance(command, click.Group), entry.target
            command = command.get_command(ctx, name)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        limit = formatter.width - 6 - max(len(name) for name in _COMMANDS)
        rows = [
            (name, click.Command(name, help=entry.short_help).get_short_help_str(limit))
            for name, entry in sorted(_COMMANDS.items())
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=_LazyGroup)
@click.version_option(package_name="datagouv-eval-pipeline")
def main() -> None:
    """Evaluate AI agents on the data.gouv.fr toolsets."""
