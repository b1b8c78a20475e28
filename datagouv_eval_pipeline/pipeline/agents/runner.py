"""Run one cell: every task (× repeats) through a pydantic-ai agent, one trace per run.

``run_cell(cell, tasks, twin_urls=...)`` is the entry point (``arun_cell`` inside an event
loop). Inside a cell, task runs are concurrent, bounded by a concurrency cap and by the
provider's shared rate limiter; each run has its own budget (requests, tokens, wall time) and
ends with a status:

* ``ok``: the agent gave its structured final answer;
* ``budget_exceeded``: a budget ended it (the reason says which);
* ``error``: the model failed (after retries), misbehaved, or the run crashed;
* ``cancelled``: stopped by Ctrl-C or SIGTERM while in flight (``cancel.py``); never cached;
* ``skipped``: never started (an MCP version the task excludes, a capability set the model or
  this machine cannot run); the reason says why. Skipped and failed runs are recorded, never
  scored as zeros.

A tool failure is not a run failure: it is shown to the model (see ``recording.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
from collections.abc import Callable, Collection, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version
from pydantic_ai import Agent, ToolOutput, UsageLimits, capture_run_messages
from pydantic_ai.exceptions import (
    ModelAPIError,
    ModelHTTPError,
    UnexpectedModelBehavior,
    UsageLimitExceeded,
)
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models import Model
from pydantic_ai.models.openai import OpenAIChatModel

from datagouv_eval_pipeline.core.benchmark import Cell, CellModel, ProviderKind, token_cost
from datagouv_eval_pipeline.core.metrics import code_version, working_tree_dirty
from datagouv_eval_pipeline.core.providers import (
    Clock,
    ManagedModel,
    RateLimit,
    RateLimiters,
    RetryPolicy,
    SystemClock,
    process_rate_limiters,
)
from datagouv_eval_pipeline.core.tasks import TaskSpec
from datagouv_eval_pipeline.core.traces import (
    ModelTurn,
    Provenance,
    RequestUsage,
    ToolCall,
    Trace,
    Usage,
)
from datagouv_eval_pipeline.pipeline.agents.baselines import get_policy
from datagouv_eval_pipeline.pipeline.agents.cancel import CancelToken
from datagouv_eval_pipeline.pipeline.agents.capabilities import (
    SANDBOX_CAPABILITIES,
    WEB_SEARCH,
    CatalogTarget,
    McpConnections,
    TaskTools,
    ToolEnvironment,
    UnsupportedCapabilityError,
    build_task_tools,
    check_capabilities,
    default_sandbox,
    instructions_for,
)
from datagouv_eval_pipeline.pipeline.agents.context import ContextOverflowError, ContextWindow
from datagouv_eval_pipeline.pipeline.agents.limits import RunBudget, wall_clock_reason
from datagouv_eval_pipeline.pipeline.agents.models import MissingApiKeyError, base_model
from datagouv_eval_pipeline.pipeline.agents.output import (
    FINAL_ANSWER_DESCRIPTION,
    FINAL_ANSWER_TOOL,
    FinalAnswer,
)
from datagouv_eval_pipeline.pipeline.agents.recording import (
    DEFAULT_MODEL_RESULT_CHARS,
    RunRecorder,
    result_text,
)
from datagouv_eval_pipeline.pipeline.agents.skills import skills_strategy
from datagouv_eval_pipeline.pipeline.agents.web import CapabilityUnavailableError
from datagouv_eval_pipeline.world.catalogue import TwinUrls
from datagouv_eval_pipeline.world.sandbox import (
    SandboxBackend,
    SandboxLimits,
    SandboxUnavailableError,
)

DEFAULT_TRACE_RESULT_CHARS: int | None = None
"""Longest tool result stored in a trace (None: whole results, so the results browser shows
what each tool returned); when cut, the full length goes in ``result_chars``."""

INFRASTRUCTURE = "infrastructure"
"""Reason prefix of runs ended by a toolset that died or became unreachable mid-run."""

_NO_RESULT = "[no result: the run ended before the tool returned]"


@dataclass(frozen=True)
class RunSettings:
    """How the task runs of a cell are executed.

    Attributes:
        budget: Per-run budget (requests, tokens, wall time).
        retry: Retries of failed model requests.
        max_concurrency: Task runs in flight at once within the cell.
        trace_result_chars: Longest tool result kept in the trace (None: whole results).
        model_result_chars: Longest tool result shown to the model.
        agent_retries: How often the model may redo a call whose arguments or final answer
            failed validation before the run ends as an error.
        skills_strategy: How the skills document is injected (``skills.py``).
        sandbox_limits: Limits of every sandboxed call.
    """

    budget: RunBudget = field(default_factory=RunBudget)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    max_concurrency: int = 8
    trace_result_chars: int | None = DEFAULT_TRACE_RESULT_CHARS
    model_result_chars: int = DEFAULT_MODEL_RESULT_CHARS
    agent_retries: int = 2
    skills_strategy: str = "append"
    sandbox_limits: SandboxLimits = field(default_factory=SandboxLimits)

    def __post_init__(self) -> None:
        if self.max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {self.max_concurrency}")


@dataclass
class CellRun:
    """What running a cell produced.

    Attributes:
        cell: The cell.
        traces: One per (task, repeat), in task then repeat order.
        tool_lists: The MCP tool list by version, fetched once per version.
        snapshot_id: The catalog snapshot the twin served (None when live).
        sandbox_problem: Why the code sandbox cannot run on this machine (bubblewrap missing,
            ...), when a run was skipped for it; None otherwise.
    """

    cell: Cell
    traces: list[Trace]
    tool_lists: dict[str, list[dict[str, Any]]]
    snapshot_id: str | None
    sandbox_problem: str | None = None


def task_skip_reason(cell: Cell, task: TaskSpec) -> str | None:
    """Why ``task`` does not run in ``cell`` (its MCP constraint excludes the version), or None."""
    constraint = task.toolset_constraints.mcp
    applies = constraint and "mcp" in cell.capabilities and cell.mcp_version is not None
    if applies and Version(str(cell.mcp_version)) not in SpecifierSet(str(constraint)):
        return f"task {task.task_id} needs MCP {constraint}; the cell runs MCP {cell.mcp_version}"
    return None


def model_skip_reason(cell: Cell) -> str | None:
    """Why the cell's model cannot run its capability set (offline policies), or None."""
    if cell.model.kind != ProviderKind.OFFLINE:
        return None
    try:
        policy = get_policy(cell.model.name)
    except KeyError as error:
        return str(error.args[0])
    return policy.unsupported(cell.capabilities)


def rate_limit_of(model: CellModel) -> tuple[str, RateLimit | None]:
    """The limiter key of a model and its configured limits (None: not configured).

    Models sharing their provider's quota share one limiter (key: the provider name); a model
    with its own ``rate_limit`` has its own (key: the model key).
    """
    config = model.rate_limit
    if config is None:
        return model.provider, None
    limit = RateLimit(
        requests_per_minute=config.requests_per_minute,
        tokens_per_minute=config.tokens_per_minute,
    )
    return (model.quota_key if config.per_model else model.provider), limit


def retry_policy(model: CellModel, default: RetryPolicy) -> RetryPolicy:
    """The retries of a model's requests: its provider's ``retries`` when set, else ``default``."""
    retries = model.settings.retries
    return default if retries is None else dataclasses.replace(default, retries=retries)


def cell_rate_limiters(cell: Cell, clock: Clock | None = None) -> RateLimiters:
    """Rate limiters built from the cell's model configuration.

    The configured limits apply to the cell's limiter key (see :func:`rate_limit_of`); without
    configured limits, the provider's built-in default (:data:`DEFAULT_RATE_LIMITS`) applies.
    """
    key, limit = rate_limit_of(cell.model)
    return RateLimiters({key: limit} if limit is not None else None, clock=clock)


@functools.cache
def _code_dirty() -> bool | None:
    # Once per process (one run): ``git status`` is a subprocess, not to be paid per task run.
    return working_tree_dirty()


@dataclass
class _Shared:
    """State shared by the task runs of one cell."""

    cell: Cell
    settings: RunSettings
    env: ToolEnvironment
    limiters: RateLimiters
    clock: Clock
    semaphore: asyncio.Semaphore
    snapshot_id: str | None
    cell_problem: str | None
    secrets: list[str]
    sandbox_problem: str | None = None
    model: Model | None = None
    agent: Agent[None, FinalAnswer] | None = None


async def arun_cell(
    cell: Cell,
    tasks: Sequence[TaskSpec],
    *,
    twin_urls: TwinUrls | None,
    repeats: int = 1,
    settings: RunSettings | None = None,
    rate_limiters: RateLimiters | None = None,
    sandbox: SandboxBackend | None = None,
    model_base_url: str | None = None,
    environ: Mapping[str, str] | None = None,
    snapshot_id: str | None = None,
    clock: Clock | None = None,
    model_factory: Callable[[CellModel], Model] | None = None,
    mcp_url: str | None = None,
    only: Collection[tuple[str, int]] | None = None,
    cancel: CancelToken | None = None,
    on_trace: Callable[[Trace], None] | None = None,
) -> CellRun:
    """Run every task of ``tasks`` ``repeats`` times in ``cell``, concurrently.

    Args:
        cell: The cell (model, capabilities, versions, prompt).
        tasks: The tasks to run.
        twin_urls: The twin's base URLs; None runs against the live data.gouv.fr.
        repeats: Runs per task, each with its own trace and repeat index.
        settings: Budgets, retries, concurrency and truncation.
        rate_limiters: Provider rate limiters; when None, the process's own
            (:func:`~datagouv_eval_pipeline.core.providers.limits.process_rate_limiters`, shared
            with
            the judges), or limiters of the cell's configuration when a ``clock`` is given. A
            limiter created on first use takes the cell's configured limits (``models.yml``,
            else the built-in defaults) unless the caller set limits for it.
        sandbox: Sandbox backend for code and CLI tools (the local one when needed and None).
        model_base_url: Overrides the model's base URL (a local replay server).
        environ: Where API keys are read (``os.environ`` by default).
        snapshot_id: The snapshot the twin serves, for provenance (read from the twin if None).
        clock: Time source of latency and rate-limit waits (tests pass a fake one).
        model_factory: Builds the model instead of the registry (tests, benchmarks); it is
            still wrapped with rate limiting, retries and recording.
        mcp_url: The endpoint of the cell's MCP server when it is a real build started for
            the run (``mcp_builds.BuildServers``); its own ``tools/list`` is the tool list.
        only: Run only these ``(task_id, repeat)`` pairs (the others are already stored, e.g.
            repeat 0 when repeats are added); None runs them all.
        cancel: When set during the run, the runs in flight or waiting end as ``cancelled``
            with its reason and the cell returns at once; finished runs are kept.
        on_trace: Called with each trace as soon as its run ends (to cache it at once, so an
            interrupted cell does not redo its finished runs).

    Returns:
        The traces, one per (task, repeat) run, in task order then repeat order, and the MCP
        tool lists.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    settings = settings or RunSettings()
    if rate_limiters is None:
        # The process's limiters are shared with the judges of the same provider; a test's
        # fake clock gets limiters of its own.
        fake_clock = clock is not None
        rate_limiters = cell_rate_limiters(cell, clock) if fake_clock else process_rate_limiters()
    clock = clock or SystemClock()
    target = (
        await asyncio.to_thread(CatalogTarget.twin, twin_urls)
        if twin_urls is not None
        else CatalogTarget.live()
    )
    if twin_urls is not None and snapshot_id is None:
        snapshot_id = await _twin_snapshot_id(twin_urls)
    needs_sandbox = bool(SANDBOX_CAPABILITIES & set(cell.capabilities))
    if sandbox is None and needs_sandbox and (model_factory or model_skip_reason(cell) is None):
        sandbox = default_sandbox()
    async with contextlib.AsyncExitStack() as stack:
        if target.served is not None and WEB_SEARCH in cell.capabilities:
            # The fetch tool reaches the production URLs through a front of its own.
            front = target.served.front().start()
            stack.callback(front.stop)
            target = dataclasses.replace(target, proxy_url=front.proxy_url)
        return await _run_cell_tasks(
            cell,
            tasks,
            target,
            repeats,
            settings,
            rate_limiters,
            sandbox,
            model_base_url,
            environ,
            snapshot_id,
            clock,
            model_factory,
            mcp_url,
            only,
            cancel,
            on_trace,
        )


async def _run_cell_tasks(
    cell: Cell,
    tasks: Sequence[TaskSpec],
    target: CatalogTarget,
    repeats: int,
    settings: RunSettings,
    rate_limiters: RateLimiters,
    sandbox: SandboxBackend | None,
    model_base_url: str | None,
    environ: Mapping[str, str] | None,
    snapshot_id: str | None,
    clock: Clock,
    model_factory: Callable[[CellModel], Model] | None,
    mcp_url: str | None,
    only: Collection[tuple[str, int]] | None,
    cancel: CancelToken | None,
    on_trace: Callable[[Trace], None] | None,
) -> CellRun:
    async with McpConnections() as mcp:
        env = ToolEnvironment(
            target=target,
            mcp=mcp,
            sandbox=sandbox,
            sandbox_limits=settings.sandbox_limits,
            skills=skills_strategy(settings.skills_strategy),
            model_result_chars=settings.model_result_chars,
            mcp_url=mcp_url,
        )
        shared = _Shared(
            cell=cell,
            settings=settings,
            env=env,
            limiters=rate_limiters,
            clock=clock,
            semaphore=asyncio.Semaphore(settings.max_concurrency),
            snapshot_id=snapshot_id,
            cell_problem=(None if model_factory else model_skip_reason(cell))
            or check_capabilities(cell, env),
            secrets=_secrets(cell, environ),
        )
        if shared.cell_problem is None:
            # One model (and one HTTP client) per cell, shared by its runs.
            try:
                shared.model = (
                    model_factory(cell.model)
                    if model_factory is not None
                    else base_model(cell.model, base_url=model_base_url, environ=environ)
                )
            except (MissingApiKeyError, KeyError, ValueError) as error:
                message = error.args[0] if isinstance(error, KeyError) and error.args else error
                shared.cell_problem = str(message)
        instructions = ""
        if shared.cell_problem is None:
            try:
                instructions = instructions_for(cell, env)
            except UnsupportedCapabilityError as error:
                shared.cell_problem = str(error)
        if shared.cell_problem is None:
            # One agent per cell: building its output schema costs more than a whole offline run.
            shared.agent = Agent(
                instructions=instructions or None,
                output_type=ToolOutput(
                    FinalAnswer, name=FINAL_ANSWER_TOOL, description=FINAL_ANSWER_DESCRIPTION
                ),
                retries=settings.agent_retries,
            )
        if shared.cell_problem is None and "mcp" in cell.capabilities and cell.mcp_version:
            try:
                await mcp.tool_list(cell.mcp_version, env.mcp_endpoint(cell))
            except Exception as error:
                shared.cell_problem = (
                    f"the MCP server {cell.mcp_version} is unreachable: "
                    f"{type(error).__name__}: {error}"
                )
        runs = [
            _run_or_cancel(shared, task, repeat, cancel, on_trace)
            for task in tasks
            for repeat in range(repeats)
            if only is None or (task.task_id, repeat) in only
        ]
        try:
            traces = await _gather_cancellable(runs, cancel)
        finally:
            await _close_model(shared.model)
        return CellRun(
            cell=cell,
            traces=traces,
            tool_lists=dict(mcp.tool_lists),
            snapshot_id=snapshot_id,
            sandbox_problem=shared.sandbox_problem,
        )


def execute_cell(
    cell: Cell, tasks: Sequence[TaskSpec], *, twin_urls: TwinUrls | None, **options: Any
) -> CellRun:
    """Synchronous :func:`arun_cell` (starts its own event loop)."""
    return asyncio.run(arun_cell(cell, tasks, twin_urls=twin_urls, **options))


def run_cell(
    cell: Cell, tasks: Sequence[TaskSpec], *, twin_urls: TwinUrls | None, **options: Any
) -> list[Trace]:
    """Run a cell and return its traces (see :func:`arun_cell` for the options)."""
    return execute_cell(cell, tasks, twin_urls=twin_urls, **options).traces


async def _close_model(model: Model | None) -> None:
    """Close the HTTP client of an OpenAI-compatible model (we created it, so we close it)."""
    if isinstance(model, OpenAIChatModel):
        with contextlib.suppress(Exception):
            await model.client.close()


async def _twin_snapshot_id(urls: TwinUrls) -> str | None:
    import httpx

    try:
        async with httpx.AsyncClient(timeout=10, trust_env=False) as client:
            response = await client.get(urls.site + "_twin/health")
        value = response.json().get("snapshot_id")
        return str(value) if value else None
    except (httpx.HTTPError, ValueError):
        return None


def _secrets(cell: Cell, environ: Mapping[str, str] | None) -> list[str]:
    import os

    env = os.environ if environ is None else environ
    if cell.model.api_key_env:
        value = env.get(cell.model.api_key_env, "").strip()
        if len(value) >= 4:
            return [value]
    return []


def _base_trace(shared: _Shared, task: TaskSpec, repeat: int) -> dict[str, Any]:
    cell = shared.cell
    return {
        "task_id": task.task_id,
        "model": cell.model.name,
        "capabilities": list(cell.capabilities),
        "mcp_version": cell.mcp_version,
        "repeat": repeat,
        "provenance": Provenance(
            cell_key=cell.key,
            spec_hash=task.spec_hash(),
            snapshot_id=shared.snapshot_id,
            skills_version=cell.skills_version,
            system_prompt=cell.system_prompt,
            system_prompt_sha256=cell.system_prompt_sha256,
            code_version=code_version().label,
            code_dirty=_code_dirty(),
            started_at=datetime.now(UTC).isoformat(timespec="seconds"),
            base_urls=shared.env.target.urls.as_dict(),
            model_settings=cell.model.settings.record() or None,
        ),
    }


async def _gather_cancellable(
    runs: Sequence[Coroutine[Any, Any, Trace]], cancel: CancelToken | None
) -> list[Trace]:
    """Await every run; when ``cancel`` is set, cancel those still going (they return traces)."""
    pending = [asyncio.ensure_future(run) for run in runs]
    if cancel is None:
        return list(await asyncio.gather(*pending))

    async def watch() -> None:
        while not cancel.cancelled:
            await asyncio.sleep(0.1)
        for future in pending:
            future.cancel()

    watcher = asyncio.ensure_future(watch())
    try:
        return list(await asyncio.gather(*pending))
    finally:
        watcher.cancel()


async def _run_or_cancel(
    shared: _Shared,
    task: TaskSpec,
    repeat: int,
    cancel: CancelToken | None,
    on_trace: Callable[[Trace], None] | None,
) -> Trace:
    try:
        trace = await _run_task(shared, task, repeat)
    except asyncio.CancelledError:
        if cancel is None or not cancel.cancelled:
            raise
        base = _base_trace(shared, task, repeat)
        return Trace(**base, status="cancelled", status_reason=cancel.reason)
    if on_trace is not None:
        on_trace(trace)
    return trace


async def _run_task(shared: _Shared, task: TaskSpec, repeat: int) -> Trace:
    base = _base_trace(shared, task, repeat)
    reason = shared.cell_problem or task_skip_reason(shared.cell, task)
    if reason is not None:
        return Trace(**base, status="skipped", status_reason=reason)
    async with shared.semaphore:
        base["provenance"] = base["provenance"].model_copy(
            update={"started_at": datetime.now(UTC).isoformat(timespec="seconds")}
        )
        trace = await _execute(shared, task, base)
    return _scrub(trace, shared.secrets)


async def _execute(shared: _Shared, task: TaskSpec, base: dict[str, Any]) -> Trace:
    cell, settings, clock = shared.cell, shared.settings, shared.clock
    recorder = RunRecorder(clock=clock, context=ContextWindow.of(cell.model.settings))
    started = clock.now()
    try:
        tools = await build_task_tools(cell, shared.env, recorder)
    except (
        UnsupportedCapabilityError,
        CapabilityUnavailableError,
        SandboxUnavailableError,
    ) as error:
        if isinstance(error, SandboxUnavailableError):
            shared.sandbox_problem = str(error)  # the machine's, not the configuration's
        return Trace(**base, status="skipped", status_reason=str(error))
    assert shared.model is not None  # a cell without a model is skipped before any run
    model = ManagedModel(
        shared.model,
        shared.limiters.get(*rate_limit_of(cell.model)),
        retry=retry_policy(cell.model, settings.retry),
        observer=recorder,
        sleep=clock.sleep,
    )
    assert shared.agent is not None
    status, reason, output, messages = await _drive(
        shared.agent, model, tools, task, settings, recorder
    )
    if recorder.infrastructure_error is not None and status in ("ok", "error"):
        # Not the agent's fault: excluded from scores (NULL), counted in coverage.
        status, reason = "error", f"{INFRASTRUCTURE}: {recorder.infrastructure_error}"
    latency_ms = max(0.0, (clock.now() - started) * 1000)
    usage = Usage(
        input_tokens=sum(r.input_tokens for r in recorder.requests),
        output_tokens=sum(r.output_tokens for r in recorder.requests),
        requests=len(recorder.requests),
    )
    calls, turns = calls_and_turns(messages, recorder, settings.trace_result_chars)
    return Trace(
        **base,
        answer=output.answer if output else "",
        declined=output.declined if output else None,
        cited_urls=list(output.cited_urls) if output else None,
        ids_used=list(output.ids_used) if output else None,
        tool_calls=calls,
        turns=turns,
        usage=usage,
        requests=[
            RequestUsage(
                input_tokens=r.input_tokens,
                output_tokens=r.output_tokens,
                duration_ms=r.duration_ms,
            )
            for r in recorder.requests
        ],
        latency_ms=latency_ms,
        rate_limit_wait_ms=min(latency_ms, recorder.rate_limit_wait_s * 1000),
        cost=token_cost(cell.model, usage.input_tokens, usage.output_tokens),
        reasoning=reasoning_of(messages),
        status=status,
        status_reason=reason,
    )


async def _drive(
    agent: Agent[None, FinalAnswer],
    model: ManagedModel,
    tools: TaskTools,
    task: TaskSpec,
    settings: RunSettings,
    recorder: RunRecorder,
) -> tuple[str, str | None, FinalAnswer | None, list[ModelMessage]]:
    """Run the agent; return (status, reason, output, messages)."""
    budget = settings.budget
    limits = UsageLimits(request_limit=budget.max_requests, total_tokens_limit=budget.max_tokens)
    status, reason, output = "ok", None, None
    messages: list[ModelMessage] = []
    with capture_run_messages() as captured:
        try:
            async with asyncio.timeout(budget.wall_timeout_s) as deadline:

                def extend(seconds: float) -> None:
                    # Rate-limit waits do not count against the run's wall-clock budget.
                    when = deadline.when()
                    if when is not None:
                        deadline.reschedule(when + seconds)

                recorder.on_wait = extend
                result = await agent.run(
                    task.prompt, model=model, toolsets=tools.toolsets, usage_limits=limits
                )
            output = result.output
            messages = result.all_messages()
        except TimeoutError:
            status, reason = "budget_exceeded", wall_clock_reason(budget.wall_timeout_s)
        except UsageLimitExceeded as error:
            status, reason = "budget_exceeded", str(error)
        except ContextOverflowError as error:
            status, reason = "error", str(error)
        except ModelHTTPError as error:
            status = "error"
            reason = f"model request failed: HTTP {error.status_code}"
            if recorder.retries:
                reason += f" after {len(recorder.retries)} retries"
        except ModelAPIError as error:
            status, reason = (
                "error",
                f"model request failed: {type(error).__name__}: {error.message}",
            )
        except UnexpectedModelBehavior as error:
            status, reason = "error", f"unexpected model behaviour: {error.message}"
        except Exception as error:
            status, reason = "error", f"{type(error).__name__}: {error}"
        finally:
            recorder.on_wait = None
            await tools.aclose()
        if status != "ok":
            messages = list(captured)
    return status, reason, output, messages


def tool_calls_of(
    messages: Sequence[ModelMessage], recorder: RunRecorder, max_chars: int | None = None
) -> list[ToolCall]:
    """The trace's tool calls, in the order the model made them (the final answer excluded)."""
    return calls_and_turns(messages, recorder, max_chars)[0]


def calls_and_turns(
    messages: Sequence[ModelMessage], recorder: RunRecorder, max_chars: int | None = None
) -> tuple[list[ToolCall], list[ModelTurn]]:
    """The trace's tool calls and the model turns that made them, in order.

    Args:
        messages: The run's messages.
        recorder: What the toolsets recorded (full results, timings, what the model saw).
        max_chars: Longest result kept (None: whole results).
    """
    returns: dict[str, tuple[str, bool]] = {}
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolReturnPart):
                returns[part.tool_call_id] = (result_text(part.content), part.outcome != "success")
            elif isinstance(part, RetryPromptPart) and part.tool_name:  # pragma: no cover
                returns[part.tool_call_id] = (str(part.content), True)
    calls: list[ToolCall] = []
    turns: list[ModelTurn] = []
    seen_ids: set[str] = set()
    for message in messages:
        if not isinstance(message, ModelResponse):
            continue
        turn = ModelTurn(
            text="\n\n".join(p.content for p in message.parts if isinstance(p, TextPart)),
            final=any(
                isinstance(p, ToolCallPart) and p.tool_name == FINAL_ANSWER_TOOL
                for p in message.parts
            ),
        )
        turns.append(turn)
        for part in message.parts:
            if not isinstance(part, ToolCallPart) or part.tool_name == FINAL_ANSWER_TOOL:
                continue
            record = recorder.tools.get(part.tool_call_id)
            if record is not None:
                text, error = record.text, record.error
            else:
                text, error = returns.get(part.tool_call_id, (_NO_RESULT, True))
            call_id = part.tool_call_id
            while call_id in seen_ids:
                call_id += "'"
            seen_ids.add(call_id)
            turn.tool_call_ids.append(call_id)
            cut = max_chars is not None and len(text) > max_chars
            calls.append(
                ToolCall(
                    id=call_id,
                    name=part.tool_name,
                    arguments=_arguments(part),
                    result=text[:max_chars] if cut else text,
                    error=error,
                    duration_ms=record.duration_ms if record else None,
                    result_chars=len(text) if cut else None,
                    shown_chars=record.shown_chars if record else None,
                    http_requests=record.http_requests if record else None,
                    wire_result=record.wire_text if record else None,
                )
            )
    return calls, turns


def _arguments(part: ToolCallPart) -> dict[str, Any]:
    try:
        return part.args_as_dict()
    except (ValueError, TypeError, AssertionError):
        # Malformed JSON from the model: keep it visible instead of pretending it was empty.
        return {"_unparsed_arguments": str(part.args)}


def reasoning_of(messages: Sequence[ModelMessage]) -> list[str]:
    """The reasoning (thinking) parts the model returned, in order."""
    return [
        part.content
        for message in messages
        if isinstance(message, ModelResponse)
        for part in message.parts
        if isinstance(part, ThinkingPart) and part.content
    ]


def _scrub(trace: Trace, secrets: Sequence[str]) -> Trace:
    """Remove any secret value that found its way into a trace (belt and braces)."""
    if not secrets:
        return trace
    text = trace.model_dump_json()
    if not any(secret in text for secret in secrets):
        return trace
    data = json.loads(text)

    def clean(value: Any) -> Any:
        if isinstance(value, str):
            for secret in secrets:
                value = value.replace(secret, "***")
            return value
        if isinstance(value, list):
            return [clean(item) for item in value]
        if isinstance(value, dict):
            return {key: clean(item) for key, item in value.items()}
        return value

    return Trace.model_validate(clean(data))
