"""The curated task specifications of ``task_specs/`` load without error."""

from __future__ import annotations

import pytest

from datagouv_eval_pipeline.tasks.errors import TaskSpecErrors
from datagouv_eval_pipeline.tasks.loader import TASK_SPECS_DIR, load_task_specs
from datagouv_eval_pipeline.tasks.spec import TaskStatus


def test_the_real_task_specs_load() -> None:
    if not any(TASK_SPECS_DIR.glob("task_*.yml")):
        pytest.skip("no task_specs/task_*.yml yet")
    try:
        specs = load_task_specs([TASK_SPECS_DIR])
    except TaskSpecErrors as errors:
        pytest.fail(str(errors), pytrace=False)
    ids = [spec.task_id for spec in specs]
    assert len(ids) == len(set(ids))
    assert any(spec.meta.status == TaskStatus.ACTIVE for spec in specs)


def test_the_documented_example_is_a_draft() -> None:
    example = TASK_SPECS_DIR / "example_task_0000.yml"
    if not example.exists():
        pytest.skip("no example yet")
    (spec,) = load_task_specs([example])
    assert spec.meta.status == TaskStatus.DRAFT
