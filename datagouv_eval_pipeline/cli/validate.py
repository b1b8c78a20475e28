"""``datagouv-eval validate``: check the task specifications and the benchmark configuration."""

from __future__ import annotations

import os
from pathlib import Path

import click

from datagouv_eval_pipeline.core.benchmark import (
    BENCHMARK_CONFIG_DIR,
    BenchmarkConfigErrors,
    ModelsFile,
    expand_cells,
    load_benchmark_config,
)
from datagouv_eval_pipeline.core.judges import (
    JUDGE_FILE,
    JudgeModelError,
    JudgeSpecError,
    build_judge,
    load_judge_spec,
)
from datagouv_eval_pipeline.core.tasks import (
    TASK_SPECS_DIR,
    SpecError,
    TaskSpec,
    TaskSpecErrors,
    TaskStatus,
    load_task_specs,
)


def display_path(path: Path) -> Path:
    """Return a path relative to the working directory when it is inside it."""
    # abspath, not resolve: a link is shown by its own name, and a looping one does not raise.
    try:
        return Path(os.path.abspath(path)).relative_to(os.getcwd())
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
    # A benchmark configuration directory named as a path is validated as one, not read as specs.
    config_dirs = [path for path in paths if is_benchmark_config_dir(path)] or [config_dir]
    spec_paths = [path for path in paths if not is_benchmark_config_dir(path)]
    if spec_paths or not paths:
        try:
            specs = load_task_specs(spec_paths or [TASK_SPECS_DIR])
        except TaskSpecErrors as task_errors:
            errors.extend(task_errors.errors)
    cells: dict[Path, int] = {}
    for directory in config_dirs:
        try:
            config = load_benchmark_config(directory)
        except BenchmarkConfigErrors as config_errors:
            errors.extend(config_errors.errors)
            continue
        cells[directory] = len(expand_cells(config))
        errors.extend(judge_errors(directory / JUDGE_FILE, config.models))
    if errors:
        for item in errors:
            click.echo(format_error(item))
        files = len({item.file for item in errors})
        click.echo(f"{len(errors)} error(s) in {files} file(s)", err=True)
        raise SystemExit(1)
    configs = "; ".join(
        f"benchmark configuration {display_path(directory)}: {count} cells"
        for directory, count in cells.items()
    )
    if spec_paths or not paths:
        active = sum(spec.meta.status == TaskStatus.ACTIVE for spec in specs)
        click.echo(f"OK: {len(specs)} tasks ({active} active); {configs}")
    else:
        click.echo(f"OK: {configs}")


def judge_errors(path: Path, models: ModelsFile) -> list[SpecError]:
    """The problems of ``judge.yml`` that `experiment` would refuse it for (none when valid)."""
    from datagouv_eval_pipeline.world.local_models import CHECK_ONLY_URL, served_model

    try:
        spec = load_judge_spec(path)
        # A llama_cpp judge's server starts with the run: checked with a stand-in URL.
        served = spec.model is not None and served_model(spec.model, models) is not None
        build_judge(spec, models, base_url=CHECK_ONLY_URL if served else None)
    except (JudgeSpecError, JudgeModelError) as error:
        message = str(error).removeprefix(f"{path}: ")
        return [SpecError(path, None, "", message)]
    return []


def is_benchmark_config_dir(path: Path) -> bool:
    """Whether ``path`` is a benchmark configuration directory (it has ``evaluation_types.yml``)."""
    return path.is_dir() and (path / "evaluation_types.yml").is_file()
