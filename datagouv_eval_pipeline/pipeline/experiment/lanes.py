"""Cells run side by side: one set of lanes per model provider, sized by its slots.

A provider's *slots* (``models.yml``, ``slots``) are the task runs of that provider in flight
at once. They are cut into *lanes*: each lane runs one cell at a time with up to ``per_cell``
task runs in flight, so a provider never has more than ``lanes × per_cell ≤ slots`` runs going,
and the lanes of different providers run at the same time.

Offline baselines are CPU-bound Python in one process, so an offline provider's extra lanes run
in worker processes (one core each; the first lane stays in this process, which is also where
cells with a real MCP build must run, since the builds are started here). A remote provider's
lanes are threads: its runs wait on the network. The workers come from a ``forkserver`` that
imports the agent code once, started once the lanes have worked alone for
``WORKER_BOOT_DELAY_S`` with cells still queued, so the first lane works while the workers boot
and a short stage boots none.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import CancelledError, Future, ProcessPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from datagouv_eval_pipeline.core.benchmark import BenchmarkConfig, Cell, ProviderKind
from datagouv_eval_pipeline.pipeline.agents import CancelToken, RunCancelled

if TYPE_CHECKING:
    # Imported where the lanes start: the code location imports this module for the pools.
    from datagouv_eval_pipeline.pipeline.agents import RunSettings
    from datagouv_eval_pipeline.pipeline.experiment.stages import AgentStageResult

REMOTE_DEFAULT_SLOTS = 4
"""Slots of a remote provider whose ``models.yml`` entry sets none."""

OFFLINE_SLOTS_PER_CORE = 8
"""Slots per CPU core of an offline provider whose entry sets none (one lane of 8 per core)."""

POOL_PREFIX = "agent_runs."
"""A provider's slots are the Dagster pool ``agent_runs.<provider>`` (``defs/provider_pools``)."""

WORKER_BOOT_DELAY_S = 2.0
"""How long the lanes in this process work alone before a worker process boots. Booting costs
seconds of CPU (the forkserver imports the agents' code: about 3.4 s on two cores), wasted on a
stage those lanes finish sooner, as a resumed stage or a one-task run does."""

# The workers' code: the lanes, and the agents' code they run (lanes imports it lazily).
_PRELOAD = [
    "datagouv_eval_pipeline.pipeline.experiment.lanes",
    "datagouv_eval_pipeline.pipeline.experiment.stages",
    "datagouv_eval_pipeline.pipeline.agents.runner",
]


@dataclass(frozen=True)
class LanePlan:
    """How one provider's cells are spread.

    Attributes:
        provider: The provider's name.
        slots: Its task runs in flight at most.
        lanes: Cells processed at once.
        per_cell: Task runs in flight within one cell.
        processes: Whether lanes after the first run in worker processes (offline providers).
    """

    provider: str
    slots: int
    lanes: int
    per_cell: int
    processes: bool


def provider_slots(config: BenchmarkConfig, *, cpu_count: int | None = None) -> dict[str, int]:
    """Slots of every provider of ``config``: its ``concurrency``, or a default by kind.

    An offline provider without ``concurrency`` is sized to the machine
    (``OFFLINE_SLOTS_PER_CORE`` per core); a ``llama_cpp`` one gets 1, its server's one slot;
    a remote one gets ``REMOTE_DEFAULT_SLOTS``.
    """
    cores = cpu_count if cpu_count is not None else (os.cpu_count() or 1)
    slots: dict[str, int] = {}
    for provider in config.models.providers:
        if provider.concurrency is not None:
            slots[provider.name] = provider.concurrency
        elif provider.kind == ProviderKind.OFFLINE:
            slots[provider.name] = OFFLINE_SLOTS_PER_CORE * cores
        elif provider.kind == ProviderKind.LLAMA_CPP:
            slots[provider.name] = 1  # the server answers one request at a time by default
        else:
            slots[provider.name] = REMOTE_DEFAULT_SLOTS
    return slots


def pool_name(provider: str) -> str:
    """The pool of a provider's task runs."""
    return f"{POOL_PREFIX}{provider}"


def provider_pool_limits(config: BenchmarkConfig | None = None) -> dict[str, int]:
    """Pool name → slots, for every provider of ``models.yml``."""
    from datagouv_eval_pipeline.core.benchmark import load_benchmark_config

    slots = provider_slots(config if config is not None else load_benchmark_config())
    return {pool_name(name): count for name, count in slots.items()}


def plan_lanes(
    provider: str,
    slots: int,
    *,
    max_per_cell: int,
    offline: bool,
    max_workers: int | None = None,
) -> LanePlan:
    """Cut ``slots`` into lanes of at most ``max_per_cell`` task runs each.

    Args:
        provider: The provider's name.
        slots: The slots available to this run (at least 1).
        max_per_cell: The cap on task runs in flight within one cell.
        offline: Whether the provider runs offline policies (extra lanes are worker processes).
        max_workers: For an offline provider, at most this many worker processes (None: as
            the slots allow).
    """
    if slots < 1 or max_per_cell < 1:
        raise ValueError(f"slots and max_per_cell must be >= 1, got {slots}, {max_per_cell}")
    per_cell = min(slots, max_per_cell)
    lanes = slots // per_cell
    if offline and max_workers is not None:
        lanes = min(lanes, 1 + max_workers)
    return LanePlan(provider, slots, lanes, per_cell, offline)


CellWork = Callable[[Cell, "RunSettings", CancelToken | None], "AgentStageResult"]
"""Runs one cell's agents in this process (``stages.run_agents`` with the stage's arguments)."""


@dataclass(frozen=True)
class WorkerCall:
    """Everything a worker process needs to run one cell (pickled to it)."""

    cell: Cell
    settings: RunSettings
    arguments: Mapping[str, Any]


_worker_cancel: CancelToken | None = None


def _worker_init(stop: Any, parent: int, environ: dict[str, str]) -> None:
    """Set up a worker: Ctrl-C is the parent's to handle; ``stop`` cancels the cell in flight.

    The worker takes ``environ``, the run's environment now: a process has one forkserver,
    started with the environment of the first run that needed it, and a later run's proxy,
    CA bundle or keys would otherwise not reach its workers.

    The worker also exits when the run's process is gone (``kill -9``): nothing else would
    stop it, its results have nowhere to go, and the next run must not find it still working.
    """
    global _worker_cancel
    os.environ.clear()
    os.environ.update(environ)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    token = CancelToken()
    _worker_cancel = token

    def watch() -> None:
        stop.wait()
        token.cancel("interrupted")

    def orphaned() -> None:
        while True:
            time.sleep(1.0)
            try:
                os.kill(parent, 0)
            except ProcessLookupError:
                os._exit(1)
            except PermissionError:  # the pid now belongs to someone else's process
                os._exit(1)

    threading.Thread(target=watch, name="lane-cancel", daemon=True).start()
    threading.Thread(target=orphaned, name="lane-orphan", daemon=True).start()


def _worker_ready() -> bool:
    return True


def _start_worker(pool: ProcessPoolExecutor, ready: Future[bool]) -> None:
    """Start a worker of ``pool``; ``ready`` settles as the worker's first answer does."""
    try:
        answer = pool.submit(_worker_ready)
    except BaseException as error:  # the pool was shut down meanwhile, or cannot start one
        ready.set_exception(error)
        return

    def settle(done: Future[bool]) -> None:
        if done.cancelled():
            ready.cancel()
        elif (error := done.exception()) is not None:
            ready.set_exception(error)
        else:
            ready.set_result(done.result())

    answer.add_done_callback(settle)


def _shutdown_when_up(pool: ProcessPoolExecutor, readies: Sequence[Future[bool]]) -> None:
    """Shut ``pool`` down once its starting workers are up.

    Shut down earlier, a worker being forked finds its queue's semaphore gone and the
    forkserver prints a traceback into the run's output.
    """
    for ready in readies:
        _settled(ready, 600)
    pool.shutdown(wait=False, cancel_futures=True)


def _settled(future: Future[Any], seconds: float) -> bool:
    try:
        future.exception(timeout=seconds)
    except TimeoutError:
        return False
    except CancelledError:
        return True
    return True


def _worker_run(call: WorkerCall) -> AgentStageResult:
    from datagouv_eval_pipeline.pipeline.experiment.stages import run_agents

    try:
        return run_agents(
            call.cell, settings=call.settings, cancel=_worker_cancel, **dict(call.arguments)
        )
    except RunCancelled as stop:
        # Exceptions cross the process boundary by their args: keep the count.
        raise RunCancelled(stop.reason, cancelled_runs=stop.cancelled_runs) from None


@dataclass
class _Job:
    cell: Cell
    future: Future[AgentStageResult]
    local_only: bool


class Lanes:
    """Runs the cells of a stage on their providers' lanes; results are futures by cell key.

    Use as a context manager: leaving it waits for the lanes and stops the workers.
    """

    def __init__(
        self,
        plans: Mapping[str, LanePlan],
        local_work: CellWork,
        worker_arguments: Callable[[Cell], Mapping[str, Any]],
        *,
        cancel: CancelToken | None = None,
    ) -> None:
        """Prepare the lanes (nothing starts before :meth:`start`).

        Args:
            plans: Lane plan by provider name.
            local_work: Runs a cell in this process.
            worker_arguments: The picklable keyword arguments of ``run_agents`` for a cell run
                in a worker (tasks, twin URLs, snapshot, cache, previous document, ...).
            cancel: Set by Ctrl-C or SIGTERM: no further cell starts, the cells in flight stop.
        """
        self._plans = plans
        self._local_work = local_work
        self._worker_arguments = worker_arguments
        self._cancel = cancel
        self._queues: dict[str, queue.SimpleQueue[_Job | None]] = {}
        self._local: dict[str, queue.SimpleQueue[_Job | None]] = {}
        self._threads: list[threading.Thread] = []
        self._pool: ProcessPoolExecutor | None = None
        self._stop: Any = None
        self._starting: set[int | None] = set()
        self._readies: list[Future[bool]] = []
        self.futures: dict[str, Future[AgentStageResult]] = {}

    def start(self, cells: Sequence[Cell], *, needs_parent: Callable[[Cell], bool]) -> None:
        """Queue ``cells`` on their providers' lanes and start the lanes.

        Args:
            cells: The cells, in the order they should start within a provider.
            needs_parent: Whether a cell must run in this process (a real MCP build).
        """
        by_provider: dict[str, list[_Job]] = {}
        for cell in cells:
            future: Future[AgentStageResult] = Future()
            self.futures[cell.key] = future
            job = _Job(cell, future, needs_parent(cell))
            by_provider.setdefault(cell.model.provider, []).append(job)
        workers = sum(
            plan.lanes - 1
            for name, plan in self._plans.items()
            if plan.processes and name in by_provider
        )
        if workers > 0:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(_PRELOAD)
            self._stop = context.Event()
            self._pool = ProcessPoolExecutor(
                max_workers=workers,
                mp_context=context,
                initializer=_worker_init,
                initargs=(self._stop, os.getpid(), dict(os.environ)),
            )
        for provider, jobs in by_provider.items():
            plan = self._plans[provider]
            shared: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
            local: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
            for job in jobs:
                (local if job.local_only and plan.processes else shared).put(job)
            for lane in range(plan.lanes):
                remote = plan.processes and lane > 0
                thread = threading.Thread(
                    target=self._lane,
                    args=(plan, shared, None if remote else local, remote),
                    name=f"lane-{provider}-{lane}",
                    daemon=True,
                )
                self._threads.append(thread)
            self._queues[provider] = shared
            self._local[provider] = local
        if self._cancel is not None and self._stop is not None:
            threading.Thread(target=self._forward_cancel, name="lane-stop", daemon=True).start()
        for thread in self._threads:
            thread.start()

    def _forward_cancel(self) -> None:
        assert self._cancel is not None
        while not self._cancel.cancelled and self._pool is not None:
            threading.Event().wait(0.1)
        if self._stop is not None:
            self._stop.set()

    def _still_busy_after(self, seconds: float, shared: queue.SimpleQueue[_Job | None]) -> bool:
        """Whether cells are still queued after ``seconds`` (False at once if none or stopped)."""
        deadline = time.monotonic() + seconds
        while True:
            if shared.empty() or (self._cancel is not None and self._cancel.cancelled):
                return False
            if time.monotonic() >= deadline:
                return True
            time.sleep(0.1)

    def _next(
        self,
        shared: queue.SimpleQueue[_Job | None],
        local: queue.SimpleQueue[_Job | None] | None,
    ) -> _Job | None:
        for source in (local, shared):
            if source is None:
                continue
            with contextlib.suppress(queue.Empty):
                return source.get_nowait()
        return None

    def _lane(
        self,
        plan: LanePlan,
        shared: queue.SimpleQueue[_Job | None],
        local: queue.SimpleQueue[_Job | None] | None,
        remote: bool,
    ) -> None:
        from datagouv_eval_pipeline.pipeline.agents import RunSettings

        settings = RunSettings(max_concurrency=plan.per_cell)
        if remote:
            # Take no cell before a worker is up (its imports take seconds): until then the
            # lanes in this process take them, so a short stage never waits for a worker.
            # Starting it blocks until the forkserver has imported that code, so it starts
            # from another thread: a lane whose queue empties meanwhile (a resumed or short
            # stage) returns at once instead of holding the stage until a worker is up.
            assert self._pool is not None
            self._starting.add(threading.get_ident())
            try:
                if not self._still_busy_after(WORKER_BOOT_DELAY_S, shared):
                    return
                ready: Future[bool] = Future()
                boot = threading.Thread(
                    target=_start_worker, args=(self._pool, ready), name="lane-boot", daemon=True
                )
                self._readies.append(ready)
                boot.start()
                while not _settled(ready, 0.2):
                    # A stopped run does not wait for a worker: the lane in this process
                    # drains the queue (each cell then fails as cancelled).
                    if shared.empty() or (self._cancel is not None and self._cancel.cancelled):
                        return
            finally:
                self._starting.discard(threading.get_ident())
            if ready.cancelled() or ready.exception() is not None:
                return  # a worker that cannot start leaves its cells to the other lanes
        while (job := self._next(shared, local)) is not None:
            if self._cancel is not None and self._cancel.cancelled:
                job.future.set_exception(RunCancelled(self._cancel.reason))
                continue
            try:
                if remote:
                    assert self._pool is not None
                    call = WorkerCall(job.cell, settings, self._worker_arguments(job.cell))
                    result = self._pool.submit(_worker_run, call).result()
                else:
                    result = self._local_work(job.cell, settings, self._cancel)
            except BaseException as error:  # delivered to whoever waits for the cell
                job.future.set_exception(error)
            else:
                job.future.set_result(result)

    def close(self) -> None:
        """Wait for every lane and stop the workers."""
        for thread in self._threads:
            while thread.is_alive():
                thread.join(0.1)
                # Starting the worker processes can take tens of seconds on a busy machine
                # (the forkserver imports the agents' code); a stopped run does not wait for
                # a lane that holds no cell yet (it is a daemon thread, it returns by itself).
                cancelled = self._cancel is not None and self._cancel.cancelled
                if cancelled and thread.ident in self._starting:
                    break
        pool, self._pool = self._pool, None
        if pool is None:
            return
        # Workers still starting (a short stage) are not waited for.
        # Not a daemon: a process that ends meanwhile waits for them at exit, not mid-run.
        booting = [ready for ready in self._readies if not ready.done()]
        if booting and not (self._cancel is not None and self._cancel.cancelled):
            threading.Thread(
                target=_shutdown_when_up,
                args=(pool, booting),
                name="lane-pool-shutdown",
                daemon=False,
            ).start()
            return
        if self._cancel is not None and self._cancel.cancelled:
            # A lane starting the workers holds the pool's lock until they are spawned, which
            # even shutdown(wait=False) waits for: a stopped run leaves that to a thread.
            threading.Thread(
                target=pool.shutdown,
                kwargs={"wait": False, "cancel_futures": True},
                name="lane-pool-shutdown",
                daemon=True,
            ).start()
            return
        pool.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> Lanes:
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._cancel is not None and self._stop is not None and self._cancel.cancelled:
            self._stop.set()
        self.close()


@contextlib.contextmanager
def running_lanes(
    cells: Sequence[Cell],
    plans: Mapping[str, LanePlan],
    local_work: CellWork,
    worker_arguments: Callable[[Cell], Mapping[str, Any]],
    *,
    needs_parent: Callable[[Cell], bool],
    cancel: CancelToken | None = None,
) -> Iterator[dict[str, Future[AgentStageResult]]]:
    """Start ``cells`` on their lanes; yields the futures by cell key, waits for all on exit."""
    with Lanes(plans, local_work, worker_arguments, cancel=cancel) as lanes:
        lanes.start(cells, needs_parent=needs_parent)
        yield lanes.futures
