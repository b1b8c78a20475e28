"""The stages of one cell, as plain functions over run store documents.

``run_agents`` → ``map_actions`` → ``judge_cell`` → ``load_warehouse``. Each takes and returns
the typed documents of :mod:`~datagouv_eval_pipeline.pipeline.experiment.documents` (what the run
store
holds, validated), so the Dagster assets only move documents between the store and these
functions, and the plain-loop benchmark calls exactly the same code.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from datagouv_eval_pipeline.core.benchmark import Cell
from datagouv_eval_pipeline.core.judges import (
    CallClassification,
    Judge,
    JudgementRecord,
    Verdict,
    classify_unmapped,
    judge_spend,
    judge_trace,
)
from datagouv_eval_pipeline.core.metrics import (
    CatalogLookup,
    resolve_mapping_slugs,
    score_trace,
    with_catalog_slugs,
    with_references,
)
from datagouv_eval_pipeline.core.semantic import (
    ActionRegistry,
    MappingStatus,
    TraceMapping,
    load_registry,
    map_trace,
)
from datagouv_eval_pipeline.core.tasks import TIERS, Reference, TaskSpec, references_by_name
from datagouv_eval_pipeline.core.traces import SCORED_STATUSES, Trace
from datagouv_eval_pipeline.pipeline.agents import (
    CancelToken,
    RunCancelled,
    current_token,
    until_cancelled,
)
from datagouv_eval_pipeline.pipeline.experiment.cache import AgentRunCache, run_input_hash
from datagouv_eval_pipeline.pipeline.experiment.documents import (
    ActionMappingsDocument,
    AgentRunsDocument,
    JudgeScoresDocument,
    McpBuildRecord,
    RunMapping,
    RunResult,
    StoredTraceMapping,
)
from datagouv_eval_pipeline.pipeline.experiment.fingerprints import (
    cell_code_fingerprint,
    toolset_version,
)
from datagouv_eval_pipeline.pipeline.warehouse import CellLoad, RunLoad
from datagouv_eval_pipeline.world.catalogue import TwinUrls

# The agents' code (pydantic-ai, openai, the MCP clients) is imported by run_agents, when a cell
# runs: the code location imports this module for the stage names and documents.
if TYPE_CHECKING:
    from datagouv_eval_pipeline.pipeline.agents import CellRun
    from datagouv_eval_pipeline.world.mcp_builds import BuildServers

AGENT_RUNS = "agent_runs"
ACTION_MAPPINGS = "action_mappings"
JUDGE_SCORES = "judge_scores"


class StageInputError(ValueError):
    """A run store document does not match what the next stage expects."""


# ------------------------------------------------------------------------------- agent runs


@dataclass
class AgentStageResult:
    """One cell's agent runs.

    Attributes:
        document: The ``agent_runs`` document (cell record, traces, input hashes, ...).
        executed: Task runs actually executed (a model was asked).
        reused: Task runs taken from the cache or the previous document.
        statuses: Traces per status.
        problem: Why the cell has no result, when none of its runs finished (the most
            common reason: an unset API key variable, no sandbox, ...); None otherwise.
        missing_key: Why the cell's model cannot be asked now (its API key variable is unset),
            even when older results of the cell come from the cache; None otherwise.
        missing_sandbox: Why the code sandbox cannot run on this machine, when the cell has no
            result and runs of it were skipped for that; None otherwise.
    """

    document: AgentRunsDocument
    executed: int
    reused: int
    statuses: Counter[str] = field(default_factory=Counter)
    problem: str | None = None
    missing_key: str | None = None
    missing_sandbox: str | None = None


def execute_cell(
    cell: Cell, tasks: Sequence[TaskSpec], *, twin_urls: TwinUrls | None, **options: Any
) -> CellRun:
    """The agent runner's :func:`~datagouv_eval_pipeline.pipeline.agents.runner.execute_cell`.

    Imported on the first call, and the one name :func:`run_agents` calls (tests wrap it here).
    """
    from datagouv_eval_pipeline.pipeline.agents import execute_cell as run_cell

    return run_cell(cell, tasks, twin_urls=twin_urls, **options)


def run_agents(
    cell: Cell,
    tasks: Sequence[TaskSpec],
    *,
    twin_urls: TwinUrls | None,
    snapshot_id: str | None,
    repeats: int = 1,
    cache: AgentRunCache | None = None,
    reuse: bool = True,
    previous: AgentRunsDocument | None = None,
    keep_tasks: Sequence[str] = (),
    builds: BuildServers | None = None,
    cancel: CancelToken | None = None,
    **options: Any,
) -> AgentStageResult:
    """Run (or reuse) every task of a cell.

    A (task, repeat) whose input hash is in ``cache`` is reused; the missing pairs run through
    :func:`~datagouv_eval_pipeline.pipeline.agents.runner.execute_cell` together. Traces of the
    previous
    document for ``keep_tasks`` (tasks outside this run's selection) are carried over unchanged,
    so a run over a task subset never drops the other tasks' results.

    Args:
        cell: The cell.
        tasks: The tasks to run.
        twin_urls: The twin's URLs; None for the live catalog (never cached).
        snapshot_id: The snapshot the twin serves (None when live).
        repeats: Runs per task.
        cache: The agent-run cache (None: always run).
        reuse: Take hits from ``cache`` (False: run everything again, still storing the traces).
        previous: The cell's previous ``agent_runs`` document.
        keep_tasks: Task ids whose previous traces are kept.
        builds: Starts the cell's MCP server when it is a real build (and stops it with the
            run); needed for such cells only.
        cancel: Set by Ctrl-C or SIGTERM: the runs in flight end as ``cancelled``, the finished
            ones are already in the cache, and no document is returned.
        **options: Passed to ``execute_cell`` (settings, rate limiters, sandbox, ...).

    Returns:
        The new document and what was executed.

    Raises:
        StageInputError: The cell's MCP server is a build and no ``builds`` is given.
        BuildError: The build cannot be installed or started.
        RunCancelled: ``cancel`` was set during the cell.
    """
    from datagouv_eval_pipeline.pipeline.agents import missing_api_key

    endpoint = None
    if cell.mcp_build is not None and "mcp" in cell.capabilities:
        if builds is None:
            raise StageInputError(f"cell {cell.key}: its MCP server is a build; pass `builds`")
        endpoint = builds.start(cell.mcp_build)
        options["mcp_url"] = endpoint.url
    toolset = endpoint.fingerprint if endpoint is not None else ""
    world = toolset_version(cell, toolset)

    def stamped(trace: Trace) -> Trace:
        # The toolsets' version is part of the cache key: a hit met this world too.
        if trace.provenance.toolset_version == world:
            return trace
        provenance = trace.provenance.model_copy(update={"toolset_version": world})
        return trace.model_copy(update={"provenance": provenance})

    use_cache = cache is not None and snapshot_id is not None
    hashes: dict[tuple[str, int], str] = {}
    found: dict[tuple[str, int], Trace] = {}
    for task in tasks:
        for repeat in range(repeats):
            key = (task.task_id, repeat)
            if snapshot_id is not None:
                hashes[key] = run_input_hash(
                    cell, task, repeat, snapshot_id=snapshot_id, toolset=toolset
                )
            if use_cache and reuse:
                assert cache is not None
                hit = cache.get(hashes[key])
                if hit is not None:
                    found[key] = stamped(hit)
    # Only the missing (task, repeat) pairs run: adding repeats reuses the stored repeat 0.
    missing = {(t.task_id, r) for t in tasks for r in range(repeats) if (t.task_id, r) not in found}
    to_run = [t for t in tasks if any((t.task_id, r) in missing for r in range(repeats))]
    tool_lists: dict[str, Any] = {}
    executed = 0
    sandbox_problem: str | None = None
    if to_run:

        def keep(trace: Trace) -> None:
            # Cached as soon as it ends: an interrupted cell resumes without redoing it.
            if use_cache:
                assert cache is not None
                cache.put(hashes[(trace.task_id, trace.repeat)], stamped(trace))

        run = execute_cell(
            cell,
            to_run,
            twin_urls=twin_urls,
            repeats=repeats,
            snapshot_id=snapshot_id,
            only=missing,
            cancel=cancel,
            on_trace=keep,
            **options,
        )
        tool_lists = run.tool_lists
        sandbox_problem = run.sandbox_problem
        for trace in run.traces:
            found[(trace.task_id, trace.repeat)] = stamped(trace)
            if trace.status not in ("skipped", "cancelled"):
                executed += 1
        cancelled = sum(1 for trace in run.traces if trace.status == "cancelled")
        if cancel is not None and cancel.cancelled:
            raise RunCancelled(cancel.reason, cancelled_runs=cancelled)
    traces = [found[(t.task_id, r)] for t in tasks for r in range(repeats)]
    kept = _kept_traces(previous, keep_tasks, {t.task_id for t in tasks})
    all_traces = sorted(kept + traces, key=lambda trace: (trace.task_id, trace.repeat))
    statuses = Counter(str(trace.status) for trace in all_traces)
    document = AgentRunsDocument(
        cell=cell.to_record(),
        snapshot_id=snapshot_id,
        run_code=cell_code_fingerprint(cell),
        tool_lists=tool_lists or (dict(previous.tool_lists) if previous is not None else {}),
        mcp_build=None
        if endpoint is None
        else McpBuildRecord(
            spec=endpoint.spec, code_digest=endpoint.code_digest, revision=endpoint.revision
        ),
        input_hashes={f"{k[0]}#{k[1]}": v for k, v in sorted(hashes.items())},
        traces=all_traces,
    )
    reused = len(traces) - len(missing)
    problem = cell_problem(all_traces)
    return AgentStageResult(
        document,
        executed,
        reused,
        statuses,
        problem,
        # Named every time, not only when no older result hides it: the runs not in the cache
        # were not done, and the results shown are older ones.
        missing_api_key(cell.model, options.get("environ")),
        # Only when the cell has no result: the machine, not the cell, has to change.
        sandbox_problem if problem is not None else None,
    )


FINISHED_STATUSES = frozenset({"ok", "budget_exceeded"})
"""Runs the agent finished, with an answer or by spending its budget."""


def cell_problem(traces: Sequence[Trace]) -> str | None:
    """Why a cell produced nothing: its most common reason when no run finished."""
    if not traces or any(str(t.status) in FINISHED_STATUSES for t in traces):
        return None
    reasons = Counter(str(t.status_reason or t.status) for t in traces)
    return reasons.most_common(1)[0][0]


def _kept_traces(
    previous: AgentRunsDocument | None, keep: Sequence[str], running: set[str]
) -> list[Trace]:
    if previous is None or not keep:
        return []
    wanted = set(keep) - running
    return [trace for trace in previous.traces if trace.task_id in wanted]


# ------------------------------------------------------------------------------ mappings


def map_actions(
    agent_document: AgentRunsDocument,
    registry: ActionRegistry | None = None,
    *,
    classifier: Judge | None = None,
) -> ActionMappingsDocument:
    """The ``action_mappings`` document: one mapping per trace, in trace order.

    The rules map every call they can. With a ``classifier`` (the configured LLM or hybrid
    judge), each call they left undecided in a scored run is classified by it: each mapping
    then lists its ``classifications`` (the actions found, the model, and the verdict with its
    judge id and prompt hash; an unscored verdict with its reason when the judge could not
    decide) and the ``judge_spend`` they cost, apart from the agent's usage. Answers come from
    the judge's cache when it has them, so re-mapping unchanged traces asks nothing.
    """
    registry = registry or load_registry()
    traces = agent_document.traces
    mapped = [map_trace(trace, registry) for trace in traces]
    unmapped = sum(1 for m in mapped for call in m.calls if call.status is MappingStatus.UNMAPPED)
    results = [
        RunMapping(task_id=trace.task_id, repeat=trace.repeat, mapping=StoredTraceMapping.of(m))
        for trace, m in zip(traces, mapped, strict=True)
    ]
    common = {
        "cell": agent_document.cell,
        "agent_runs_digest": agent_document.digest(),
        "unmapped_calls": unmapped,
    }
    if classifier is None:
        return ActionMappingsDocument(**common, results=results, classifier=None)
    # Ctrl-C or SIGTERM during the run stops the questions in flight (answers are cached).
    found = asyncio.run(
        until_cancelled(_classify_all(classifier, traces, mapped, registry), current_token())
    )
    verdicts: list[Verdict] = []
    classified = []
    for result, classifications in zip(results, found, strict=True):
        mapping = result.mapping.model_copy(
            update={
                "classifications": list(classifications),
                "judge_spend": judge_spend(c.verdict for c in classifications),
            }
        )
        classified.append(result.model_copy(update={"mapping": mapping}))
        verdicts.extend(c.verdict for c in classifications)
    return ActionMappingsDocument(
        **common,
        results=classified,
        classifier=classifier.judge_id,
        classified_calls=sum(1 for v in verdicts if v.status == "ok"),
        judge_spend=judge_spend(verdicts),
    )


async def _classify_all(
    judge: Judge,
    traces: Sequence[Trace],
    mappings: Sequence[TraceMapping],
    registry: ActionRegistry,
) -> list[tuple[CallClassification, ...]]:
    async def one(trace: Trace, mapping: TraceMapping) -> tuple[CallClassification, ...]:
        if trace.status not in SCORED_STATUSES:
            return ()  # never judged: nothing to classify for
        return await classify_unmapped(judge, trace, mapping, registry)

    try:
        return list(
            await asyncio.gather(*(one(t, m) for t, m in zip(traces, mappings, strict=True)))
        )
    finally:
        close = getattr(judge, "aclose", None)  # its HTTP client belongs to this loop
        if close is not None:
            await close()


def classifications_of(
    mapping_document: ActionMappingsDocument,
) -> list[tuple[CallClassification, ...]] | None:
    """The classifications the mapping stage made, per trace; None when it made none."""
    if not mapping_document.classifier:
        return None
    return [tuple(result.mapping.classifications or ()) for result in mapping_document.results]


# ------------------------------------------------------------------------------- judging


def judge_cell(
    agent_document: AgentRunsDocument,
    mapping_document: ActionMappingsDocument,
    tasks: Mapping[str, TaskSpec],
    judge: Judge,
    *,
    references: Sequence[Reference] = (),
    catalog: CatalogLookup | None = None,
) -> JudgeScoresDocument:
    """The ``judge_scores`` document: judgement and scores per trace (None when not scored).

    Only ``ok`` runs are judged; skipped, failed and budget-exceeded runs keep NULL scores and
    their status reason, so they never count as zeros. The judge and the scores see the task as
    evaluated in this run: expected values replaced by their ``references`` (recomputed from the
    catalog the run used), expected sources with their slug from ``catalog``, and every slug the
    agent gave for an id argument resolved to that id.

    Raises:
        StageInputError: The two documents disagree on the runs, or a task is unknown.
    """
    traces = agent_document.traces
    runs = agent_document.runs()
    digest = agent_document.digest()
    if mapping_document.agent_runs_digest != digest:
        raise StageInputError(
            "the action_mappings document was computed from another agent_runs document "
            "(rematerialize action_mappings for this cell)"
        )
    if mapping_document.runs() != runs:
        raise StageInputError(
            "the action_mappings document does not match the agent_runs document "
            "(rematerialize action_mappings for this cell)"
        )
    missing = sorted({t.task_id for t in traces} - set(tasks))
    if missing:
        raise StageInputError(f"no task spec for {', '.join(missing)}")
    mappings = [
        resolve_mapping_slugs(result.mapping.trace_mapping(), catalog)
        for result in mapping_document.results
    ]
    # Undecided calls the mapping stage classified are not asked about again.
    classified = classifications_of(mapping_document)
    evaluated = {
        task_id: with_references(
            with_catalog_slugs(task, catalog), references_by_name(references, task_id)
        )
        for task_id, task in tasks.items()
    }
    judgements = asyncio.run(
        until_cancelled(_judge_all(judge, evaluated, traces, mappings, classified), current_token())
    )
    results: list[RunResult] = []
    for trace, mapping, judgement in zip(traces, mappings, judgements, strict=True):
        score = None
        if judgement is not None:
            score = score_trace(
                tasks[trace.task_id],
                trace,
                mapping=mapping,
                accuracy={tier: judgement.accuracy(tier).mean.value for tier in TIERS},
                catalog=catalog,
                references=references,
            )
        results.append(
            RunResult(task_id=trace.task_id, repeat=trace.repeat, judgement=judgement, score=score)
        )
    used = {t.task_id for t in traces}
    return JudgeScoresDocument(
        cell=agent_document.cell,
        agent_runs_digest=digest,
        judge_id=getattr(judge, "judge_id", type(judge).__name__),
        references=[ref for ref in references if ref.task_id in used],
        results=results,
    )


async def _judge_all(
    judge: Judge,
    tasks: Mapping[str, TaskSpec],
    traces: Sequence[Trace],
    mappings: Sequence[TraceMapping],
    classified: Sequence[tuple[CallClassification, ...]] | None = None,
) -> list[JudgementRecord | None]:
    async def one(
        trace: Trace, mapping: TraceMapping, given: tuple[CallClassification, ...] | None
    ) -> JudgementRecord | None:
        if trace.status not in SCORED_STATUSES:
            return None
        task = tasks[trace.task_id]
        return await judge_trace(judge, task, trace, mapping=mapping, classifications=given)

    given: list[tuple[CallClassification, ...] | None] = (
        list(classified) if classified is not None else [None for _ in traces]
    )
    try:
        return list(
            await asyncio.gather(
                *(one(t, m, c) for t, m, c in zip(traces, mappings, given, strict=True))
            )
        )
    finally:
        # An LLM judge's HTTP client belongs to this loop: close it here (it reopens on use).
        close = getattr(judge, "aclose", None)
        if close is not None:
            await close()


# ----------------------------------------------------------------------------- warehouse


@dataclass(frozen=True)
class CellDocuments:
    """What the warehouse loads for one cell, and the later-stage documents it left out.

    Attributes:
        load: The cell's rows to load.
        stale: Stage name → why its document was not loaded (computed from another
            ``agent_runs`` document, or for other runs): those columns load as NULL.
    """

    load: CellLoad
    stale: dict[str, str]


def cell_load(
    agent_document: AgentRunsDocument,
    mapping_document: ActionMappingsDocument | None,
    judge_document: JudgeScoresDocument | None,
) -> CellLoad:
    """What the warehouse stores for one cell (see :func:`cell_documents`)."""
    return cell_documents(agent_document, mapping_document, judge_document).load


def cell_documents(
    agent_document: AgentRunsDocument,
    mapping_document: ActionMappingsDocument | None,
    judge_document: JudgeScoresDocument | None,
) -> CellDocuments:
    """What the warehouse stores for one cell; missing or stale later stages load as NULL.

    A later document is used only when it records the digest of this very ``agent_runs``
    document: after a crash between two stages, an old judgement is never paired with a new
    answer.
    """
    digest = agent_document.digest()
    runs = agent_document.runs()
    stale: dict[str, str] = {}
    loads = [RunLoad(trace) for trace in agent_document.traces]
    if _current(mapping_document, ACTION_MAPPINGS, digest, runs, stale):
        assert mapping_document is not None
        loads = [
            dataclasses.replace(load, mapping=result.mapping.trace_mapping())
            for load, result in zip(loads, mapping_document.results, strict=True)
        ]
    if _current(judge_document, JUDGE_SCORES, digest, runs, stale):
        assert judge_document is not None
        loads = [
            dataclasses.replace(load, score=result.score, judgement=result.judgement)
            for load, result in zip(loads, judge_document.results, strict=True)
        ]
    return CellDocuments(CellLoad(agent_document.cell, loads), stale)


def _current(
    document: ActionMappingsDocument | JudgeScoresDocument | None,
    stage: str,
    digest: str,
    runs: list[tuple[str, int]],
    stale: dict[str, str],
) -> bool:
    if document is None:
        return False
    if document.agent_runs_digest != digest:
        stale[stage] = "computed from another agent_runs document"
        return False
    # One result per run: the runs alone tell whether it is this cell's.
    if document.runs() != runs:
        stale[stage] = "computed for other runs"
        return False
    return True
