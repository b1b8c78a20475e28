from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from datagouv_eval_pipeline.experiment.catalog import twin_catalog_lookup
from datagouv_eval_pipeline.judges.calibration import CalibrationError, load_calibration
from datagouv_eval_pipeline.judges.review import (
    REVIEW_COLUMNS,
    import_review,
    read_review,
    review_sample,
    write_review,
)
from tests.judges.judges_factories import EXAMPLES, real_tasks

CATALOG = twin_catalog_lookup()  # the snapshot the example traces were run against


def make_run(root: Path, name: str, files: list[str]) -> Path:
    directory = root / name / "traces"
    directory.mkdir(parents=True)
    for file in files:
        shutil.copy(EXAMPLES / file, directory / file)
    (root / name / "summary.json").write_text('{"not": "a trace"}', encoding="utf-8")
    return root / name


ALL = [
    "task_0002_code.json",
    "task_0002_mcp.json",
    "task_0002_mcp_wrong.json",
    "task_0011_mcp_decline.json",
]


def test_the_sample_includes_answers_that_passed_every_check(tmp_path: Path) -> None:
    runs = {"r1": make_run(tmp_path, "r1", ALL)}
    # 3 of the 4 example traces pass every check; only task_0002_mcp_wrong does not.
    rows, notices = review_sample(
        runs, real_tasks(), per_run=2, seed=1, passed_share=0.25, catalog=CATALOG
    )
    samples = {row.sample_id: row.passed_every_check for row in rows}
    assert len(samples) == 2
    # round(2 * 0.25) = 0, but at least one passed trace is drawn when any exists.
    assert sorted(samples.values()) == [False, True]
    assert "r1/traces/task_0002_mcp_wrong" in samples
    assert notices == ["r1: 1 JSON file(s) that are not traces skipped"]
    # One row per criterion of the task, both tiers, with the deterministic outcome.
    wrong = [row for row in rows if row.sample_id == "r1/traces/task_0002_mcp_wrong"]
    assert [row.criterion_index for row in wrong] == [0, 1, 2, 3, 4]
    assert [row.judge_outcome for row in wrong] == ["fail", "unscored", "fail", "unscored", "fail"]
    assert all(row.human_verdict == "" for row in rows)
    again, _ = review_sample(
        runs, real_tasks(), per_run=2, seed=1, passed_share=0.25, catalog=CATALOG
    )
    assert again == rows  # the same seed draws the same sample


def test_a_short_run_is_reported_and_only_passed_traces_fill_it(tmp_path: Path) -> None:
    runs = {"small": make_run(tmp_path, "small", ALL[:2])}
    rows, notices = review_sample(runs, real_tasks(), per_run=3, passed_share=0.0, catalog=CATALOG)
    assert len({row.sample_id for row in rows}) == 2
    assert "small: only 2 trace(s) available for 3 asked" in notices


def annotate(path: Path, verdicts: dict[tuple[str, int], tuple[str, str]]) -> None:
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        key = (row["sample_id"], int(row["criterion_index"]))
        if key in verdicts:
            row["human_verdict"], row["human_note"] = verdicts[key]
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(REVIEW_COLUMNS))
        writer.writeheader()
        writer.writerows(rows)


def test_annotations_feed_the_calibration_set(tmp_path: Path) -> None:
    runs = {"r1": make_run(tmp_path / "runs", "r1", ["task_0002_mcp_wrong.json"])}
    rows, _ = review_sample(runs, real_tasks(), per_run=1, catalog=CATALOG)
    review = tmp_path / "review.csv"
    write_review(rows, review)
    sample = "r1/traces/task_0002_mcp_wrong"
    annotate(
        review,
        {
            (sample, 0): ("fail", "1 500 is not 2076"),
            (sample, 1): ("FAIL", "no source given"),  # case does not matter
            (sample, 2): ("pass", "disagrees with the rules"),
        },
    )
    target = tmp_path / "calibration" / "reviewed.yml"
    result = import_review(read_review(review), real_tasks(), target, origin="review.csv")
    assert (result.added, result.skipped_blank, result.skipped_existing) == (3, 2, 0)
    items = {r.item.id: r for r in load_calibration([target], real_tasks())}
    first = items["review-r1-traces-task-0002-mcp-wrong-c0"].item
    assert (first.human, first.kind, first.note) == ("fail", "fail", "1 500 is not 2076")
    assert first.origin == "review:review.csv"
    assert first.answer.startswith("Environ 1\u00a0500 jeux de données")
    # Tool evidence comes from the trace file, clipped, so an LLM judge can see it.
    assert [e.tool for e in first.tool_evidence][:2] == ["search_datasets", "query_resource_data"]
    # The reviewer disagreed with the exported rule outcome: a near miss.
    assert items["review-r1-traces-task-0002-mcp-wrong-c2"].item.kind == "near_miss"
    # Importing twice adds nothing.
    again = import_review(read_review(review), real_tasks(), target, origin="review.csv")
    assert (again.added, again.skipped_existing) == (0, 3)


def test_jsonl_round_trip_and_invalid_annotations(tmp_path: Path) -> None:
    runs = {"r1": make_run(tmp_path / "runs", "r1", ["task_0002_mcp.json"])}
    rows, _ = review_sample(runs, real_tasks(), per_run=1, catalog=CATALOG)
    review = tmp_path / "review.jsonl"
    write_review(rows, review)
    records = read_review(review)
    assert len(records) == 5
    records[0]["human_verdict"] = "maybe"
    records[1]["human_verdict"] = "pass"
    records[1]["criterion_sha"] = "000000000000"
    target = tmp_path / "reviewed.yml"
    with pytest.raises(CalibrationError) as caught:
        import_review(records, real_tasks(), target, origin="review.jsonl")
    assert caught.value.problems == [
        "review.jsonl: row 2: human_verdict: expected 'pass', 'fail' or blank, got 'maybe'",
        "review.jsonl: row 3: criterion_sha: the criterion changed since the export (now "
        "70a1eeb04219); re-review it against the current text",
    ]
    assert not target.exists()  # nothing is written when any row is wrong
