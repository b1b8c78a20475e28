"""Results per task language: ``cell_language_metrics`` on a warehouse with French and English."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from datagouv_eval_pipeline.core.tasks.spec import TaskSpec
from datagouv_eval_pipeline.pipeline.warehouse import CellLoad, connect, load_experiment
from datagouv_eval_pipeline.pipeline.warehouse.error_bars import compute_statistics
from tests.dbt.dbt_helpers import rows, run_dbt, warehouse_env
from tests.warehouse.warehouse_factories import (
    HAND,
    hand_record,
    hand_run,
)

# Tasks 1-4 are French, 5-8 English. One criterion per task: accuracy 1, 0 or unscored (None).
ACCURACY: dict[str, bool | None] = {
    "task_0001": True,
    "task_0002": True,
    "task_0003": True,
    "task_0004": False,
    "task_0005": False,
    "task_0006": False,
    "task_0007": True,
    "task_0008": None,
}


def _task(task_id: str) -> TaskSpec:
    language = "fr" if task_id <= "task_0004" else "en"
    return TaskSpec.model_validate(
        {
            "task_id": task_id,
            "version": 1,
            "task_name": task_id,
            "meta": {"status": "active", "source": "synthetic", "language": language},
            "prompt": "question",
            "evaluation_criteria": {"minimal": [{"criteria": "c"}]},
            "action_chain": {"minimal": {"chain": "search.datasets"}},
        }
    )


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    tmp = tmp_path_factory.mktemp("dbt_languages")
    path = tmp / "warehouse.duckdb"
    tasks = list(ACCURACY)
    cell = CellLoad(hand_record(HAND), [hand_run(task, [ACCURACY[task]]) for task in tasks])
    load_experiment(path, [cell], tasks=[_task(task) for task in tasks])
    conn = connect(path)
    try:
        compute_statistics(conn)
    finally:
        conn.close()
    with warehouse_env(path):
        result = run_dbt(
            # cautious: only the tests whose every parent is selected (not the other marts')
            [
                "build",
                "--select",
                "+cell_language_metrics",
                "+experiment_metrics",
                "--indirect-selection",
                "cautious",
            ],
            tmp,
        )
    assert result.success, result.exception
    yield path


def test_each_language_has_its_runs_n_coverage_and_wilson_interval(db: Path) -> None:
    found = rows(
        db,
        "SELECT language, language_tasks, runs, scored, coverage, mean, ci_low, ci_high, "
        "interval_method FROM main.cell_language_metrics WHERE cell_key = ? AND tier = 'minimal' "
        "AND metric = 'accuracy' ORDER BY language",
        [HAND],
    )
    # English: 0, 0, 1 and one unscored run -> 1/3 over 3 scored of 4, Wilson 95 % for 1 of 3
    # = (1/3 + z²/6 ± z·sqrt(2/27 + z²/36)) / (1 + z²/3) with z = 1.959964: [0.0615, 0.7923].
    # French: 1, 1, 1, 0 -> 3/4, Wilson for 3 of 4: [0.3006, 0.9544].
    assert [row[:5] for row in found] == [("en", 4, 4, 3, 0.75), ("fr", 4, 4, 4, 1.0)]
    (en, fr) = found
    assert en[5] == pytest.approx(1 / 3)
    assert (en[6], en[7]) == pytest.approx((0.061492, 0.792340), abs=1e-5)
    assert fr[5] == pytest.approx(0.75)
    assert (fr[6], fr[7]) == pytest.approx((0.300642, 0.954413), abs=1e-5)
    assert {en[8], fr[8]} == {"wilson"}


def test_the_languages_add_up_to_the_cell(db: Path) -> None:
    (total,) = rows(
        db,
        "SELECT runs, scored FROM main.experiment_metrics WHERE cell_key = ? "
        "AND tier = 'minimal' AND metric = 'accuracy'",
        [HAND],
    )
    (split,) = rows(
        db,
        "SELECT sum(runs), sum(scored) FROM main.cell_language_metrics WHERE cell_key = ? "
        "AND tier = 'minimal' AND metric = 'accuracy'",
        [HAND],
    )
    assert total == (8, 7)
    assert tuple(int(v) for v in split) == total
