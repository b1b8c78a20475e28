"""``datagouv-eval dagster``: the project-local Dagster instance (``dagster_home/``) and its UI.

``ui`` starts ``dagster dev`` on this project with ``DAGSTER_HOME`` pointing at the instance
directory, and serves the report directory over HTTP next to it (the asset metadata links there:
the UI cannot open ``file://`` links); ``pools`` shows or applies the per-pool concurrency limits
listed in that directory's ``pools.yaml``. Dagster keeps per-pool limits in the instance database
(its ``dagster.yaml`` only has a default limit), so they are applied by code, the same way locally
and in the deploy (``deploy/``, ``docs/deploy.md``).

The instance directory is ``--home``, else ``$DAGSTER_HOME``, else ``<project>/dagster_home``
(from an installed wheel, ``./dagster_home``, started from the shipped config files).
Dagster itself is imported only inside ``pools`` (and the ``ui`` step that applies them).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import click
import yaml
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from datagouv_eval_pipeline.base import project_files
from datagouv_eval_pipeline.base.yaml_loading import safe_load
from datagouv_eval_pipeline.cli.ports import require_free_port
from datagouv_eval_pipeline.pipeline.report_site import (
    DEFAULT_REPORT_PORT,
    REPORT_URL_ENV,
    default_report_url,
)

if TYPE_CHECKING:
    from dagster import DagsterInstance

DEFAULT_HOME = project_files.dagster_home_dir()
CONFIG_DIR = project_files.dagster_config_dir()
"""The tracked ``dagster.yaml`` and ``pools.yaml`` (``DEFAULT_HOME`` itself in a checkout)."""
WORKSPACE = project_files.workspace_file()
"""The checkout's ``workspace.yaml``; None from an installed wheel (see :func:`workspace_for`)."""
WHEEL_WORKSPACE = {
    "load_from": [
        {
            "python_module": {
                "module_name": "datagouv_eval_pipeline.definitions",
                "location_name": "datagouv_eval_pipeline",
            }
        }
    ]
}
"""The workspace written for an installed wheel: the checkout's, without its working directory."""
POOLS_FILENAME = "pools.yaml"
INSTANCE_FILENAME = "dagster.yaml"

PoolName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")]


class PoolsFile(BaseModel):
    """``pools.yaml``: concurrency pool name -> number of slots."""

    model_config = ConfigDict(extra="forbid")

    pools: dict[PoolName, Annotated[int, Field(ge=0)]]


class PoolsFileError(ValueError):
    """``pools.yaml`` is missing or malformed; the message names the file and field."""


@dataclass(frozen=True)
class PoolState:
    """One pool as the instance reports it."""

    name: str
    limit: int
    from_default: bool


def resolve_home(home: Path | None, environ: Mapping[str, str] | None = None) -> Path:
    """Return the instance directory: ``home``, else ``$DAGSTER_HOME``, else the project's."""
    env = os.environ if environ is None else environ
    # realpath, not Path.resolve: a symlink loop is then the instance check's clear error.
    if home is not None:
        return Path(os.path.realpath(home))
    if env.get("DAGSTER_HOME"):
        return Path(os.path.realpath(env["DAGSTER_HOME"]))
    return DEFAULT_HOME


def load_pools(path: Path) -> dict[str, int]:
    """Read a ``pools.yaml`` file.

    Raises:
        PoolsFileError: the file is missing, not YAML, or not ``{pools: {name: int >= 0}}``.
    """
    try:
        raw = safe_load(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise PoolsFileError(f"{path}: cannot read: {error.strerror}") from error
    except yaml.YAMLError as error:
        raise PoolsFileError(f"{path}: not valid YAML: {error}") from error
    try:
        return dict(PoolsFile.model_validate(raw).pools)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in item['loc']) or '(top level)'}: {item['msg']}"
            for item in error.errors()
        )
        raise PoolsFileError(
            f"{path}: {problems} (expected `pools:` mapping pool names to slot counts >= 0)"
        ) from error


def pools_to_apply(path: Path) -> dict[str, int]:
    """The limits to write: each provider's pool from ``models.yml``, then ``path``'s pools.

    A pool listed in ``path`` overrides the provider's ``slots``.

    Raises:
        PoolsFileError: ``path`` is missing or malformed.
    """
    from datagouv_eval_pipeline.core.benchmark import BenchmarkConfigErrors
    from datagouv_eval_pipeline.pipeline.experiment import provider_pool_limits

    try:
        providers = provider_pool_limits()
    except BenchmarkConfigErrors as error:
        raise PoolsFileError(str(error)) from None
    return providers | load_pools(path)


def open_instance(home: Path) -> DagsterInstance:
    """Open the Dagster instance at ``home``, or fail with one line naming what is wrong.

    Raises:
        click.ClickException: ``dagster.yaml`` is not YAML or not Dagster's schema, or the
            instance's SQLite storage is not a database.
    """
    import sqlalchemy.exc
    from dagster import DagsterInstance
    from dagster._core.errors import DagsterInvalidConfigError
    from dagster._core.instance.ref import InstanceRef

    config = home / "dagster.yaml"
    try:
        return DagsterInstance.from_ref(InstanceRef.from_dir(str(home)))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"{config}:{mark.line + 1}" if mark is not None else str(config)
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise click.ClickException(f"{where}: not valid YAML ({problem})") from None
    except DagsterInvalidConfigError as error:
        problems = [line.strip() for line in str(error).splitlines() if line.strip()]
        detail = problems[1] if len(problems) > 1 else problems[0]
        detail = detail.split(". Expected:", 1)[0]
        raise click.ClickException(
            f"{config}: not a valid Dagster instance configuration: {detail}"
        ) from None
    except sqlalchemy.exc.DatabaseError as error:
        reason = str(error.orig) if error.orig is not None else str(error).splitlines()[0]
        raise click.ClickException(
            f"{home}: the instance's SQLite storage cannot be read ({reason}); move the "
            "damaged storage (history/, storage/, schedules/) away, or point DAGSTER_HOME "
            "at another directory"
        ) from None


def apply_pools(home: Path, limits: Mapping[str, int]) -> tuple[int | None, list[PoolState]]:
    """Set each pool's limit in the instance at ``home``.

    Pools the instance has but ``limits`` does not list are left as they are.

    Returns:
        The instance's default pool limit and every pool it now has a limit for.
    """
    with open_instance(home) as instance:
        storage = instance.event_log_storage
        if not storage.supports_global_concurrency_limits:
            raise click.ClickException(
                f"{home}: this instance's event log storage has no concurrency pools table "
                "(run `dagster instance migrate` with DAGSTER_HOME set to it)"
            )
        for name, limit in limits.items():
            storage.set_concurrency_slots(name, limit)
        return instance.global_op_concurrency_default_limit, _pool_states(instance)


def read_pools(home: Path) -> tuple[int | None, list[PoolState]]:
    """Return the instance's default pool limit and the pools it has limits for."""
    with open_instance(home) as instance:
        return instance.global_op_concurrency_default_limit, _pool_states(instance)


def _pool_states(instance: DagsterInstance) -> list[PoolState]:
    limits = instance.event_log_storage.get_pool_limits()
    return sorted(
        (PoolState(p.name, int(p.limit), bool(p.from_default)) for p in limits),
        key=lambda state: state.name,
    )


RUN_PID_TAG = "datagouv-eval/pid"
"""Tag of runs the ``experiment`` command executes in its own process: that process's pid."""
RUN_HOST_TAG = "datagouv-eval/host"
"""Tag of those runs: the machine they run on (a pid means nothing on another one)."""


@dataclass(frozen=True)
class CleanedRun:
    """A run of the instance whose process was gone, now marked failed with its slots freed.

    Attributes:
        run_id: The Dagster run id.
        job_name: Its job.
        pid: The process that ran it (None when the run only held pool slots).
        why: What was done, in words.
    """

    run_id: str
    job_name: str
    pid: int | None
    why: str


def _run_pid(instance: DagsterInstance, run_id: str, tags: Mapping[str, str]) -> int | None:
    """The pid that executes a run: our tag, else the executor's ``pid`` engine event."""
    from dagster import DagsterEventType

    if tags.get(RUN_PID_TAG, "").isdigit():
        return int(tags[RUN_PID_TAG])
    records = instance.get_records_for_run(
        run_id, of_type=DagsterEventType.ENGINE_EVENT, ascending=False, limit=50
    ).records
    for record in records:
        event = record.event_log_entry.dagster_event
        data = event.engine_event_data if event is not None else None
        value = data.metadata.get("pid") if data is not None else None
        text = str(getattr(value, "value", value) or "")
        if text.isdigit():
            return int(text)
    return None


def _process_alive(pid: int, since: float | None) -> bool:
    """Whether ``pid`` is a live process that existed when the run started (no pid reuse)."""
    import psutil  # type: ignore[import-untyped]

    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return False
        return since is None or process.create_time() <= since + 1.0
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def clean_dead_runs(instance: DagsterInstance) -> list[CleanedRun]:
    """Mark failed the in-progress runs whose process is gone, and free their pool slots.

    A run killed with ``kill -9`` (or a machine that lost power) stays ``STARTED`` forever and
    keeps its pool slots and its run-queue place, so the next run waits on "blocked by limit
    for pool". Only runs whose process is known and gone are touched: on this machine (the
    host tag, when present) and with a pid recorded (ours, or the executor's engine event).
    Slots still held by runs that have already ended are freed too.

    Returns:
        What was cleaned, one entry per run.
    """
    import socket

    from dagster import DagsterRunStatus, RunsFilter

    host = socket.gethostname()
    cleaned: list[CleanedRun] = []
    in_progress = [
        DagsterRunStatus.STARTING,
        DagsterRunStatus.STARTED,
        DagsterRunStatus.CANCELING,
    ]
    for record in instance.get_run_records(filters=RunsFilter(statuses=in_progress)):
        run = record.dagster_run
        if run.tags.get(RUN_HOST_TAG, host) != host:
            continue
        pid = _run_pid(instance, run.run_id, run.tags)
        if pid is None or pid == os.getpid():
            continue
        since = record.start_time or record.create_timestamp.timestamp()
        if _process_alive(pid, since):
            continue
        instance.report_run_failed(
            run, message=f"marked failed by datagouv-eval: its process (pid {pid}) is gone"
        )
        instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
        cleaned.append(
            CleanedRun(run.run_id, run.job_name, pid, f"process {pid} gone: marked failed")
        )
    storage = instance.event_log_storage
    if storage.supports_global_concurrency_limits:
        done = {c.run_id for c in cleaned}
        for run_id in sorted(storage.get_concurrency_run_ids() - done):
            holder = instance.get_run_by_id(run_id)
            if holder is None or holder.is_finished:
                storage.free_concurrency_slots_for_run(run_id)
                job = holder.job_name if holder is not None else "?"
                cleaned.append(CleanedRun(run_id, job, None, "ended run still held pool slots"))
    return cleaned


def describe_cleaned(cleaned: Sequence[CleanedRun]) -> str:
    """One line saying what :func:`clean_dead_runs` did."""
    if not cleaned:
        return "no dead runs in the local Dagster instance"
    items = "; ".join(f"{c.run_id[:8]} ({c.job_name}): {c.why}" for c in cleaned)
    return f"cleaned {len(cleaned)} dead run(s) of the local Dagster instance, slots freed: {items}"


def workspace_for(home: Path) -> Path:
    """Return the workspace ``dagster dev`` loads for the instance in ``home``.

    The checkout's ``workspace.yaml``; from an installed wheel, a ``workspace.yaml`` in ``home``
    with the same code location (written when missing).
    """
    if WORKSPACE is not None:
        return WORKSPACE
    path = home / "workspace.yaml"
    if not path.is_file():
        path.write_text(yaml.safe_dump(WHEEL_WORKSPACE, sort_keys=False), encoding="utf-8")
    return path


def dev_command(host: str, port: int, workspace: Path) -> list[str]:
    """Return the ``dagster dev`` argv for this project (same interpreter, so the same venv)."""
    return [
        sys.executable,
        "-m",
        "dagster",
        "dev",
        "-w",
        str(workspace),
        "-h",
        host,
        "-p",
        str(port),
    ]


def _check_home(home: Path) -> None:
    from_wheel = home == DEFAULT_HOME and DEFAULT_HOME != CONFIG_DIR
    if from_wheel and not (home / INSTANCE_FILENAME).exists():
        # An installed wheel: the shipped config is read-only, so the instance starts in the
        # current directory from a copy of it.
        home.mkdir(parents=True, exist_ok=True)
        for name in (INSTANCE_FILENAME, POOLS_FILENAME):
            shutil.copyfile(CONFIG_DIR / name, home / name)
    if home.exists() and not home.is_dir():
        raise click.ClickException(
            f"{home}: DAGSTER_HOME must be a directory (the instance's), and this is a file"
        )
    if not (home / INSTANCE_FILENAME).is_file():
        raise click.ClickException(
            f"{home}: no {INSTANCE_FILENAME} there (the project's instance config is "
            f"{CONFIG_DIR / INSTANCE_FILENAME})"
        )


def _echo_pools(default_limit: int | None, states: Sequence[PoolState]) -> None:
    shown = "none" if default_limit is None else str(default_limit)
    click.echo(f"default limit for other pools: {shown}")
    for state in states:
        origin = " (default)" if state.from_default else ""
        click.echo(f"  {state.name:<20} {state.limit}{origin}")


home_option = click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Instance directory (default: $DAGSTER_HOME, else <project>/dagster_home).",
)


@click.group(name="dagster")
def command() -> None:
    """The project-local Dagster instance: start the UI, pool limits, clean dead runs."""


def report_command(directory: Path, port: int) -> list[str]:
    """The argv of the report server the UI starts (it stops when the UI's process ends)."""
    return [
        sys.executable,
        "-m",
        "datagouv_eval_pipeline.pipeline.report_site",
        str(directory),
        str(port),
        str(os.getpid()),
    ]


def _report_dir() -> Path:
    from datagouv_eval_pipeline.pipeline.report import default_report_dir
    from datagouv_eval_pipeline.pipeline.warehouse import default_duckdb_path

    return default_report_dir(Path(default_duckdb_path()))


@command.command("ui")
@home_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Webserver address.")
@click.option(
    "--port", type=click.IntRange(1, 65535), default=3000, show_default=True, help="Webserver port."
)
@click.option(
    "--report-port",
    type=click.IntRange(1, 65535),
    default=DEFAULT_REPORT_PORT,
    show_default=True,
    help="Port the report is served on (127.0.0.1), for the links in the asset metadata.",
)
@click.option(
    "--serve-report/--no-serve-report",
    default=True,
    show_default=True,
    help="Serve the report directory over HTTP next to the UI.",
)
@click.option(
    "--print-command",
    is_flag=True,
    help="Print DAGSTER_HOME and the dagster dev command instead of running them.",
)
def ui(
    home: Path | None,
    host: str,
    port: int,
    report_port: int,
    serve_report: bool,
    print_command: bool,
) -> None:
    """Apply the pool limits, register the active cells, then run `dagster dev` until Ctrl-C."""
    resolved = resolve_home(home)
    _check_home(resolved)
    argv = dev_command(host, port, workspace_for(resolved))
    report_dir = _report_dir()
    if print_command:
        click.echo(f"DAGSTER_HOME={resolved}")
        if serve_report:
            click.echo(" ".join(report_command(report_dir, report_port)[:-1]) + " <ui pid>")
        click.echo(" ".join(argv))
        return
    require_free_port(port, host)
    if serve_report:
        require_free_port(report_port)
    pools_path = resolved / POOLS_FILENAME
    if pools_path.is_file():
        try:
            limits = pools_to_apply(pools_path)
        except PoolsFileError as error:
            raise click.ClickException(str(error)) from error
        _echo_pools(*apply_pools(resolved, limits))
    else:
        click.echo(f"no {pools_path}: pool limits left as the instance has them")
    from datagouv_eval_pipeline.defs.partitions import register_cells

    # The active cells are the partitions the UI shows (inactive ones are added when asked for).
    with open_instance(resolved) as instance:
        click.echo(f"{len(register_cells(instance))} cell partitions in the instance")
    if serve_report:
        report_dir.mkdir(parents=True, exist_ok=True)
        # The server outlives this exec (same pid, so it watches the UI) and ends with it.
        subprocess.Popen(report_command(report_dir, report_port), stdin=subprocess.DEVNULL)
        url = os.environ.get(REPORT_URL_ENV) or default_report_url(report_port)
        os.environ[REPORT_URL_ENV] = url
        click.echo(f"report: {url}index.html (serving {report_dir} on 127.0.0.1:{report_port})")
    click.echo(f"DAGSTER_HOME={resolved}; starting dagster dev on http://{host}:{port}")
    os.environ["DAGSTER_HOME"] = str(resolved)
    os.chdir(project_files.work_dir())
    # A shell that backgrounds a job (`&`) starts it with SIGINT ignored, and exec keeps ignored
    # signals: dagster dev would then ignore Ctrl-C/SIGINT and SIGTERM and leave orphans.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    sys.stdout.flush()
    os.execv(argv[0], argv)


@command.command("cleanup")
@home_option
def cleanup(home: Path | None) -> None:
    """Mark failed the runs whose process is gone (kill -9) and free their pool slots."""
    resolved = resolve_home(home)
    _check_home(resolved)
    with open_instance(resolved) as instance:
        click.echo(describe_cleaned(clean_dead_runs(instance)))


@command.command("pools")
@home_option
@click.option(
    "--apply", "apply_", is_flag=True, help="Write the limits of <home>/pools.yaml first."
)
def pools(home: Path | None, apply_: bool) -> None:
    """Show the instance's pool limits (optionally applying <home>/pools.yaml first)."""
    resolved = resolve_home(home)
    _check_home(resolved)
    if apply_:
        try:
            limits = pools_to_apply(resolved / POOLS_FILENAME)
        except PoolsFileError as error:
            raise click.ClickException(str(error)) from error
        _echo_pools(*apply_pools(resolved, limits))
    else:
        _echo_pools(*read_pools(resolved))
