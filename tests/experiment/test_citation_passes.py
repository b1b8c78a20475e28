"""In the default experiment's code cells, every citation pass names an expected source.

Issue 10 found 19 of 108 citation passes (all in code cells) citing *another* dataset: slugs that
co-occurred with the expected id in a tool output were learnt as its aliases. Here the default
benchmark's plain code cells (the three offline baselines, in the real sandbox, against the
twin) run every active task through the pipeline's own stage functions, and each citation pass
is audited independently: one of its cited data.gouv.fr URLs must name, by id or by slug, an
object the twin's catalog resolves to an expected source's id.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from datagouv_eval_pipeline.core.benchmark.cells import Cell, expand_cells
from datagouv_eval_pipeline.core.benchmark.loader import load_benchmark_config
from datagouv_eval_pipeline.core.judges.deterministic import DeterministicJudge
from datagouv_eval_pipeline.core.metrics.checks import extract_urls
from datagouv_eval_pipeline.core.semantic.aliases import UrlAliases
from datagouv_eval_pipeline.core.tasks import TASK_SPECS_DIR, load_task_specs
from datagouv_eval_pipeline.core.tasks.spec import SourceType, TaskSpec
from datagouv_eval_pipeline.core.traces import Trace
from datagouv_eval_pipeline.pipeline.agents.capabilities import default_sandbox
from datagouv_eval_pipeline.pipeline.agents.runner import run_cell
from datagouv_eval_pipeline.pipeline.experiment.catalog import twin_catalog_lookup
from datagouv_eval_pipeline.pipeline.experiment.documents import AgentRunsDocument
from datagouv_eval_pipeline.pipeline.experiment.stages import judge_cell, map_actions
from datagouv_eval_pipeline.world.api.server import TwinServer
from datagouv_eval_pipeline.world.catalogue.catalog import CatalogStore
from datagouv_eval_pipeline.world.sandbox.base import SandboxUnavailableError
from datagouv_eval_pipeline.world.sandbox.local import LocalSandbox

_PAGE = re.compile(
    r"^(?:https?://)?(?:www\.)?data\.gouv\.fr/(?:[a-z]{2}/)?(datasets|dataservices)/([^/?#\s]+)",
    re.IGNORECASE,
)


@pytest.fixture(scope="module")
def twin() -> Iterator[TwinServer]:
    sandbox = default_sandbox()
    assert isinstance(sandbox, LocalSandbox)
    try:
        _ = sandbox.isolation
    except SandboxUnavailableError as error:
        pytest.skip(f"no local sandbox here: {error}")
    server = TwinServer()
    with server:
        yield server


def _code_cells() -> list[Cell]:
    """The default experiment's cells whose only capability is code."""
    return [c for c in expand_cells(load_benchmark_config()) if c.capabilities == ("code",)]


def _audit(task: TaskSpec, trace: Trace, store: CatalogStore) -> list[str]:
    """The expected source ids a cited URL names (resolved through the twin's catalog)."""
    urls = trace.cited_urls if trace.cited_urls is not None else extract_urls(trace.answer)
    resolve = UrlAliases.for_trace(trace.provenance.base_urls).resolve
    named: list[str] = []
    for url in urls:
        page = _PAGE.match(resolve(url.strip()))
        if page is None:
            continue
        kind, key = page.group(1).lower(), page.group(2)
        record: dict[str, Any] | None = (
            store.dataset(key) if kind == "datasets" else store.dataservice(key)
        )
        if record is None:
            continue
        for source in task.expected_sources:
            wanted = "datasets" if source.type == SourceType.DATASET else "dataservices"
            if wanted == kind and record["id"] == source.id:
                named.append(source.id)
    return named


def test_no_citation_pass_lacks_an_expected_source(twin: TwinServer) -> None:
    tasks = {s.task_id: s for s in load_task_specs([TASK_SPECS_DIR]) if s.meta.status == "active"}
    store = CatalogStore.load()
    cells = _code_cells()
    assert len(cells) == 3
    passes = false_passes = 0
    problems = []
    for cell in cells:
        traces = run_cell(cell, list(tasks.values()), twin_urls=twin.urls)
        agent = AgentRunsDocument.of(cell.to_record(), list(traces))
        scored = judge_cell(
            agent, map_actions(agent), tasks, DeterministicJudge(), catalog=twin_catalog_lookup()
        )
        results = scored.to_json()["results"]
        for trace, score in zip(traces, [result["score"] for result in results], strict=True):
            if score is None:
                continue
            citation = score["checks"]["citation"]
            task = tasks[trace.task_id]
            if citation["passed"] is not True or not task.expected_sources:
                continue
            passes += 1
            if not _audit(task, trace, store):
                false_passes += 1
                problems.append((cell.key, trace.task_id, trace.answer[-300:]))
    assert passes > 0, "no citation pass to audit"
    assert false_passes == 0, problems
