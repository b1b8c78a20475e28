"""``datagouv-eval run-cell``: run one cell against the twin and write its traces."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from datagouv_eval_pipeline.base.writable import writable_dir_problem
from datagouv_eval_pipeline.cli.urls import HTTP_URL
from datagouv_eval_pipeline.cli.validate import format_error
from datagouv_eval_pipeline.core.benchmark import (
    BENCHMARK_CONFIG_DIR,
    BenchmarkConfigErrors,
    Cell,
    UnknownCellKeyError,
    decode_cell_key,
    expand_cells,
    load_benchmark_config,
    model_names,
)
from datagouv_eval_pipeline.core.tasks import (
    TASK_SPECS_DIR,
    TaskSpec,
    TaskSpecErrors,
    TaskStatus,
    load_task_specs,
)

if TYPE_CHECKING:
    from datagouv_eval_pipeline.world.mcp_builds import BuildServers


def _cell(config_dir: Path, key: str) -> Cell:
    try:
        config = load_benchmark_config(config_dir)
    except BenchmarkConfigErrors as error:
        for item in error.errors:
            click.echo(format_error(item), err=True)
        raise SystemExit(1) from None
    names = [etype.name for etype in config.evaluation_types.evaluation_types]
    try:
        # Every evaluation type and model, active or not: any cell can be run and debugged.
        return decode_cell_key(key, expand_cells(config, names, model_names(config)))
    except UnknownCellKeyError as error:
        raise click.BadParameter(str(error), param_hint="CELL_KEY") from None


def _tasks(tasks_dir: Path, wanted: str | None) -> list[TaskSpec]:
    try:
        specs = load_task_specs([tasks_dir])
    except TaskSpecErrors as error:
        raise click.ClickException(str(error)) from error
    if not wanted:
        return [spec for spec in specs if spec.meta.status == TaskStatus.ACTIVE]
    by_id = {spec.task_id: spec for spec in specs}
    ids = [item.strip() for item in wanted.split(",") if item.strip()]
    unknown = [item for item in ids if item not in by_id]
    if unknown:
        raise click.BadParameter(
            f"unknown task id(s) {', '.join(unknown)}; known: {', '.join(sorted(by_id))}",
            param_hint="--tasks",
        )
    return [by_id[item] for item in ids]


def _build(cell: Cell, builds: BuildServers) -> dict[str, Any]:
    """The ``mcp_url`` option of a cell whose MCP server is a real build (started here)."""
    endpoint = builds.endpoint(cell)
    if endpoint is None:
        return {}
    click.echo(f"MCP server: build {endpoint.spec} at {endpoint.url}", err=True)
    return {"mcp_url": endpoint.url}


def _require_writable_dir(target: Path) -> None:
    """Create ``target`` (the traces' directory) now, or fail with one line naming it."""
    problem = writable_dir_problem(target)
    if problem is not None:
        raise click.ClickException(
            f"{target}: the output directory {problem}; choose another with --out"
        )


@click.command("run-cell")
@click.argument("cell_key")
@click.option(
    "--tasks", "task_ids", default=None, help="Comma-separated task ids (default: active)."
)
@click.option("--repeats", type=click.IntRange(min=1), default=1, show_default=True)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Output directory (default: runs/<cell key>).",
)
@click.option("--concurrency", type=click.IntRange(min=1), default=8, show_default=True)
@click.option("--max-requests", type=click.IntRange(min=1), default=25, show_default=True)
@click.option(
    "--timeout", "timeout_s", type=click.FloatRange(min=1), default=600, show_default=True
)
@click.option(
    "--model-base-url",
    type=HTTP_URL,
    default=None,
    help="Send model requests here instead (e.g. a `datagouv-eval replay serve` URL).",
)
@click.option("--live", is_flag=True, help="Use the live data.gouv.fr instead of the twin.")
@click.option(
    "--config-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=BENCHMARK_CONFIG_DIR,
    show_default="task_specs/benchmark",
)
@click.option(
    "--tasks-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=TASK_SPECS_DIR,
    show_default="task_specs",
)
def command(
    cell_key: str,
    task_ids: str | None,
    repeats: int,
    out_dir: Path | None,
    concurrency: int,
    max_requests: int,
    timeout_s: float,
    model_base_url: str | None,
    live: bool,
    config_dir: Path,
    tasks_dir: Path,
) -> None:
    """Run one cell (CELL_KEY, see `datagouv-eval cells`) and write one trace per task run.

    The twin is started in-process on a free port (unless --live), and llama.cpp's server for a
    llama_cpp model. Traces go to OUT/<task_id>__r<repeat>.json and the MCP tool list to
    OUT/mcp-tools-<version>.json.
    """
    from datagouv_eval_pipeline.cli.preconditions import require_code_cell_dirs
    from datagouv_eval_pipeline.core.benchmark import ProviderKind
    from datagouv_eval_pipeline.pipeline.agents import (
        SANDBOX_CAPABILITIES,
        RunBudget,
        RunSettings,
        execute_cell,
    )
    from datagouv_eval_pipeline.world.api import TwinServer
    from datagouv_eval_pipeline.world.catalogue import SnapshotError
    from datagouv_eval_pipeline.world.local_models import LlamaServerError, LocalServers
    from datagouv_eval_pipeline.world.mcp_builds import BuildError, BuildServers

    cell = _cell(config_dir, cell_key)
    tasks = _tasks(tasks_dir, task_ids)
    # Checked before any agent runs: a cell's traces are not to be lost at the last step.
    target = out_dir or Path("runs") / cell.key
    _require_writable_dir(target)
    if SANDBOX_CAPABILITIES & set(cell.capabilities) and not live:
        require_code_cell_dirs()
    settings = RunSettings(
        budget=RunBudget(max_requests=max_requests, wall_timeout_s=timeout_s),
        max_concurrency=concurrency,
    )
    options: dict[str, Any] = {
        "repeats": repeats,
        "settings": settings,
        "model_base_url": model_base_url,
    }
    local = LocalServers()
    try:
        if cell.model.kind == ProviderKind.LLAMA_CPP and model_base_url is None:
            options["model_base_url"] = local.base_url(cell.model)
            (llama,) = local.servers().values()
            click.echo(
                f"model: llama.cpp server ({llama.runtime.name if llama.runtime else '?'}) "
                f"for {llama.spec.gguf.name} at {llama.base_url}, "
                f"ready in {llama.startup_s:.1f} s",
                err=True,
            )
        if live:
            with BuildServers() as builds:
                run = execute_cell(cell, tasks, twin_urls=None, **_build(cell, builds), **options)
        else:
            server = TwinServer()
            with server as urls, BuildServers(twin=server) as builds:
                run = execute_cell(
                    cell,
                    tasks,
                    twin_urls=urls,
                    snapshot_id=server.store.snapshot_id,
                    **_build(cell, builds),
                    **options,
                )
    except (BuildError, SnapshotError, LlamaServerError) as error:
        raise click.ClickException(str(error)) from None
    finally:
        local.close()
    for trace in run.traces:
        path = target / f"{trace.task_id}__r{trace.repeat}.json"
        path.write_text(trace.model_dump_json(indent=2) + "\n", encoding="utf-8")
        detail = f" ({trace.status_reason})" if trace.status_reason else ""
        click.echo(
            f"{trace.task_id} r{trace.repeat}: {trace.status}{detail}, "
            f"{len(trace.tool_calls)} tool calls, {trace.latency_ms:.0f} ms"
        )
    for version, tools in run.tool_lists.items():
        path = target / f"mcp-tools-{version}.json"
        path.write_text(json.dumps(tools, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    click.echo(f"wrote {len(run.traces)} trace(s) to {target}")
    finished = [t for t in run.traces if t.status in ("ok", "budget_exceeded")]
    if run.traces and not finished:
        reasons = Counter(t.status_reason or t.status for t in run.traces)
        reason, count = reasons.most_common(1)[0]
        raise click.ClickException(
            f"no run of {cell.key} finished ({len(run.traces)} ended "
            f"{'/'.join(sorted({t.status for t in run.traces}))}); {count} because: {reason}"
        )
