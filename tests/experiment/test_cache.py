"""The agent-run cache and the hash of a task run's inputs."""

from dataclasses import replace
from pathlib import Path

import pytest

from datagouv_eval_pipeline.core.benchmark.cells import Cell, expand_cells
from datagouv_eval_pipeline.core.benchmark.loader import load_benchmark_config
from datagouv_eval_pipeline.core.tasks import TASK_SPECS_DIR, TaskSpec, load_task_specs
from datagouv_eval_pipeline.core.traces import Trace
from datagouv_eval_pipeline.pipeline.experiment.cache import AgentRunCache, run_input_hash

HASH = "ab" + "0" * 62


@pytest.fixture(scope="module")
def cell() -> Cell:
    cells = expand_cells(load_benchmark_config())
    return next(c for c in cells if c.mcp_version == "0.2.26" and c.skills_version is None)


@pytest.fixture(scope="module")
def task() -> TaskSpec:
    return next(s for s in load_task_specs([TASK_SPECS_DIR]) if s.task_id == "task_0002")


def _hash(cell: Cell, task: TaskSpec, repeat: int = 0, snapshot: str = "snap-a") -> str:
    return run_input_hash(cell, task, repeat, snapshot_id=snapshot, code="code-1")


# ----------------------------------------------------------------------------- the cache


def test_finished_runs_are_cached_and_read_back(tmp_path: Path) -> None:
    cache = AgentRunCache(tmp_path)
    trace = Trace(task_id="task_0002", answer="42", status="ok", repeat=1)
    assert cache.get(HASH) is None
    assert cache.put(HASH, trace) is True
    assert (tmp_path / "ab" / f"{HASH}.json").is_file()
    assert cache.get(HASH) == trace


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        ("budget_exceeded", "The next request would exceed the request_limit of 25"),
        ("budget_exceeded", "wall-clock budget of 600 s exceeded"),
        ("error", "model request failed: HTTP 502 after 5 retries"),
        ("error", "infrastructure: the MCP server stopped answering"),
        ("skipped", "set the environment variable MISTRAL_API_KEY"),
        ("cancelled", "interrupted (SIGINT)"),
    ],
)
def test_failures_are_not_cached(tmp_path: Path, status: str, reason: str) -> None:
    # A run with no score is not a result: the next run asks again.
    cache = AgentRunCache(tmp_path)
    trace = Trace.model_validate(
        {"task_id": "task_0002", "status": status, "status_reason": reason}
    )
    assert cache.put(HASH, trace) is False
    assert cache.get(HASH) is None
    assert not any(tmp_path.rglob("*.json"))


def test_a_failure_stored_by_an_older_version_is_a_miss(tmp_path: Path) -> None:
    # Older versions cached runs ended by the request budget: they are asked again now.
    path = tmp_path / "ab" / f"{HASH}.json"
    path.parent.mkdir()
    trace = Trace(task_id="task_0002", status="budget_exceeded", status_reason="request_limit")
    path.write_text(trace.model_dump_json(), encoding="utf-8")
    assert AgentRunCache(tmp_path).get(HASH) is None


def test_an_error_does_not_overwrite_a_cached_finished_run(tmp_path: Path) -> None:
    cache = AgentRunCache(tmp_path)
    good = Trace(task_id="task_0002", answer="42")
    cache.put(HASH, good)
    cache.put(HASH, Trace(task_id="task_0002", status="error", status_reason="timeout"))
    assert cache.get(HASH) == good


@pytest.mark.parametrize(
    "content",
    ["{truncated", '{"task_id": "task_0002", "unknown_field": 1}', '{"answer": "no task id"}'],
)
def test_an_unreadable_entry_is_a_miss(tmp_path: Path, content: str) -> None:
    cache = AgentRunCache(tmp_path)
    path = tmp_path / "ab" / f"{HASH}.json"
    path.parent.mkdir()
    path.write_text(content, encoding="utf-8")
    assert cache.get(HASH) is None


# ---------------------------------------------------------------------------- the hash


def test_the_hash_is_stable_for_the_same_inputs(cell: Cell, task: TaskSpec) -> None:
    assert _hash(cell, task) == _hash(cell, task)
    assert len(_hash(cell, task)) == 64


def test_the_hash_changes_with_the_task_spec(cell: Cell, task: TaskSpec) -> None:
    edited = task.model_copy(update={"prompt": task.prompt + " (reformulée)"})
    assert _hash(cell, edited) != _hash(cell, task)


def test_the_hash_changes_with_the_repeat_and_the_snapshot(cell: Cell, task: TaskSpec) -> None:
    base = _hash(cell, task)
    assert _hash(cell, task, repeat=1) != base
    assert _hash(cell, task, snapshot="snap-b") != base


def test_the_hash_changes_with_the_code_and_the_settings(cell: Cell, task: TaskSpec) -> None:
    base = _hash(cell, task)
    assert run_input_hash(cell, task, 0, snapshot_id="snap-a", code="code-2") != base
    other = run_input_hash(cell, task, 0, snapshot_id="snap-a", code="code-1", settings="b=3")
    assert other != base


@pytest.mark.parametrize(
    "change",
    [
        {"mcp_version": "0.2.19"},
        {"capabilities": ("mcp", "skills")},
        {"skills_sha256": "f" * 64},
        {"system_prompt_sha256": "e" * 64},
        {"mcp_url": "http://127.0.0.1:{twin_port}/other/mcp"},
    ],
)
def test_the_hash_changes_with_the_cell_setup(
    cell: Cell, task: TaskSpec, change: dict[str, object]
) -> None:
    assert _hash(replace(cell, **change), task) != _hash(cell, task)  # type: ignore[arg-type]


def test_the_hash_changes_with_the_model(cell: Cell, task: TaskSpec) -> None:
    other_model = replace(cell.model, name="baseline-thorough")
    assert _hash(replace(cell, model=other_model), task) != _hash(cell, task)


def test_labels_and_metrics_are_not_inputs(cell: Cell, task: TaskSpec) -> None:
    relabelled = replace(
        cell,
        key="renamed-cell",
        evaluation_types=("some_other_type",),
        metrics=("efficiency",),
        model=replace(cell.model, label="a new label"),
    )
    assert _hash(relabelled, task) == _hash(cell, task)


# ------------------------------------------------------------------ adding repeats


def test_adding_repeats_reuses_repeat_0_instead_of_rerunning_it(
    tmp_path: Path, task: TaskSpec
) -> None:
    from datagouv_eval_pipeline.pipeline.experiment.stages import run_agents

    cells = expand_cells(load_benchmark_config())
    offline = next(c for c in cells if not c.capabilities and c.model.kind == "offline")
    cache = AgentRunCache(tmp_path)
    first = run_agents(offline, [task], twin_urls=None, snapshot_id="snap-a", cache=cache)
    assert (first.executed, first.reused) == (1, 0)
    more = run_agents(offline, [task], twin_urls=None, snapshot_id="snap-a", repeats=3, cache=cache)
    # Repeat 0 comes from the cache; only repeats 1 and 2 run.
    assert (more.executed, more.reused) == (2, 1)
    assert [t.repeat for t in more.document.traces] == [0, 1, 2]
    assert more.document.traces[0] == first.document.traces[0]
