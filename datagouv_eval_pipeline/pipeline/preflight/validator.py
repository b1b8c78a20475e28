"""Run the pre-flight over a set of task specs, and refresh baselines explicitly.

    report = validate(specs, ValidatorConfig(urls=TwinUrls.for_port(8765)))
    report.quarantined          # ['task_0004']

Every active task's ``resources[].checks`` run against the catalog reached through
``config.urls`` (the twin by default, the live platform when configured: same code). A task whose
expected values have a ``recompute`` also gets an implicit ``expected_values_hold`` check on each
resource they are recomputed from. A failing check quarantines only its own task.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field

from datagouv_eval_pipeline.core.providers import RetryPolicy
from datagouv_eval_pipeline.core.tasks import (
    CheckFn,
    ParamsError,
    SourceType,
    TaskSpec,
    TaskStatus,
    parse_params,
)
from datagouv_eval_pipeline.pipeline.preflight.baselines import (
    Baseline,
    BaselineError,
    BaselineField,
    BaselineObject,
    BaselineStore,
    default_baselines_dir,
    diff_fields,
    render_baseline,
)
from datagouv_eval_pipeline.pipeline.preflight.checks import (
    CHECKS,
    CheckInput,
    Context,
    PreflightVerdict,
    Target,
    Unavailable,
    baseline_fields,
    capture,
    values_for,
)
from datagouv_eval_pipeline.pipeline.preflight.http import USER_AGENT, Fetched, Fetcher
from datagouv_eval_pipeline.pipeline.preflight.models import (
    DiffEntry,
    PreflightCheckResult,
    TaskReport,
    ValidationReport,
)
from datagouv_eval_pipeline.world.catalogue import TwinUrls

DEFAULT_TWIN_PORT = 8765
"""Where ``datagouv-eval twin serve`` listens by default: the validator's default catalog."""


@dataclass(frozen=True)
class ValidatorConfig:
    """Where the catalog is and how to talk to it.

    Attributes:
        urls: Base URLs of the catalog (default: a twin on 127.0.0.1:8765; ``TwinUrls.live()``
            for production).
        baselines_dir: Where baselines live (default ``snapshots/baselines``).
        now: The clock of relative freshness windows (default: the current UTC time; give the
            twin's snapshot date when validating the twin).
        concurrency: Maximum number of HTTP requests in flight.
        timeout: Seconds per HTTP request.
        page_size: Tabular ``page_size`` when paging rows (api-tabular's maximum is 50).
        max_rows: Refuse to page through more matching rows than this.
        recompute_expected_values: Add the implicit ``expected_values_hold`` checks.
        source: A label of what is validated, copied to the report and to refreshed baselines.
        proxy: An HTTP(S) proxy every request goes through: the hostname front before the twin,
            when ``urls`` are the production ones (``twin.front``); None for none.
        ca_bundle: The CA bundle trusting that front's certificates.
    """

    urls: TwinUrls = field(default_factory=lambda: TwinUrls.for_port(DEFAULT_TWIN_PORT))
    baselines_dir: Path = field(default_factory=default_baselines_dir)
    now: datetime | None = None
    concurrency: int = 8
    timeout: float = 15.0
    page_size: int = 50
    max_rows: int = 100_000
    recompute_expected_values: bool = True
    source: str = ""
    proxy: str | None = None
    ca_bundle: str | None = None

    def clock(self) -> datetime:
        """Return ``now`` (UTC), defaulting to the current time."""
        now = self.now or datetime.now(UTC)
        return now.replace(tzinfo=UTC) if now.tzinfo is None else now

    def label(self) -> str:
        """Return ``source`` or, by default, the main API base URL."""
        return self.source or self.urls.datagouv_api


# ----------------------------------------------------------------------------- planning


@dataclass(frozen=True)
class PlannedCheck:
    """One check to run: its target, parsed parameters (or why they are invalid)."""

    fn: CheckFn
    target: Target
    raw_params: dict[str, Any]
    params: Any
    params_error: str | None
    implicit: bool
    fields: frozenset[BaselineField]


@dataclass(frozen=True)
class PlannedTask:
    """A task and its checks, in report order."""

    spec: TaskSpec
    checks: tuple[PlannedCheck, ...]

    def baseline_needs(self) -> dict[Target, frozenset[BaselineField]]:
        """Return, per object, the baseline fields this task's checks compare."""
        needs: dict[Target, frozenset[BaselineField]] = {}
        for check in self.checks:
            if check.fields:
                needs[check.target] = needs.get(check.target, frozenset()) | check.fields
        return needs


def active(specs: Sequence[TaskSpec]) -> list[TaskSpec]:
    """Return the active specs sorted by task id."""
    return sorted((s for s in specs if s.meta.status == TaskStatus.ACTIVE), key=lambda s: s.task_id)


def plan(specs: Sequence[TaskSpec], *, recompute_expected_values: bool = True) -> list[PlannedTask]:
    """Return the checks of every active task, in a deterministic order.

    The order is the spec's: resources in order, their checks in order, then the implicit
    ``expected_values_hold`` checks (one per resource an expected value is recomputed from,
    unless the spec already declares that check on that resource).
    """
    planned: list[PlannedTask] = []
    for spec in active(specs):
        checks: list[PlannedCheck] = []
        declared: set[str] = set()
        for ref in spec.resources:
            target = Target(ref.type, ref.id, ref.dataset_id)
            for check in ref.checks:
                if check.fn == CheckFn.EXPECTED_VALUES_HOLD:
                    declared.add(ref.id)
                checks.append(_planned(check.fn, target, dict(check.params), implicit=False))
        if recompute_expected_values:
            parents = {r.id: r.dataset_id for r in spec.resources if r.type == SourceType.RESOURCE}
            seen: list[str] = []
            for value in spec.expected_values:
                rid = value.recompute.resource_id if value.recompute else None
                if rid and rid not in declared and rid not in seen and values_for(spec, rid):
                    seen.append(rid)
                    target = Target(SourceType.RESOURCE, rid, parents.get(rid))
                    checks.append(_planned(CheckFn.EXPECTED_VALUES_HOLD, target, {}, implicit=True))
        planned.append(PlannedTask(spec, tuple(checks)))
    return planned


def _planned(fn: CheckFn, target: Target, raw: dict[str, Any], *, implicit: bool) -> PlannedCheck:
    try:
        params = parse_params(fn, raw, target.type)
    except ParamsError as error:
        return PlannedCheck(fn, target, raw, None, str(error), implicit, frozenset())
    return PlannedCheck(fn, target, raw, params, None, implicit, baseline_fields(fn, params))


# ----------------------------------------------------------------------------- validation


def validate(specs: Sequence[TaskSpec], config: ValidatorConfig | None = None) -> ValidationReport:
    """Run every check of every active task and return the report (blocking wrapper).

    Args:
        specs: Task specs (drafts and deprecated ones are skipped).
        config: Where the catalog and the baselines are; defaults to :class:`ValidatorConfig`.

    Returns:
        The report: one :class:`TaskReport` per active task, sorted by task id.
    """
    return asyncio.run(avalidate(specs, config))


async def avalidate(
    specs: Sequence[TaskSpec], config: ValidatorConfig | None = None
) -> ValidationReport:
    """Asynchronous :func:`validate` (for callers that already run an event loop)."""
    config = config or ValidatorConfig()
    store = BaselineStore(config.baselines_dir)
    tasks = plan(specs, recompute_expected_values=config.recompute_expected_values)
    async with _client(config) as client:
        ctx = _context(config, client)
        reports = await asyncio.gather(*(_run_task(ctx, store, task) for task in tasks))
    return ValidationReport(
        urls=config.urls.as_dict(),
        source=config.label(),
        now=config.clock(),
        baselines_dir=str(config.baselines_dir),
        tasks=sorted(reports, key=lambda r: r.task_id),
    )


# The probe asks twice: a catalogue that does not answer must stop the run quickly.
_PROBE_RETRY = RetryPolicy(
    retries=1, base_delay_s=0.2, max_delay_s=1.0, min_delay_s=0.0, jitter_s=0.2
)


def probe(config: ValidatorConfig) -> tuple[bool, str]:
    """Ask the catalog's main API whether it answers at all (``GET {api}1/site/``).

    The checks turn a transport error into a failed check (the task is quarantined), which
    cannot be told from drift; the probe can: a run whose catalog does not answer must stop.

    Returns:
        Whether a 2xx answer arrived, and ``METHOD url → status`` or the transport error.
    """

    async def ask() -> Fetched:
        async with _client(config) as client:
            fetcher = Fetcher(
                client,
                1,
                RetryPolicy(
                    retries=1, base_delay_s=0.2, max_delay_s=1.0, min_delay_s=0.0, jitter_s=0.2
                ),
            )
            return await fetcher.get(f"{config.urls.datagouv_api}1/site/")

    fetched = asyncio.run(ask())
    return fetched.ok, fetched.describe()


def _client(config: ValidatorConfig) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=max(1, config.concurrency))
    options: dict[str, Any] = {}
    if config.proxy is not None:
        options["proxy"] = config.proxy
    if config.ca_bundle is not None:
        options["verify"] = ssl.create_default_context(cafile=config.ca_bundle)
    return httpx.AsyncClient(
        timeout=config.timeout, limits=limits, headers={"User-Agent": USER_AGENT}, **options
    )


def _context(config: ValidatorConfig, client: httpx.AsyncClient) -> Context:
    return Context(
        fetcher=Fetcher(client, config.concurrency),
        urls=config.urls,
        now=config.clock(),
        page_size=config.page_size,
        max_rows=config.max_rows,
        source=config.label(),
    )


async def _run_task(ctx: Context, store: BaselineStore, task: PlannedTask) -> TaskReport:
    baselines: dict[Target, Baseline | str | None] = {}
    for target in task.baseline_needs():
        try:
            baselines[target] = store.load(task.spec.task_id, target.type, target.id)
        except (BaselineError, ValueError) as error:
            baselines[target] = str(error)
    results = await asyncio.gather(
        *(_run_check(ctx, task.spec, check, baselines.get(check.target)) for check in task.checks)
    )
    status: Literal["ok", "quarantined"] = "ok" if all(r.passed for r in results) else "quarantined"
    return TaskReport(
        task_id=task.spec.task_id,
        task_version=task.spec.version,
        spec_hash=task.spec.spec_hash(),
        status=status,
        checks=list(results),
    )


async def _run_check(
    ctx: Context, spec: TaskSpec, check: PlannedCheck, baseline: Baseline | str | None
) -> PreflightCheckResult:
    if check.params_error is not None:
        verdict = PreflightVerdict("error", check.params_error)
    elif isinstance(baseline, str):
        verdict = PreflightVerdict("error", baseline)
    else:
        given = CheckInput(check.fn, check.target, check.params, spec, baseline, check.fields)
        try:
            verdict = await CHECKS[check.fn](ctx, given)
        except Exception as error:  # one broken check must not stop the run
            verdict = PreflightVerdict("error", f"internal error in {check.fn.value}: {error!r}")
    return PreflightCheckResult(
        fn=check.fn.value,
        object_type=check.target.type.value,
        object_id=check.target.id,
        dataset_id=check.target.dataset_id,
        params=check.raw_params,
        outcome=verdict.outcome,
        reason=verdict.reason,
        diffs=list(verdict.diffs),
        references=list(verdict.references),
        implicit=check.implicit,
    )


# ----------------------------------------------------------------------------- refresh


class BaselineChange(BaseModel):
    """What a refresh would do to one baseline file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    kind: Literal["added", "changed", "unchanged", "removed"]
    task_id: str
    object_type: str
    object_id: str
    diffs: list[DiffEntry] = Field(default_factory=list)
    new: Baseline | None = None
    """The baseline to write (``None`` for ``removed``)."""


class RefreshPlan(BaseModel):
    """The diff of a baseline refresh, computed before anything is written."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    baselines_dir: str
    source: str
    changes: list[BaselineChange]
    errors: list[str]
    """Objects whose current values could not be read; a plan with errors is not applied."""

    @property
    def pending(self) -> list[BaselineChange]:
        """Return the changes that would touch a file (everything but ``unchanged``)."""
        return [c for c in self.changes if c.kind != "unchanged"]

    def apply(self) -> list[Path]:
        """Write added and changed baselines, delete removed ones, and return the paths touched.

        Raises:
            RuntimeError: the plan has errors (nothing is written then).
        """
        if self.errors:
            raise RuntimeError(f"the refresh has {len(self.errors)} error(s); nothing was written")
        touched: list[Path] = []
        for change in self.pending:
            path = Path(change.path)
            if change.kind == "removed":
                path.unlink(missing_ok=True)
            else:
                assert change.new is not None  # added/changed carry the new baseline
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(render_baseline(change.new), encoding="utf-8")
            touched.append(path)
        return touched


def plan_refresh(specs: Sequence[TaskSpec], config: ValidatorConfig | None = None) -> RefreshPlan:
    """Read the current values of every baseline the active tasks need and diff them.

    Nothing is written: call :meth:`RefreshPlan.apply` after showing the plan. Baseline files
    of the loaded tasks that no check needs any more are planned for removal; files of tasks
    that are not loaded are left alone.
    """
    return asyncio.run(aplan_refresh(specs, config))


async def aplan_refresh(
    specs: Sequence[TaskSpec], config: ValidatorConfig | None = None
) -> RefreshPlan:
    """Asynchronous :func:`plan_refresh`."""
    config = config or ValidatorConfig()
    store = BaselineStore(config.baselines_dir)
    tasks = plan(specs, recompute_expected_values=False)
    wanted = [
        (task.spec.task_id, target, fields)
        for task in tasks
        for target, fields in task.baseline_needs().items()
    ]
    async with _client(config) as client:
        ctx = _context(config, client)
        captured = await asyncio.gather(*(_capture(ctx, t, f) for _, t, f in wanted))
    changes: list[BaselineChange] = []
    errors: list[str] = []
    planned_paths: set[Path] = set()
    for (task_id, target, _), values in zip(wanted, captured, strict=True):
        path = store.path(task_id, target.type, target.id)
        planned_paths.add(path)
        if isinstance(values, str):
            errors.append(f"{task_id} {target.label}: {values}")
            continue
        new = Baseline(
            task_id=task_id,
            object=BaselineObject(type=target.type, id=target.id, dataset_id=target.dataset_id),
            source=config.label(),
            **values,
        )
        changes.append(_change(store, path, task_id, target, new))
    for task in tasks:
        for path in store.task_files(task.spec.task_id):
            if path not in planned_paths:
                changes.append(_removal(path, task.spec.task_id))
    return RefreshPlan(
        baselines_dir=str(config.baselines_dir),
        source=config.label(),
        changes=changes,
        errors=errors,
    )


async def _capture(
    ctx: Context, target: Target, fields: frozenset[BaselineField]
) -> dict[str, Any] | str:
    try:
        return await capture(ctx, target, fields)
    except Unavailable as error:
        return str(error)


def _change(
    store: BaselineStore, path: Path, task_id: str, target: Target, new: Baseline
) -> BaselineChange:
    common: dict[str, Any] = {
        "path": str(path),
        "task_id": task_id,
        "object_type": target.type.value,
        "object_id": target.id,
        "new": new,
    }
    try:
        old = store.load(task_id, target.type, target.id)
    except BaselineError as error:
        diff = DiffEntry(field="file", baseline=str(error), current="rewritten")
        return BaselineChange(kind="changed", diffs=[diff], **common)
    if old is None:
        added = [DiffEntry(field=k, baseline=None, current=v) for k, v in new.fields().items()]
        return BaselineChange(kind="added", diffs=added, **common)
    diffs = diff_fields(old.fields(), new.fields())
    same_target = old.object == new.object
    if not same_target:
        diffs.append(
            DiffEntry(
                field="object",
                baseline=old.object.model_dump(mode="json"),
                current=new.object.model_dump(mode="json"),
            )
        )
    return BaselineChange(kind="changed" if diffs else "unchanged", diffs=diffs, **common)


def _removal(path: Path, task_id: str) -> BaselineChange:
    object_type, _, object_id = path.stem.partition("-")
    return BaselineChange(
        path=str(path),
        kind="removed",
        task_id=task_id,
        object_type=object_type,
        object_id=object_id,
    )
