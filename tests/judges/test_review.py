"""The review loop: a stratified sample of an experiment from a real DuckDB warehouse, filled in,
imported as labels, calibration items and draft tasks that pass validation."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest
import yaml
from click.testing import CliRunner

from datagouv_eval_pipeline.cli import main
from datagouv_eval_pipeline.judges.calibration import load_calibration
from datagouv_eval_pipeline.tasks.loader import TASK_SPECS_DIR, load_task_specs
from datagouv_eval_pipeline.warehouse import load_experiment, new_experiment
from datagouv_eval_pipeline.warehouse.loader import connect
from datagouv_eval_pipeline.warehouse.review import RUBRIC, ReviewError, draw_sample
from tests.warehouse.warehouse_factories import (
    CODE,
    MCP_26,
    cell_load,
    cells,
    failed_trace,
    realistic_experiment,
    specs,
    trace_for,
)


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    db = tmp_path / "warehouse.duckdb"
    # Three cells (MCP 0.2.19, MCP 0.2.26, code): task_0002 twice and the decline task_0011 in
    # each MCP cell, one failed run; the deterministic judge scored them like the pipeline.
    # The code run's answer also gives the caveat its optimal criteria ask for, so that one run
    # passes every decided check and criterion (a stratum of passes to review).
    loads = realistic_experiment()[:-1]
    code = cells()[CODE]
    trace = trace_for(code, "task_0002_code.json")
    caveat = " Les jeux supprimés depuis ne sont pas comptés."
    loads.append(cell_load(code, [trace.model_copy(update={"answer": trace.answer + caveat})]))
    load_experiment(db, loads, tasks=specs().values(), experiment=new_experiment("c"))
    return db


def test_the_sample_covers_every_stratum_before_any_gets_a_second(warehouse: Path) -> None:
    with duckdb.connect(str(warehouse), read_only=True) as conn:
        every = draw_sample(conn, specs(), runs=50, seed=3)
        three = draw_sample(conn, specs(), runs=3, seed=3)
    # 7 runs ended ok (the failed run of MCP 0.2.26 has no answer to review).
    assert len(every.samples) == 7
    assert all(s.run_id.split("|")[1] != "task_0003" for s in every.samples)
    strata = {s.stratum for s in every.samples}
    # The decline run fails its optimal criterion asking for the aggregated dataset's link.
    assert strata == {"code|answer|passed", "mcp|answer|failed", "mcp|decline|failed"}
    assert any(s.passed_every_check for s in every.samples)  # passes are reviewed too
    assert len({s.stratum for s in three.samples}) == 3  # round-robin over the strata
    kinds = {(label.verdict_kind, label.tier) for s in every.samples for label in s.labels}
    assert {k for k, _ in kinds} == {"criterion", "arguments", "trajectory", "failure_mode"}
    assert {t for _, t in kinds} == {"minimal", "optimal"}
    first = every.samples[0]
    assert set(first.rubric) == set(RUBRIC)
    assert first.question == specs()[first.task_id].prompt
    assert all(label.human == "" for label in first.labels)
    assert sum(1 for label in first.labels if label.verdict_kind == "trajectory") == 2
    assert sum(1 for label in first.labels if label.verdict_kind == "failure_mode") == 4


def test_an_empty_sample_is_an_error_saying_why(tmp_path: Path) -> None:
    db = tmp_path / "empty.duckdb"
    connect(db).close()
    code, out = invoke("review", "sample", "--warehouse", str(db), "--out", str(tmp_path / "r"))
    assert code == 1
    assert "records no experiment: run `datagouv-eval experiment` first" in out
    load_experiment(
        db,
        [cell_load(cells()[MCP_26], [failed_trace(cells()[MCP_26])])],
        tasks=specs().values(),
        experiment=new_experiment("c"),
    )
    code, out = invoke("review", "sample", "--warehouse", str(db), "--out", str(tmp_path / "r"))
    assert code == 1
    assert "has no judged run with an answer to review (1 error in eval.runs_history" in out
    assert not (tmp_path / "r").exists()
    code, out = invoke(
        "review", "sample", "--warehouse", str(tmp_path / "none.duckdb"), "--out", "x"
    )
    assert code == 1 and "no warehouse yet" in out
    with duckdb.connect(str(db), read_only=True) as conn, pytest.raises(ReviewError):
        draw_sample(conn, specs(), runs=5, experiment_id="nope")


def _fill(path: Path) -> dict[str, int]:
    """Label like a reviewer: agree with every decided verdict, pass the rest; fail one rubric."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["reviewer"] = "test"
    counts = {"labels": 0}
    for number, sample in enumerate(data["samples"]):
        for name, answer in sample["rubric"].items():
            answer["human"] = "fail" if (number == 0 and name == "right_number") else "pass"
            answer["note"] = "checked against the trace"
        for label in sample["labels"]:
            automated = label["automated"]
            label["human"] = "fail" if automated == "fail" else "pass"
            label["note"] = "read the answer and the calls"
            counts["labels"] += 1
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return counts


def test_sample_fill_import_stores_labels_calibration_items_and_a_draft_task(
    warehouse: Path, tmp_path: Path
) -> None:
    review = tmp_path / "review_test.yml"
    code, out = invoke(
        "review", "sample", "--warehouse", str(warehouse), "--runs", "4", "--out", str(review)
    )
    assert code == 0, out
    assert "wrote 4 runs of experiment" in out
    assert "(arguments, criterion, failure_mode, trajectory)" in out
    # Nothing filled in: refused, nothing written.
    code, out = invoke("review", "import", str(review), "--warehouse", str(warehouse))
    assert code == 1 and "nothing is filled in" in out
    counts = _fill(review)
    task_dir = tmp_path / "task_specs"
    shutil.copytree(TASK_SPECS_DIR, task_dir)
    calibration = tmp_path / "calibration"
    args = ["--warehouse", str(warehouse), "--calibration-dir", str(calibration)]
    code, out = invoke("review", "import", str(review), *args, "--task-dir", str(task_dir))
    assert code == 0, out
    assert f"added {counts['labels']} calibration item(s)" in out
    assert "wrote 1 draft task(s): task_9001.yml" in out
    with duckdb.connect(str(warehouse), read_only=True) as conn:
        kinds = dict(
            conn.execute(
                "SELECT label_kind, count(*) FROM eval.review_labels GROUP BY 1"
            ).fetchall()
        )
        failed = conn.execute(
            "SELECT label, human FROM eval.review_labels WHERE label_kind = 'rubric' "
            "AND human = 'fail'"
        ).fetchall()
    assert kinds["rubric"] == 4 * len(RUBRIC)
    assert sum(v for k, v in kinds.items() if k != "rubric") == counts["labels"]
    assert failed == [("rubric:right_number", "fail")]
    # The calibration file is a valid version-2 file of the set...
    tasks = {t.task_id: t for t in load_task_specs([task_dir])}
    items = load_calibration([calibration / "review_test.yml"], tasks)
    assert len(items) == counts["labels"]
    assert {r.item.verdict_kind for r in items} == {
        "criterion",
        "arguments",
        "trajectory",
        "failure_mode",
    }
    # ...and the draft task passes validation as a draft of the failed run's task.
    draft = yaml.safe_load((task_dir / "task_9001.yml").read_text(encoding="utf-8"))
    assert draft["meta"]["status"] == "draft"
    assert tasks["task_9001"].prompt == tasks["task_0002"].prompt  # the code cell's failed run
    assert invoke("validate", str(task_dir / "task_9001.yml"))[0] == 0
    # Importing the same review twice is refused (a new file is a new calibration version).
    code, out = invoke("review", "import", str(review), *args, "--task-dir", str(task_dir))
    assert code == 1 and "was imported already" in out


def test_a_label_without_its_rationale_is_refused(warehouse: Path, tmp_path: Path) -> None:
    review = tmp_path / "r.yml"
    assert invoke("review", "sample", "--warehouse", str(warehouse), "--out", str(review))[0] == 0
    data = yaml.safe_load(review.read_text(encoding="utf-8"))
    label = data["samples"][0]["labels"][0]
    label["human"] = "pass"
    data["samples"][1]["labels"][0]["human"] = "maybe"
    review.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    code, out = invoke("review", "import", str(review), "--warehouse", str(warehouse))
    assert code == 1
    assert "samples.1.labels.0.human: Input should be '', 'pass' or 'fail'" in out
    data["samples"][1]["labels"][0]["human"] = ""
    review.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    code, out = invoke("review", "import", str(review), "--warehouse", str(warehouse))
    assert code == 1
    assert f"s001: {label['tier']} {label['label']}: note: a one-line rationale is required" in out
    assert "Traceback" not in out
