"""``datagouv-eval schema``: regenerate (or check) the committed JSON schemas."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from datagouv_eval_pipeline.benchmark.schema import BENCHMARK_SCHEMA_PATH, benchmark_json_schema
from datagouv_eval_pipeline.cli.validate import display_path
from datagouv_eval_pipeline.tasks.schema import (
    TASK_SPEC_SCHEMA_PATH,
    render_schema,
    task_spec_json_schema,
)
from datagouv_eval_pipeline.traces import TRACE_SCHEMA_PATH, trace_json_schema

SCHEMAS: dict[Path, Callable[[], dict[str, Any]]] = {
    TASK_SPEC_SCHEMA_PATH: task_spec_json_schema,
    BENCHMARK_SCHEMA_PATH: benchmark_json_schema,
    TRACE_SCHEMA_PATH: trace_json_schema,
}
"""Each committed schema file and the function that generates it."""


def stale_schemas() -> list[Path]:
    """Return the committed schema files that differ from what the models generate."""
    stale = []
    for path, generate in SCHEMAS.items():
        current = path.read_text(encoding="utf-8") if path.is_file() else None
        if current != render_schema(generate()):
            stale.append(path)
    return stale


@click.command("schema")
@click.option("--check", is_flag=True, help="Only check that the committed schemas are current.")
def command(check: bool) -> None:
    """Regenerate the JSON schemas of the task specs, the benchmark configuration and traces."""
    if check:
        stale = stale_schemas()
        for path in stale:
            click.echo(f"{display_path(path)}: stale; run `datagouv-eval schema`")
        if stale:
            raise SystemExit(1)
        click.echo("OK: the schemas are current")
        return
    for path, generate in SCHEMAS.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render_schema(generate()), encoding="utf-8")
        click.echo(f"wrote {display_path(path)}")
