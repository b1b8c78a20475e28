"""Helpers shared by the ``datagouv`` CLI tests."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner, Result

from datagouv_eval_pipeline.world.datagouv_cli import app


@dataclass
class Cli:
    """Runs ``datagouv ARGS`` in-process with the sandbox's environment (HOME, base URL)."""

    home: Path
    env: dict[str, str | None]

    def __call__(self, *args: str, input: str | None = None) -> Result:
        return CliRunner().invoke(app, list(args), env=self.env, input=input)
