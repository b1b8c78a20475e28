"""``datagouv-eval validate``: check the task specifications and the benchmark configuration."""

from __future__ import annotations

from pathlib import Path

import click

from datagouv_eval_pipeline.benchmark.cells import expand_cells
from datagouv_eval_pipeline.benchmark.loader import (
    BENCHMARK_CONFIG_DIR,
    BenchmarkConfigErrors,
    load_benchmark_config,
)
from datagouv_eval_pipeline.tasks.errors import SpecError, TaskSpecErrors
from datagouv_eval_pipeline.tasks.loader import TASK_SPECS_DIR, load_task_specs
from datagouv_eval_pipeline.tasks.spec import TaskSpec, TaskStatus


def display_path(path: Path) -> Path:
    """Return a path relative to the working directory when it is inside it."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def format_error(error: SpecError) -> str:
    """Render an error as ``file:line: field: message`` with a short file path."""
    return str(SpecError(display_path(error.file), error.line, error.field_path, error.message))


@click.command("validate")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--config-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=BENCHMARK_CONFIG_DIR,
    show_default="task_specs/benchmark",
    help="The benchmark configuration directory, validated as well.",
)
def command(paths: tuple[Path, ...], config_dir: Path) -> None:
    """Validate task specs (files or directories; default task_specs/) and the benchmark config.

    Prints every problem as ``file:line: field: message`` and exits 1, or prints a one-line
    summary and exits 0.
    """
    errors: list[SpecError] = []
    specs: list[TaskSpec] = []
    try:
        specs = load_task_specs(list(paths) or [TASK_SPECS_DIR])
    except TaskSpecErrors as task_errors:
        errors.extend(task_errors.errors)
    cells = 0
    try:
        cells = len(expand_cells(load_benchmark_config(config_dir)))
    except BenchmarkConfigErrors as config_errors:
        errors.extend(config_errors.errors)
    if errors:
        for item in errors:
            click.echo(format_error(item))
        files = len({item.file for item in errors})
        click.echo(f"{len(errors)} error(s) in {files} file(s)", err=True)
        raise SystemExit(1)
    active = sum(spec.meta.status == TaskStatus.ACTIVE for spec in specs)
    click.echo(
        f"OK: {len(specs)} tasks ({active} active); benchmark configuration "
        f"{display_path(config_dir)}: {cells} cells"
    )
