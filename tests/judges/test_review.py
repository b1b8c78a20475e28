"""The review loop: a stratified sample of an experiment from a real DuckDB warehouse, filled in,
imported as labels, calibration items and draft tasks that pass validation."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import duckdb
import pytest
import yaml
from click.testing import CliRunner

from datagouv_eval_pipeline.cli import main
from datagouv_eval_pipeline.core.judges.calibration import load_calibration
from datagouv_eval_pipeline.core.tasks.loader import TASK_SPECS_DIR, load_task_specs
from datagouv_eval_pipeline.pipeline.warehouse import load_experiment, new_experiment
from datagouv_eval_pipeline.pipeline.warehouse.loader import connect
from datagouv_eval_pipeline.pipeline.warehouse.review import (
    RUBRIC,
    ReviewError,
    draw_sample,
    outcome_of,
    read_review,
    stratified_draw,
    write_review,
)
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


# Keys that would show the judge's verdict (or something derived from it) to the labeller.
VERDICT_KEYS = {
    "automated",
    "automated_reason",
    "judge_id",
    "passed",
    "score",
    "reason",
    "verdict",
    "status",
    "stratum",
    "passed_every_check",
    "failed_checks",
    "outcome",
}


def _keys(data: object) -> set[str]:
    if isinstance(data, dict):
        return set(data) | {k for v in data.values() for k in _keys(v)}
    if isinstance(data, list):
        return {k for v in data for k in _keys(v)}
    return set()


def test_the_sample_is_blind_and_draws_every_outcome(warehouse: Path, tmp_path: Path) -> None:
    with duckdb.connect(str(warehouse), read_only=True) as conn:
        every = draw_sample(conn, specs(), runs=50, seed=3)
        four = draw_sample(conn, specs(), runs=4, seed=3)
        reasons = [
            r
            for (r,) in conn.execute(
                "SELECT DISTINCT reason FROM eval.verdicts WHERE length(reason) > 25"
            ).fetchall()
        ]
    # 7 runs ended ok (the failed run of MCP 0.2.26 has no answer to review). Failed checks and
    # decided criteria, by run: code task_0002 0 (passed); both task_0011 1, the optimal
    # criterion asking for the aggregated dataset's link (near miss); both MCP task_0002 repeat
    # 0 2 (citation, criterion 4), both repeat 1 7: failed.
    assert len(every.samples) == 7
    assert all(s.run_id.split("|")[1] != "task_0003" for s in every.samples)
    assert {k: (v.runs, v.drawn) for k, v in every.strata.items()} == {
        "passed": (1, 1),
        "near_miss": (2, 2),
        "failed": (4, 4),
    }
    # Four runs: the outcomes take them in turn (passed, near_miss, failed); passed has one run
    # only, so the fourth turn goes on to near_miss.
    assert {k: v.drawn for k, v in four.strata.items()} == {
        "passed": 1,
        "near_miss": 2,
        "failed": 1,
    }
    kinds = {(label.verdict_kind, label.tier) for s in every.samples for label in s.labels}
    assert {k for k, _ in kinds} == {"criterion", "arguments", "trajectory", "failure_mode"}
    assert {t for _, t in kinds} == {"minimal", "optimal"}
    first = every.samples[0]
    assert set(first.rubric) == set(RUBRIC)
    assert first.question == specs()[first.task_id].prompt
    assert all(label.human == "" for label in first.labels)
    assert sum(1 for label in first.labels if label.verdict_kind == "trajectory") == 2
    assert sum(1 for label in first.labels if label.verdict_kind == "failure_mode") == 4
    # Blind: the file shows nothing of the judge's verdicts, in its fields or its text.
    path = tmp_path / "blind.yml"
    write_review(every, path)
    text = path.read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    assert _keys(data["samples"]) & VERDICT_KEYS == set()
    assert reasons and not [r for r in reasons if r in text]
    assert (data["version"], data["method"], data["labeller"], data["human"]) == (
        2,
        "blind-review",
        "",
        None,
    )
    assert "#   passed: 1 drawn of 1 runs" in text
    assert "#   near_miss: 2 drawn of 2 runs" in text


def test_the_draw_shares_the_sample_between_outcomes_round_robin() -> None:
    def run(n: int, failed: int, capability: str = "mcp") -> dict[str, object]:
        return {
            "run_id": f"r{n}",
            "failed_checks": failed,
            "capability_set": capability,
            "expected_behaviour": "answer",
        }

    candidates = (
        [run(i, 0) for i in range(2)]
        + [run(10 + i, 1, "code" if i else "mcp") for i in range(3)]
        + [run(20 + i, 2 + i) for i in range(10)]
    )
    six, strata = stratified_draw(candidates, 6, random.Random(0))
    assert {k: (v.runs, v.drawn) for k, v in strata.items()} == {
        "passed": (2, 2),
        "near_miss": (3, 2),
        "failed": (10, 2),
    }
    # Within near misses, capability sets alternate: both are in a share of two.
    near = [c for c in six if c["failed_checks"] == 1]
    assert {c["capability_set"] for c in near} == {"mcp", "code"}
    # Nine: rounds of one per outcome until a stratum runs out (2 passed, then 3 near misses).
    nine, strata = stratified_draw(candidates, 9, random.Random(0))
    assert {k: v.drawn for k, v in strata.items()} == {"passed": 2, "near_miss": 3, "failed": 4}
    assert len({c["run_id"] for c in nine}) == 9
    # The order of the drawn runs is shuffled, not grouped by stratum.
    orders = {
        tuple(
            outcome_of(int(str(c["failed_checks"])))
            for c in stratified_draw(candidates, 9, random.Random(seed))[0]
        )
        for seed in range(5)
    }
    assert len(orders) > 1


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
    """Label blind: pass every label (the judge's verdicts are not there to agree with), fail
    one rubric question; who labelled is left for the import to say."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    counts = {"labels": 0}
    for number, sample in enumerate(data["samples"]):
        for name, answer in sample["rubric"].items():
            answer["human"] = "fail" if (number == 0 and name == "right_number") else "pass"
            answer["note"] = "checked against the trace"
        for label in sample["labels"]:
            label["human"] = "pass"
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
    assert "drawn per outcome: passed 1 of 1, near_miss 2 of 2, failed 1 of 4" in out
    # Nothing filled in: refused, nothing written.
    code, out = invoke("review", "import", str(review), "--warehouse", str(warehouse))
    assert code == 1 and "nothing is filled in" in out
    counts = _fill(review)
    task_dir = tmp_path / "task_specs"
    shutil.copytree(TASK_SPECS_DIR, task_dir)
    calibration = tmp_path / "calibration"
    args = ["--warehouse", str(warehouse), "--calibration-dir", str(calibration)]
    # Who labelled is required: no labeller, a blank one, or not saying whether a person.
    code, out = invoke("review", "import", str(review), *args, "--task-dir", str(task_dir))
    assert code == 1
    assert f"{review}: labeller: say who labelled (a name or an email; --labeller)" in out
    assert f"{review}: human: say whether a person labelled" in out
    assert "Traceback" not in out
    code, out = invoke(
        "review", "import", str(review), *args, "--task-dir", str(task_dir),
        "--labeller", "  ", "--human",
    )  # fmt: skip
    assert code == 1 and "labeller: say who labelled" in out
    code, out = invoke(
        "review", "import", str(review), *args, "--task-dir", str(task_dir),
        "--labeller", "Ada <ada@example.org>",
    )  # fmt: skip
    assert code == 1 and "human: say whether a person labelled" in out
    assert not calibration.exists() and not (task_dir / "task_9001.yml").exists()
    code, out = invoke(
        "review", "import", str(review), *args, "--task-dir", str(task_dir),
        "--labeller", "Ada <ada@example.org>", "--not-human",
    )  # fmt: skip
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
        provenance = conn.execute(
            "SELECT DISTINCT labeller, method, labeller_human FROM eval.review_labels"
        ).fetchall()
        # The judge's outcome, looked up at import: the labels (all pass) against eval.verdicts.
        looked_up = conn.execute(
            "SELECT l.label_kind, l.automated, v.status, v.passed, v.score "
            "FROM eval.review_labels AS l JOIN eval.verdicts AS v ON v.run_id = l.run_id "
            "AND v.name = l.label AND NOT v.inherited "
            "AND (v.tier = l.tier OR l.label_kind = 'criterion') WHERE l.label_kind <> 'rubric'"
        ).fetchall()
    assert provenance == [("Ada <ada@example.org>", "blind-review", False)]
    assert looked_up
    for kind, automated, status, passed, score in looked_up:
        if status != "ok":
            assert automated == "unscored"
        elif kind == "trajectory":
            assert automated == ("pass" if score >= 0.75 else "fail")
        else:
            assert automated == ("pass" if passed else "fail")
    judge_failed = sum(1 for row in looked_up if row[1] == "fail")
    assert judge_failed > 0
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
    # ...with the review's provenance, and a near miss where the label (pass) and the judge's
    # verdict (fail) disagree.
    assert {(r.provenance.labeller, r.provenance.method, r.provenance.human) for r in items} == {
        ("Ada <ada@example.org>", "blind-review", False)
    }
    assert sum(1 for r in items if r.item.kind == "near_miss") == judge_failed
    # ...and the draft task passes validation as a draft of the failed run's task.
    draft = yaml.safe_load((task_dir / "task_9001.yml").read_text(encoding="utf-8"))
    assert draft["meta"]["status"] == "draft"
    first = read_review(review).samples[0]  # the sample whose rubric failed
    assert tasks["task_9001"].prompt == tasks[first.task_id].prompt
    assert invoke("validate", str(task_dir / "task_9001.yml"))[0] == 0
    # Importing the same review twice is refused (a new file is a new calibration version).
    code, out = invoke(
        "review", "import", str(review), *args, "--task-dir", str(task_dir),
        "--labeller", "Ada <ada@example.org>", "--not-human",
    )  # fmt: skip
    assert code == 1 and "was imported already" in out


def test_a_review_file_that_showed_the_verdicts_is_not_imported_as_blind() -> None:
    # The 2026-12-02 review (version 1) showed the judge's outcome beside each label.
    with pytest.raises(ReviewError, match="version 1 review files showed the judge's verdict"):
        read_review(TASK_SPECS_DIR / "reviews" / "review_2026-12-02.yml")


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
