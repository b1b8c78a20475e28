"""The committed tasks written for the real catalogue carry what version comparisons need."""

from __future__ import annotations

import re

import pytest

from datagouv_eval_pipeline.core.tasks.loader import TASK_SPECS_DIR, load_task_specs
from datagouv_eval_pipeline.core.tasks.spec import TaskSpec, TaskStatus

# Tasks from task_0015 on were written with meta.exercises, meta.difficulty and
# meta.paraphrases; the first fourteen predate those fields.
FIRST_WITH_META = 15

SPECS = [
    spec
    for spec in load_task_specs([TASK_SPECS_DIR])
    if spec.meta.status == TaskStatus.ACTIVE and int(spec.task_id[5:]) >= FIRST_WITH_META
]


def _words(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def test_there_are_tasks_with_meta() -> None:
    assert len(SPECS) >= 26


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.task_id)
def test_each_task_says_what_it_exercises_and_why_it_is_hard(spec: TaskSpec) -> None:
    assert spec.meta.exercises, f"{spec.task_id}: meta.exercises is empty"
    assert len(set(spec.meta.exercises)) == len(spec.meta.exercises), spec.task_id
    assert spec.meta.difficulty and len(spec.meta.difficulty.split()) >= 8, spec.task_id


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.task_id)
def test_each_task_has_two_distinct_paraphrases(spec: TaskSpec) -> None:
    rewordings = {_words(p) for p in spec.meta.paraphrases}
    assert len(rewordings) >= 2, f"{spec.task_id}: fewer than two distinct paraphrases"
    assert _words(spec.prompt) not in rewordings, f"{spec.task_id}: a paraphrase is the prompt"


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.task_id)
def test_stated_values_are_in_a_criterion(spec: TaskSpec) -> None:
    # The deterministic judge links a value to the criterion whose text states its number, and a
    # recomputed reference restates that text: a value no criterion states is never checked.
    texts = " ".join(c.criteria for c in spec.criteria("optimal"))
    # Thousands separators: spaces in French, commas in English ("1,718,365.9").
    flat = re.sub(r"(?<=\d)[\s\u00a0\u202f,](?=\d{3}\b)", "", texts)
    for expected in spec.expected_values:
        value = expected.value
        number = str(int(value)) if value.is_integer() else repr(value)
        assert number in flat, f"{spec.task_id}: no criterion states {expected.name}={number}"
