"""``datagouv-eval judge``: calibrate a judge against the labels, judge a trace.

``calibrate`` is also reachable at the top level (``datagouv-eval calibrate``). Human review
(drawing a sample, importing labels) is ``datagouv-eval review``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import click

from datagouv_eval_pipeline.base.yaml_loading import safe_load
from datagouv_eval_pipeline.cli.urls import HTTP_URL
from datagouv_eval_pipeline.core.tasks import TaskSpec


@click.group()
def command() -> None:
    """Judges: calibration against the labels, judging traces."""


def _tasks(task_dir: Path | None) -> dict[str, TaskSpec]:
    """The task specs of ``task_dir`` (default: task_specs/) by id; load errors exit cleanly."""
    from datagouv_eval_pipeline.core.tasks import TASK_SPECS_DIR, TaskSpecErrors, load_task_specs

    try:
        return {task.task_id: task for task in load_task_specs([task_dir or TASK_SPECS_DIR])}
    except TaskSpecErrors as error:
        raise click.ClickException(str(error)) from error


class _Servers:
    """The command's llama.cpp servers, created on first use (the import stays lazy)."""

    def __init__(self) -> None:
        self._servers: Any = None

    def base_url(self, model: Any) -> str:
        from datagouv_eval_pipeline.world.local_models import LocalServers

        if self._servers is None:
            self._servers = LocalServers()
        url: str = self._servers.base_url(model)
        return url


# Stopped at interpreter exit (local_models.server stops every server it started).
_LOCAL_SERVERS = _Servers()


def _build_judge(
    judge: str, config_path: Path | None, cache_dir: Path | None, base_url: str | None
) -> Any:
    from datagouv_eval_pipeline.core.judges import DeterministicJudge, HybridJudge

    if judge == "deterministic":
        return DeterministicJudge()
    kind, _, named = judge.partition(":")
    if kind in ("llm", "hybrid") and named:
        llm = _build_judge(named, config_path, cache_dir, base_url)
        return HybridJudge(llm) if kind == "hybrid" else llm

    import yaml
    from pydantic import ValidationError

    from datagouv_eval_pipeline.core.benchmark import BenchmarkConfigErrors, load_benchmark_config
    from datagouv_eval_pipeline.core.judges import (
        ROLES,
        JudgeConfig,
        JudgeModelError,
        LLMJudge,
        RoleModel,
        RoleSettings,
        resolve_model,
    )

    try:
        if config_path is not None:
            data = safe_load(config_path.read_text(encoding="utf-8")) or {}
            data.setdefault("default", {"model": judge})
            config = JudgeConfig.model_validate(data)
        else:
            config = JudgeConfig(default=RoleSettings(model=judge))
    except (ValidationError, OSError, yaml.YAMLError) as error:
        raise click.ClickException(f"{config_path}: invalid judge config: {error}") from error
    if cache_dir is not None:
        config = config.model_copy(update={"cache_dir": cache_dir})
    try:
        models = load_benchmark_config().models
    except BenchmarkConfigErrors as error:
        raise click.ClickException(str(error)) from error
    from datagouv_eval_pipeline.world.local_models import LlamaServerError, served_model

    def url_of(name: str) -> str | None:
        served = served_model(name, models) if base_url is None else None
        # A llama_cpp judge model: its server starts now and stops when the command exits.
        return _LOCAL_SERVERS.base_url(served) if served is not None else base_url

    resolved: dict[str, RoleModel] = {}
    try:
        resolved["default"] = resolve_model(
            config.default.model,
            models,
            config.default.temperature,
            base_url=url_of(config.default.model),
        )
        for role in ROLES:
            if role in config.roles:
                settings = config.settings(role)
                resolved[role] = resolve_model(
                    settings.model, models, settings.temperature, base_url=url_of(settings.model)
                )
    except (JudgeModelError, LlamaServerError) as error:
        raise click.ClickException(str(error)) from error
    return LLMJudge.from_config(config, resolved)


_JUDGE_OPTION = click.option(
    "--judge",
    "judge_name",
    default="deterministic",
    show_default=True,
    help="'deterministic', 'llm:<provider>/<model>', 'hybrid:<provider>/<model>' (rules first, "
    "the LLM for the rest), or just '<provider>/<model>' (an LLM judge) from models.yml.",
)
_CONFIG_OPTION = click.option(
    "--config",
    "config_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Judge config YAML (models per role, limits, cache_dir); see docs/judges.md.",
)
_CACHE_OPTION = click.option(
    "--cache-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Judge answer cache directory (LLM judges).",
)
_TASKS_OPTION = click.option(
    "--tasks",
    "task_dir",
    type=click.Path(exists=True, path_type=Path),
    default=None,
    help="Task specs directory [default: task_specs].",
)
_BASE_URL_OPTION = click.option(
    "--judge-base-url",
    "base_url",
    type=HTTP_URL,
    metavar="URL",
    help="Send judge requests to this OpenAI-compatible URL instead (a local server, a replay).",
)


@command.command("calibrate")
@_JUDGE_OPTION
@click.option(
    "--set",
    "set_paths",
    multiple=True,
    type=click.Path(exists=True, path_type=Path),
    help="Calibration files or directories [default: task_specs/calibration].",
)
@_TASKS_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@_CONFIG_OPTION
@_CACHE_OPTION
@_BASE_URL_OPTION
@click.option(
    "--warehouse",
    "db_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="DuckDB file the figures are stored in (eval.judge_calibration) "
    "[default: $DATAGOUV_EVAL_DUCKDB or data/warehouse.duckdb].",
)
@click.option("--no-store", is_flag=True, help="Print the figures only; write no warehouse row.")
@click.option(
    "--labels",
    "label_set",
    type=click.Choice(["all", "blind", "verdict-shown", "written"]),
    default="all",
    show_default=True,
    help="Which labels: all, or only those of one method (blind: blind-review labels).",
)
def calibrate_command(
    judge_name: str,
    set_paths: tuple[Path, ...],
    task_dir: Path | None,
    as_json: bool,
    config_path: Path | None,
    cache_dir: Path | None,
    base_url: str | None,
    db_path: Path | None,
    no_store: bool,
    label_set: str,
) -> None:
    """Agreement of a judge with the labels of the calibration set.

    Per verdict kind (criterion, arguments, trajectory, failure mode): n, coverage, Cohen's
    kappa with a 95 % bootstrap interval (kappa >= 0.8 is required before a kind's scores are
    used for decisions; no kappa on fewer than 30 items), then the pooled figures, n per item
    kind (pass, fail, near miss) and the confusion table with unscored items in their own
    column. --labels blind restricts it to labels given blind. The figures, with the label set
    and its methods, are stored in eval.judge_calibration.
    """
    import duckdb

    from datagouv_eval_pipeline.core.judges import (
        CALIBRATION_DIR,
        CalibrationError,
        calibrate,
        calibration_files,
        load_calibration,
        select_labels,
        set_sha,
    )
    from datagouv_eval_pipeline.pipeline.warehouse import (
        SchemaVersionError,
        calibration_rows,
        connect,
        default_duckdb_path,
        write_calibration,
    )

    tasks = _tasks(task_dir)
    paths = list(set_paths) or [CALIBRATION_DIR]
    try:
        items = select_labels(load_calibration(paths, tasks), label_set)
    except CalibrationError as error:
        raise click.ClickException(str(error)) from error
    from datagouv_eval_pipeline.pipeline.experiment import twin_catalog_lookup

    judge = _build_judge(judge_name, config_path, cache_dir, base_url)
    report = asyncio.run(
        calibrate(judge, items, catalog=twin_catalog_lookup(), label_set=label_set)
    )
    if as_json:
        click.echo(json.dumps(report.to_json(), ensure_ascii=False, indent=2))
    else:
        click.echo(report.render())
    if no_store:
        return
    db = db_path or Path(default_duckdb_path())
    rows = calibration_rows(
        report,
        set_sha=set_sha(items),
        files=[p.name for p in calibration_files(paths)],
    )
    try:
        with connect(db) as conn:
            write_calibration(conn, rows)
    except (duckdb.Error, SchemaVersionError, OSError) as error:
        raise click.ClickException(f"{db}: cannot store the figures: {error}") from error
    click.echo(f"stored {len(rows)} row(s) in {db} (eval.judge_calibration)", err=True)


@command.command("trace")
@click.argument("trace_path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@_JUDGE_OPTION
@_TASKS_OPTION
@_CONFIG_OPTION
@_CACHE_OPTION
@_BASE_URL_OPTION
def trace_command(
    trace_path: Path,
    judge_name: str,
    task_dir: Path | None,
    config_path: Path | None,
    cache_dir: Path | None,
    base_url: str | None,
) -> None:
    """Judge one trace file and print every verdict as JSON."""
    from datagouv_eval_pipeline.core.judges import judge_trace
    from datagouv_eval_pipeline.core.traces import load_trace

    tasks = _tasks(task_dir)
    try:
        trace = load_trace(trace_path)
    except ValueError as error:
        raise click.ClickException(str(error)) from error
    task = tasks.get(trace.task_id)
    if task is None:
        raise click.ClickException(f"{trace_path}: unknown task {trace.task_id!r}")
    judge = _build_judge(judge_name, config_path, cache_dir, base_url)
    judgement = asyncio.run(judge_trace(judge, task, trace))
    click.echo(json.dumps(judgement.model_dump(mode="json"), ensure_ascii=False, indent=2))
