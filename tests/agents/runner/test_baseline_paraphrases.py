"""The offline baselines take the same actions on every rewording of a task (``meta.paraphrases``).

Their decisions must depend on the tools, the tool results and general language cues, never
on a prompt's exact wording. Each baseline runs through the runner against the twin on the
prompt and on each paraphrase of every active task; the mapped action sequences (semantic
action names and arguments, as the mapper reads them) must be equal. Arguments compared:
everything but ``question`` (MCP 0.2.19 forwards the prompt itself); a search ``query`` is
compared as its set of words (an AND search does not depend on their order).
"""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from datagouv_eval_pipeline.base.text import fold
from datagouv_eval_pipeline.core.benchmark.cells import Cell
from datagouv_eval_pipeline.core.semantic.mapper import map_trace
from datagouv_eval_pipeline.core.tasks.spec import TaskSpec
from datagouv_eval_pipeline.core.traces import Trace
from datagouv_eval_pipeline.pipeline.agents.runner import run_cell
from datagouv_eval_pipeline.world.api.server import TwinServer

from .helpers import key_of

MIN_PARAPHRASES = 2

SETUPS = [
    ("baseline-oneshot", "mcp@0.2.26"),
    ("baseline-oneshot", "mcp@0.2.19"),
    ("baseline-oneshot", "code+skills@0.0.1"),
    ("baseline-thorough", "mcp@0.2.26"),
    ("baseline-thorough", "mcp@0.2.19"),
    ("baseline-thorough", "code+skills@0.0.1"),
    ("baseline-coder", "code"),
    ("baseline-coder", "code+datagouv-cli"),
]
"""One cell per policy and tool surface: the two MCP versions of the default experiment (v1
and v2 search, with and without ``question``), code with the skills document (its search
endpoint, filter syntax and Metrics request), and the coder with and without the CLI."""

Action = tuple[str, str]


def active(tasks: dict[str, TaskSpec]) -> list[TaskSpec]:
    return [task for task in tasks.values() if task.meta.status == "active"]


def actions(trace: Trace) -> list[Action]:
    """The trace's semantic actions with their arguments, as compared across rewordings."""
    sequence: list[Action] = []
    for instance in map_trace(trace).instances:
        args = {
            name: " ".join(sorted(set(fold(str(value)).split()))) if name == "query" else value
            for name, value in instance.args.items()
            if name != "question"
        }
        sequence.append((instance.action, json.dumps(args, sort_keys=True, default=str)))
    return sequence


def test_every_active_task_has_at_least_two_paraphrases(tasks: dict[str, TaskSpec]) -> None:
    short = {
        task.task_id: len(task.meta.paraphrases)
        for task in active(tasks)
        if len(task.meta.paraphrases) < MIN_PARAPHRASES
    }
    assert not short, f"active tasks with fewer than {MIN_PARAPHRASES} paraphrases: {short}"


def test_paraphrases_are_rewordings_not_copies(tasks: dict[str, TaskSpec]) -> None:
    for task in active(tasks):
        texts = [" ".join(text.split()) for text in [task.prompt, *task.meta.paraphrases]]
        assert len(set(texts)) == len(texts), task.task_id


@pytest.fixture(scope="module")
def variants(tasks: dict[str, TaskSpec]) -> list[TaskSpec]:
    """Every active task with paraphrases, then one copy per paraphrase (``task~N``)."""
    out: list[TaskSpec] = []
    for task in active(tasks):
        if not task.meta.paraphrases:
            continue
        out.append(task)
        out.extend(
            task.model_copy(update={"prompt": text, "task_id": f"{task.task_id}~{number}"})
            for number, text in enumerate(task.meta.paraphrases, start=1)
        )
    return out


@pytest.mark.parametrize(("model", "setup"), SETUPS, ids=[f"{m}-{s}" for m, s in SETUPS])
def test_a_baseline_takes_the_same_actions_on_every_paraphrase(
    cells: dict[str, Cell], twin: TwinServer, variants: list[TaskSpec], model: str, setup: str
) -> None:
    traces = run_cell(cells[key_of(model, setup)], variants, twin_urls=twin.urls)
    by_task: dict[str, list[Trace]] = defaultdict(list)
    for trace in traces:
        by_task[trace.task_id.split("~")[0]].append(trace)
    differing: dict[str, list[tuple[str, str, list[Action]]]] = {}
    for task_id, runs in by_task.items():
        seen = [(run.task_id, str(run.status), actions(run)) for run in runs]
        statuses = {status for _, status, _ in seen}
        if len({json.dumps(sequence) for _, _, sequence in seen}) > 1 or len(statuses) > 1:
            differing[task_id] = seen
        assert statuses <= {"ok", "skipped"}, (task_id, [run.status_reason for run in runs])
    assert not differing, json.dumps(differing, indent=1, ensure_ascii=False)
    # Something was compared: every task with paraphrases ran (or was skipped) in full.
    assert sum(len(runs) for runs in by_task.values()) == len(variants)
