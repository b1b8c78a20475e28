"""What a run of the cells should cost before any agent runs (the dry run's estimate).

Per (cell, task) the estimate follows the task's expected trajectory and what the cell gives
the agent:

* a cell without tools (no ``mcp``, ``code``, ``datagouv-cli``, ``python-sdk`` or
  ``web_search``; ``skills`` alone adds text, not tools) answers in **one request**;
* a cell with tools makes one request per step of the task's optimal chain, then one for the
  final answer. A step is an action of a sequence; the branches of a parallel group (``+``)
  can be called in one model turn, so a group counts as its longest branch.

Request ``k`` (from 0) of a task run carries the fixed context (system prompt, skills document,
task prompt, tool definitions) plus the ``k`` earlier turns (each a tool result and a model
answer). Summed over ``n`` requests that is ``n × fixed + per_turn × n(n-1)/2`` input tokens.
Text is counted at :data:`CHARS_PER_TOKEN` characters per token. The figures are stated
assumptions, not measurements: the point is that a cell's estimate follows its setup and its
tasks, and that runs the agent-run cache already holds cost nothing.

The cache is consulted the way the agent stage does (``experiment.cache``): a task run is
cached when its input hash (cell setup, task spec, repeat, snapshot, run code, and a build's
code digest) has a stored trace. Live runs are never cached. Runs the agent stage is known to
skip before asking any model (a baseline policy without the capability it needs, a task whose
MCP version constraint excludes the cell's, in a live run a cell that exists only offline) cost
nothing either and are counted apart.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from datagouv_eval_pipeline.core.benchmark import Capability, Cell, token_cost
from datagouv_eval_pipeline.core.tasks import Action, ChainNode, Parallel, TaskSpec
from datagouv_eval_pipeline.pipeline.experiment.cache import AgentRunCache, run_input_hash
from datagouv_eval_pipeline.pipeline.experiment.live import offline_only
from datagouv_eval_pipeline.world.mcp_builds import current_code_digest

CHARS_PER_TOKEN = 4
"""Characters per token for prompts and documents (a common rule of thumb for these models)."""
OUTPUT_TOKENS_PER_REQUEST = 300
"""Tokens a model writes per request (a tool call with its arguments, or the final answer)."""
TOOL_RESULT_TOKENS = 1_500
"""Tokens of one tool result as the model is shown it (a page of search results, a profile)."""
TOOL_DEFINITION_TOKENS: dict[str, int] = {
    Capability.MCP.value: 2_500,
    Capability.CODE.value: 400,
    Capability.DATAGOUV_CLI.value: 300,
    Capability.PYTHON_SDK.value: 200,
    Capability.WEB_SEARCH.value: 300,
}
"""Tokens of the tool definitions each capability adds to every request (``skills``: none)."""
TOOL_CAPABILITIES = frozenset(TOOL_DEFINITION_TOKENS)
"""Capabilities that give the agent tools to call."""


def text_tokens(text: str | None) -> int:
    """Tokens of a text at :data:`CHARS_PER_TOKEN` characters per token (rounded up)."""
    return -(-len(text or "") // CHARS_PER_TOKEN)


def chain_steps(node: ChainNode) -> int:
    """Model turns the chain needs: a sequence adds its parts, a parallel group its longest."""
    if isinstance(node, Action):
        return 1
    if isinstance(node, Parallel):
        return max(chain_steps(branch) for branch in node.branches)
    return sum(chain_steps(child) for child in node.children)


def has_tools(cell: Cell) -> bool:
    """Whether the cell gives the agent any tool (``skills`` alone gives none)."""
    return bool(TOOL_CAPABILITIES & set(cell.capabilities))


def requests_per_run(cell: Cell, task: TaskSpec) -> int:
    """Model requests of one run of ``task`` in ``cell``: 1 without tools, else steps + 1."""
    if not has_tools(cell):
        return 1
    return chain_steps(task.chain("optimal").tree()) + 1


def fixed_context_tokens(cell: Cell, task: TaskSpec) -> int:
    """Input tokens every request of a run carries: prompts, skills and tool definitions."""
    tools = sum(TOOL_DEFINITION_TOKENS.get(name, 0) for name in cell.capabilities)
    return (
        text_tokens(cell.system_prompt_text)
        + text_tokens(cell.skills_text)
        + text_tokens(task.prompt)
        + tools
    )


def run_tokens(cell: Cell, task: TaskSpec) -> tuple[int, int, int]:
    """``(requests, input tokens, output tokens)`` of one run of ``task`` in ``cell``."""
    n = requests_per_run(cell, task)
    per_turn = TOOL_RESULT_TOKENS + OUTPUT_TOKENS_PER_REQUEST
    tokens_in = n * fixed_context_tokens(cell, task) + per_turn * n * (n - 1) // 2
    return n, tokens_in, n * OUTPUT_TOKENS_PER_REQUEST


@dataclass(frozen=True)
class CellEstimate:
    """What one cell should cost.

    Attributes:
        cell_key: The cell.
        model: ``provider/name``.
        is_llm: False for offline baselines.
        task_runs: Tasks × repeats.
        cached_runs: Task runs the agent-run cache already holds (they cost nothing).
        skipped_runs: Task runs the agent stage skips without a model request (they cost
            nothing): the baseline policy lacks a capability, or the task excludes the version.
        requests: Estimated model requests of the runs still to execute.
        input_tokens: Estimated input tokens of those runs.
        output_tokens: Estimated output tokens of those runs.
        cost: Their estimated cost in ``currency``; None when the model is unpriced.
        currency: ISO 4217 code.
        cache_note: Why the cache could not be consulted (live, a build never installed), if so.
    """

    cell_key: str
    model: str
    is_llm: bool
    task_runs: int
    cached_runs: int
    skipped_runs: int
    requests: int
    input_tokens: int
    output_tokens: int
    cost: float | None
    currency: str
    cache_note: str | None = None

    @property
    def runs_to_execute(self) -> int:
        """Task runs the agents will be asked for."""
        return self.task_runs - self.cached_runs - self.skipped_runs


def current_snapshot_id(snapshots_dir: Path | None = None) -> str | None:
    """The snapshot the twin serves by default (the manifest's ``current``), or None."""
    from datagouv_eval_pipeline.world.catalogue import MANIFEST_NAME, default_snapshots_dir

    path = (snapshots_dir or default_snapshots_dir()) / MANIFEST_NAME
    try:
        current = json.loads(path.read_text(encoding="utf-8")).get("current")
    except (OSError, ValueError):
        return None
    return current if isinstance(current, str) else None


def estimate_cells(
    cells: Sequence[Cell],
    tasks: Sequence[TaskSpec],
    *,
    repeats: int = 1,
    cache: AgentRunCache | None = None,
    snapshot_id: str | None = None,
    rerun: bool = False,
    builds_dir: Path | None = None,
    live: bool = False,
) -> list[CellEstimate]:
    """Estimate every cell: its task runs, how many are cached, and the cost of the rest.

    Args:
        cells: The cells.
        tasks: The tasks each cell runs.
        repeats: Runs per (cell, task).
        cache: The agent-run cache (None: nothing is cached).
        snapshot_id: The twin snapshot the runs read; None for a live run (never cached).
        rerun: The run ignores the cache (``--rerun``).
        builds_dir: The MCP builds cache (where a build's code digest is read).
        live: A live run: cells that exist only offline (the twin's MCP emulations) are
            skipped, and nothing is cached.

    Returns:
        One estimate per cell, in the given order.
    """
    # The runner (pydantic-ai, openai) when estimating, not when the code location loads.
    from datagouv_eval_pipeline.pipeline.agents import model_skip_reason, task_skip_reason

    out: list[CellEstimate] = []
    for cell in cells:
        note: str | None = None
        toolset = ""
        if rerun:
            note = "--rerun: the cache is ignored"
        elif live or snapshot_id is None:
            note = "live: never cached"
        elif cache is None:
            note = "no cache"
        elif cell.mcp_build is not None and "mcp" in cell.capabilities:
            digest = current_code_digest(cell.mcp_build, builds_dir)
            if digest is None:
                note = f"build {cell.mcp_build.spec} not installed yet"
            toolset = f"{cell.mcp_build.spec}#{digest}"
        usable = note is None and cache is not None and snapshot_id is not None and not live
        cell_skipped = model_skip_reason(cell) is not None or (
            live and offline_only(cell) is not None
        )
        cached = skipped = requests = tokens_in = tokens_out = 0
        for task in tasks:
            if cell_skipped or task_skip_reason(cell, task) is not None:
                skipped += repeats
                continue
            n, t_in, t_out = run_tokens(cell, task)
            for repeat in range(repeats):
                if usable:
                    assert cache is not None and snapshot_id is not None
                    key = run_input_hash(
                        cell, task, repeat, snapshot_id=snapshot_id, toolset=toolset
                    )
                    if cache.get(key) is not None:
                        cached += 1
                        continue
                requests += n
                tokens_in += t_in
                tokens_out += t_out
        out.append(
            CellEstimate(
                cell_key=cell.key,
                model=f"{cell.model.provider}/{cell.model.name}",
                is_llm=cell.model.is_llm,
                task_runs=len(tasks) * repeats,
                cached_runs=cached,
                skipped_runs=skipped,
                requests=requests,
                input_tokens=tokens_in,
                output_tokens=tokens_out,
                cost=token_cost(cell.model, tokens_in, tokens_out),
                currency=cell.model.currency,
                cache_note=note,
            )
        )
    return out
