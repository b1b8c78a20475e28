"""The dry run's estimate: per-cell requests from the chains, the cache, prices (by hand)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from datagouv_eval_pipeline.cli import experiment
from datagouv_eval_pipeline.core.benchmark.cells import Cell, expand_cells
from datagouv_eval_pipeline.core.benchmark.config import ProviderKind
from datagouv_eval_pipeline.core.benchmark.loader import load_benchmark_config
from datagouv_eval_pipeline.core.tasks import TASK_SPECS_DIR, TaskSpec, load_task_specs
from datagouv_eval_pipeline.core.tasks.chain import parse_chain
from datagouv_eval_pipeline.core.tasks.spec import ActionChainLevel, ActionChains
from datagouv_eval_pipeline.core.traces import Trace
from datagouv_eval_pipeline.pipeline.experiment.cache import AgentRunCache, run_input_hash
from datagouv_eval_pipeline.pipeline.experiment.estimate import (
    chain_steps,
    current_snapshot_id,
    estimate_cells,
    requests_per_run,
)
from datagouv_eval_pipeline.pipeline.experiment.plan import plan_experiment


@pytest.fixture(scope="module")
def cells() -> list[Cell]:
    return expand_cells(load_benchmark_config())


@pytest.fixture(scope="module")
def specs() -> list[TaskSpec]:
    return load_task_specs([TASK_SPECS_DIR])


def _cell(cells: list[Cell], capabilities: tuple[str, ...], key: str) -> Cell:
    base = next(c for c in cells if c.capabilities == capabilities)
    return replace(
        base,
        key=key,
        # A model of our own (priced), not a baseline policy: nothing is skipped.
        model=replace(
            base.model,
            provider="acme",
            name="m",
            kind=ProviderKind.OPENAI_COMPATIBLE,
            input_price_per_mtok=2.0,
            output_price_per_mtok=6.0,
        ),
        system_prompt_text="s" * 40,  # 10 tokens
        skills_text=("k" * 400) if "skills" in capabilities else None,  # 100 tokens
    )


def _task(base: TaskSpec, task_id: str, chain: str) -> TaskSpec:
    level = ActionChainLevel(chain=chain)
    return base.model_copy(
        update={
            "task_id": task_id,
            "prompt": "p" * 80,  # 20 tokens
            "action_chain": ActionChains(minimal=level, optimal=level),
            "toolset_constraints": base.toolset_constraints.model_copy(update={"mcp": None}),
        }
    )


@pytest.mark.parametrize(
    ("chain", "steps"),
    [
        ("search.datasets", 1),
        ("search.datasets > get.dataset.info > get.dataset.resources", 3),
        # b + (c > d): the parallel group takes its longest branch, 2 turns.
        ("search.a > (search.b + search.c > search.d) > search.e", 4),
        ("search.a + search.b + search.c", 1),
    ],
)
def test_chain_steps_by_hand(chain: str, steps: int) -> None:
    assert chain_steps(parse_chain(chain)) == steps


def test_a_cell_without_tools_asks_once_per_task(cells: list[Cell], specs: list[TaskSpec]) -> None:
    no_tools = _cell(cells, (), "none")
    skills_only = replace(no_tools, capabilities=("skills",), skills_text="k" * 400)
    mcp = _cell(cells, ("mcp",), "mcp")
    task = _task(specs[0], "task_0901", "search.a > search.b > search.c")
    assert requests_per_run(no_tools, task) == 1
    assert requests_per_run(skills_only, task) == 1  # skills is text, not a tool
    assert requests_per_run(mcp, task) == 3 + 1


def test_estimate_of_three_setups_worked_out_by_hand(
    cells: list[Cell], specs: list[TaskSpec]
) -> None:
    none, mcp, mcp_skills = (
        _cell(cells, (), "none"),
        _cell(cells, ("mcp",), "mcp"),
        _cell(cells, ("mcp", "skills"), "mcp+skills"),
    )
    t1 = _task(specs[0], "task_0901", "search.a > (search.b + search.c > search.d) > search.e")
    t2 = _task(specs[0], "task_0902", "search.a")
    first, second, third = estimate_cells([none, mcp, mcp_skills], [t1, t2], repeats=2)

    # No tools: 1 request per run, 4 runs. Each carries 10 + 20 = 30 input tokens, writes 300.
    assert (first.task_runs, first.cached_runs, first.skipped_runs) == (4, 0, 0)
    assert (first.requests, first.input_tokens, first.output_tokens) == (4, 120, 1_200)
    assert first.cost == pytest.approx((120 * 2.0 + 1_200 * 6.0) / 1e6)

    # MCP: t1 = 4 steps + answer = 5 requests; t2 = 1 + 1 = 2; × 2 repeats = 14 requests.
    # Fixed context 10 + 20 + 2 500 (tool definitions) = 2 530; each earlier turn adds
    # 1 500 (tool result) + 300 (answer) = 1 800.
    # t1: 5 × 2 530 + 1 800 × (5 × 4 / 2) = 12 650 + 18 000 = 30 650
    # t2: 2 × 2 530 + 1 800 × 1 = 6 860; both × 2 repeats = 75 020.
    assert (second.requests, second.input_tokens) == (14, 75_020)
    assert second.output_tokens == 14 * 300 == 4_200
    assert second.cost == pytest.approx((75_020 * 2.0 + 4_200 * 6.0) / 1e6)
    assert second.cost == pytest.approx(0.17524)

    # Skills add 100 tokens to each of the 14 requests' fixed context.
    assert (third.requests, third.input_tokens) == (14, 75_020 + 14 * 100)


def test_unpriced_models_are_not_counted_as_free(cells: list[Cell], specs: list[TaskSpec]) -> None:
    cell = _cell(cells, (), "none")
    unpriced = replace(cell, model=replace(cell.model, input_price_per_mtok=None))
    (estimate,) = estimate_cells([unpriced], [_task(specs[0], "task_0901", "search.a")])
    assert (estimate.requests, estimate.cost) == (1, None)


def test_cached_runs_cost_nothing(tmp_path: Path, cells: list[Cell], specs: list[TaskSpec]) -> None:
    cell = _cell(cells, ("mcp",), "mcp")
    t1 = _task(specs[0], "task_0901", "search.a > search.b")  # 3 requests a run
    t2 = _task(specs[0], "task_0902", "search.a")  # 2 requests a run
    cache = AgentRunCache(tmp_path)
    # Repeat 0 of t1 and both repeats of t2 are cached; repeat 1 of t1 is not.
    for task, repeat in [(t1, 0), (t2, 0), (t2, 1)]:
        key = run_input_hash(cell, task, repeat, snapshot_id="snap")
        cache.put(key, Trace(task_id=task.task_id, repeat=repeat, status="ok", answer="x"))

    (estimate,) = estimate_cells([cell], [t1, t2], repeats=2, cache=cache, snapshot_id="snap")
    assert (estimate.task_runs, estimate.cached_runs, estimate.runs_to_execute) == (4, 3, 1)
    # Only t1 repeat 1 runs: 3 × 2 530 + 1 800 × 3 = 12 990 input tokens.
    assert (estimate.requests, estimate.input_tokens, estimate.output_tokens) == (3, 12_990, 900)
    assert estimate.cache_note is None

    other_snapshot, live, rerun = (
        estimate_cells([cell], [t1, t2], repeats=2, cache=cache, snapshot_id="other")[0],
        estimate_cells([cell], [t1, t2], repeats=2, cache=cache, snapshot_id=None)[0],
        estimate_cells([cell], [t1, t2], repeats=2, cache=cache, snapshot_id="snap", rerun=True)[0],
    )
    assert other_snapshot.cached_runs == 0
    assert (live.cached_runs, live.cache_note) == (0, "live: never cached")
    assert (rerun.cached_runs, rerun.requests) == (0, 2 * (3 + 2))


def test_runs_the_stage_skips_cost_nothing() -> None:
    plan = plan_experiment(evaluation_types=["mcp_versions"], task_ids=["task_0001"])
    by_key = {e.cell_key: e for e in plan.estimate()}
    coder = by_key["offline~baseline-coder__mcp@0.2.26__data_gouv_context"]
    # baseline-coder writes code only: with MCP tools alone every run is skipped.
    assert (coder.skipped_runs, coder.requests) == (1, 0)
    # task_0001 needs MCP >= 0.2.15: skipped at 0.2.5, run at 0.2.19.
    old = by_key["offline~baseline-thorough__mcp@0.2.5__data_gouv_context"]
    new = by_key["offline~baseline-thorough__mcp@0.2.19__data_gouv_context"]
    assert (old.skipped_runs, old.requests) == (1, 0)
    # Its optimal chain is two parallel branches of 3 actions: 3 turns + the answer.
    assert (new.skipped_runs, new.requests) == (0, 3 + 1)


def test_the_dry_run_command_counts_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """12 of the suite's task runs cached in one cell: the command says so and prices the rest."""
    monkeypatch.setenv("DATAGOUV_EVAL_RUN_STORE", str(tmp_path / "store"))
    plan = plan_experiment(evaluation_types=["data_contamination"])
    n = len(plan.tasks)  # every active task
    assert n > 12
    cell = plan.cells[0]
    snapshot = current_snapshot_id()
    assert snapshot is not None
    cache = AgentRunCache(tmp_path / "store" / "cache" / "agent_runs")
    for task in plan.tasks[:12]:
        key = run_input_hash(cell, task, 0, snapshot_id=snapshot)
        cache.put(key, Trace(task_id=task.task_id, status="ok", answer="x"))

    result = CliRunner().invoke(
        experiment.command, ["--dry-run", "--evaluation-type", "data_contamination"]
    )
    assert result.exit_code == 0, result.output
    line = next(ln for ln in result.output.splitlines() if ln.startswith(cell.key))
    # runs, cached, skipped, requests (no tools: 1 per run still to execute)
    assert line.split()[1:5] == [str(n), "12", "0", str(n - 12)]
    # Three cells of no-tool baselines: 3n runs, the 12 cached ones in the first.
    assert f"12 of {3 * n} task runs cached" in result.output
    assert f"to execute: {3 * n - 12} task runs" in result.output
    assert f"~{3 * n - 12} model requests" in result.output
    live = CliRunner().invoke(
        experiment.command, ["--dry-run", "--evaluation-type", "data_contamination", "--live"]
    )
    assert f"0 of {3 * n} task runs cached (live runs are never cached)" in live.output


def test_a_live_run_skips_the_twins_emulations() -> None:
    plan = plan_experiment(evaluation_types=["mcp_versions"], task_ids=["task_0003"])
    offline = plan.estimate()
    live = plan.estimate(live=True)
    # 9 emulated MCP cells: offline 3 are skipped (baseline-coder has no code capability);
    # live, all 9 are (the emulations read the twin), so nothing would be asked.
    assert sum(e.skipped_runs for e in offline) == 3
    assert sum(e.skipped_runs for e in live) == 9
    assert sum(e.requests for e in live) == 0
