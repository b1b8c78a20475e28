"""``datagouv-eval cells``: list the cells of the benchmark cross-product (a dry run)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from datagouv_eval_pipeline.cli.validate import format_error
from datagouv_eval_pipeline.core.benchmark import (
    BENCHMARK_CONFIG_DIR,
    BenchmarkConfigErrors,
    Cell,
    SelectionError,
    UnknownEvaluationTypeError,
    load_benchmark_config,
    mcp_entry_key,
    select_cells,
)

_COLUMNS = ("key", "evaluation types", "model", "capabilities", "mcp", "skills", "prompt")


def _row(cell: Cell) -> tuple[str, ...]:
    model = f"{cell.model.provider}/{cell.model.name}" + ("" if cell.model.is_llm else " *")
    return (
        cell.key,
        ",".join(cell.evaluation_types),
        model,
        cell.capability_set,
        mcp_entry_key(cell.mcp_version, cell.mcp_label) if cell.mcp_version else "-",
        cell.skills_version or "-",
        cell.system_prompt,
    )


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in [_COLUMNS, *rows]) for i in range(len(_COLUMNS))]
    return [
        "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip()
        for row in [_COLUMNS, *rows]
    ]


@click.command("cells")
@click.option(
    "--evaluation-type",
    "-e",
    "evaluation_types",
    multiple=True,
    help="Expand only this evaluation type (repeatable; inactive types allowed).",
)
@click.option(
    "--models",
    "models",
    multiple=True,
    metavar="PROVIDER/MODEL",
    help="These models instead of the active ones, active or not (repeatable; globs allowed).",
)
@click.option(
    "--cells",
    "cell_keys",
    multiple=True,
    metavar="KEY",
    help="Only these cells: a key of any model or type, or a glob (repeatable).",
)
@click.option(
    "--config-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=BENCHMARK_CONFIG_DIR,
    show_default="task_specs/benchmark",
    help="The benchmark configuration directory.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the cells as a JSON list.")
def command(
    evaluation_types: tuple[str, ...],
    models: tuple[str, ...],
    cell_keys: tuple[str, ...],
    config_dir: Path,
    as_json: bool,
) -> None:
    """List the cells (agent setups) the benchmark configuration expands to, without running."""
    try:
        config = load_benchmark_config(config_dir)
        cells = select_cells(
            config, evaluation_types=evaluation_types, models=models, cells=cell_keys
        )
    except BenchmarkConfigErrors as error:
        for item in error.errors:
            click.echo(format_error(item), err=True)
        raise SystemExit(1) from None
    except UnknownEvaluationTypeError as error:
        raise click.BadParameter(str(error), param_hint="--evaluation-type") from None
    except SelectionError as error:
        raise click.BadParameter(str(error), param_hint=error.option) from None
    if as_json:
        records = [cell.to_record().model_dump(mode="json") for cell in cells]
        click.echo(json.dumps(records, indent=2, ensure_ascii=False))
        return
    for line in _table([_row(cell) for cell in cells]):
        click.echo(line)
    memberships = sum(len(cell.evaluation_types) for cell in cells)
    offline = sum(not cell.model.is_llm for cell in cells)
    click.echo(
        f"\n{len(cells)} cells ({memberships} evaluation-type memberships, identical setups "
        f"merged); {offline} on offline baselines (* = not an LLM)"
    )
