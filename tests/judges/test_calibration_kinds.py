"""Calibration per verdict kind: kappa worked out by hand, the bootstrap interval, the labelled
set drawn from the pipeline's runs (version-2 files), and edited tasks caught by their hashes."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from datagouv_eval_pipeline.core.judges.calibration import (
    CALIBRATION_DIR,
    KAPPA_REQUIRED,
    MIN_KAPPA_ITEMS,
    TRAJECTORY_PASS_SCORE,
    CalibrationError,
    CalibrationRow,
    agreement,
    bootstrap_kappa,
    calibrate,
    judged_outcome,
    load_calibration,
    refused_kappa,
    restricted,
    target_sha,
)
from datagouv_eval_pipeline.core.judges.deterministic import DeterministicJudge
from datagouv_eval_pipeline.core.judges.verdict import Question, Verdict, VerdictStatus
from tests.judges.judges_factories import real_tasks

REVIEW_FILE = CALIBRATION_DIR / "review_2026-12-02.yml"


def _row(kind: str, human: str, judge: str, item: str = "x") -> CalibrationRow:
    question = Question.FAILURE_MODE if kind == "failure_mode" else Question.CRITERION
    if judge == "unscored":
        verdict = Verdict(
            question=question,
            status=VerdictStatus.UNSCORED,
            error="needs an LLM judge",
            judge_id="j@1",
            prompt_hash=f"h-{kind}",
        )
    else:
        verdict = Verdict(
            question=question,
            status=VerdictStatus.OK,
            passed=judge == "pass",
            judge_id="j@1",
            prompt_hash=f"h-{kind}",
        )
    return CalibrationRow(item, "task_0002", None, "pass", human, judge, verdict, kind)  # type: ignore[arg-type]


def test_kappa_per_verdict_kind_matches_the_hand_count() -> None:
    # criterion: 12 (pass, pass), 3 (pass, fail), 3 (fail, pass), 12 (fail, fail), 6 unscored.
    #   p_o = 24/30; human pass 15/30, judge pass 15/30: p_e = 0.25 + 0.25 = 0.5;
    #   kappa = (0.8 - 0.5) / 0.5 = 0.6, on n = 30 decided items (the least kappa is given on).
    rows = (
        [_row("criterion", "pass", "pass")] * 12
        + [_row("criterion", "pass", "fail"), _row("criterion", "fail", "pass")] * 3
        + [_row("criterion", "fail", "fail")] * 12
        + [_row("criterion", "fail", "unscored")] * 6
    )
    # failure_mode: 3 (pass, pass), 2 (fail, pass), 1 (fail, fail): 6 items, kappa refused.
    rows += [_row("failure_mode", "pass", "pass")] * 3
    rows += [_row("failure_mode", "fail", "pass")] * 2 + [_row("failure_mode", "fail", "fail")]
    report = agreement("j@1", rows, resamples=500)
    criterion = report.kinds["criterion"]
    assert (criterion.items, criterion.scored, criterion.agreements) == (36, 30, 24)
    assert criterion.kappa.value == pytest.approx(0.6)
    assert criterion.coverage.value == pytest.approx(30 / 36)
    assert criterion.prompt_hashes == ("h-criterion",)
    assert not criterion.meets_requirement  # 0.6 < 0.8
    modes = report.kinds["failure_mode"]
    assert modes.kappa.value is None
    assert modes.kappa.reason == "fewer than 30 labelled items (n=6)"
    assert (modes.interval.low, modes.interval.high, modes.interval.defined) == (None, None, 0)
    assert not modes.meets_requirement
    assert (modes.human_pass, modes.judge_pass) == (3, 5)
    assert set(report.kinds) == {"criterion", "failure_mode"}  # kinds without items are absent
    assert KAPPA_REQUIRED == 0.8
    text = report.render()
    assert "  criterion        36    30  0.833   0.600  [" in text
    assert "  failure_mode      6     6  1.000     n/a  n/a below  (fewer than 30 labelled" in text
    assert "below" in text


def test_kappa_is_refused_on_fewer_than_30_labelled_items() -> None:
    # 12 items, all agreeing on both labels: kappa would be 1.0 (the argument kappa).
    twelve = [_row("criterion", "pass", "pass")] * 6 + [_row("criterion", "fail", "fail")] * 6
    report = agreement("j@1", twelve, resamples=100)
    assert MIN_KAPPA_ITEMS == 30
    for kappa in (report.kappa, report.kinds["criterion"].kappa):
        assert (kappa.value, kappa.reason) == (None, "fewer than 30 labelled items (n=12)")
    # 29 is refused, 30 is given: 15 (pass, pass) + 15 (fail, fail) agree perfectly.
    assert refused_kappa([(True, True)] * 15 + [(False, False)] * 14, 29).value is None
    assert refused_kappa([(True, True)] * 15 + [(False, False)] * 15, 30).value == 1.0
    # 40 labelled items but 20 decided by the judge: n of kappa is 20, refused.
    decided = [(True, True)] * 10 + [(False, False)] * 10
    assert refused_kappa(decided, 40).reason == (
        "fewer than 30 labelled items decided by the judge (n=20 of 40)"
    )
    text = report.render()
    assert "Cohen's kappa (scored items): n/a  (fewer than 30 labelled items (n=12))" in text
    assert "no kappa on fewer than 30 items" in text


def test_the_bootstrap_interval_brackets_kappa_and_is_reproducible() -> None:
    pairs = [(True, True)] * 4 + [(True, False), (False, True)] + [(False, False)] * 4
    interval = bootstrap_kappa(pairs, resamples=2000, seed=1)
    assert interval.low is not None and interval.high is not None
    assert interval.low < 0.6 < interval.high
    assert interval.low >= -1.0 and interval.high <= 1.0
    assert interval == bootstrap_kappa(pairs, resamples=2000, seed=1)
    assert interval.defined <= interval.resamples == 2000
    # Perfect agreement on both labels: kappa is 1 in every resample where it is defined.
    perfect = bootstrap_kappa([(True, True)] * 5 + [(False, False)] * 5, resamples=300)
    assert (perfect.low, perfect.high) == (1.0, 1.0)
    # One label only: kappa is never defined, and the interval says so.
    single = bootstrap_kappa([(True, True)] * 4, resamples=100)
    assert (single.low, single.high, single.defined) == (None, None, 0)
    assert bootstrap_kappa([]).low is None


def test_a_trajectory_passes_from_its_pass_score() -> None:
    def graded(score: float) -> Verdict:
        return Verdict(
            question=Question.TRAJECTORY,
            status=VerdictStatus.OK,
            score=score,
            judge_id="j",
            prompt_hash="h",
        )

    assert TRAJECTORY_PASS_SCORE == 0.75
    assert judged_outcome("trajectory", graded(0.75)) == "pass"
    assert judged_outcome("trajectory", graded(0.74)) == "fail"
    assert judged_outcome("criterion", graded(0.1)) == "unscored"  # no binary decision


def test_the_labelled_set_covers_every_kind_both_tiers_declines_code_and_mcp() -> None:
    items = load_calibration([CALIBRATION_DIR], real_tasks())
    reviewed = [r for r in items if r.sample is not None]
    assert len(reviewed) >= 200
    kinds = Counter(r.item.verdict_kind for r in reviewed)
    assert set(kinds) == {"criterion", "arguments", "trajectory", "failure_mode"}
    tiers = {
        (
            r.item.verdict_kind,
            r.item.tier or ("minimal" if r.criterion in r.task.criteria("minimal") else "optimal"),
        )
        for r in reviewed
    }
    assert {tier for _, tier in tiers} == {"minimal", "optimal"}
    assert all(r.item.note.strip() for r in reviewed)  # one-line rationale each
    assert {r.task.expected_behaviour.value for r in reviewed} == {"answer", "decline"}
    cells = {r.sample.run_id.split("|")[0] for r in reviewed if r.sample is not None}
    assert any("__mcp@" in cell for cell in cells)
    assert any("__code" in cell for cell in cells)
    assert all(r.item.origin.startswith("review:") for r in reviewed)


def test_the_deterministic_judge_on_the_reviewed_set() -> None:
    items = [r for r in load_calibration([REVIEW_FILE], real_tasks())]
    report = asyncio.run(calibrate(DeterministicJudge(), items, resamples=200))
    refused = {}
    for name, k in report.kinds.items():
        # kappa from this kind's own confusion counts, by the formula.
        rows = [row for row in report.rows if row.verdict_kind == name and row.judge != "unscored"]
        n = len(rows)
        if min(n, k.items) < 30:
            refused[name] = k.kappa.reason
            assert k.kappa.value is None
            continue
        tp = sum(1 for r in rows if r.human == "pass" and r.judge == "pass")
        tn = sum(1 for r in rows if r.human == "fail" and r.judge == "fail")
        human_pass = sum(1 for r in rows if r.human == "pass") / n
        judge_pass = sum(1 for r in rows if r.judge == "pass") / n
        expected = human_pass * judge_pass + (1 - human_pass) * (1 - judge_pass)
        assert k.kappa.value == pytest.approx(((tp + tn) / n - expected) / (1 - expected)), name
        assert k.prompt_hashes == (report.rows[0].verdict.prompt_hash,)
    # The argument kappa (1.0 once) rested on 12 decided items: it is refused now.
    assert refused["arguments"] == (
        f"fewer than 30 labelled items decided by the judge (n={report.kinds['arguments'].scored}"
        " of 42)"
    )
    # The rules decide every trajectory; MISINTERPRETATION and its kind stay for an LLM.
    assert report.kinds["trajectory"].coverage.value == 1.0
    assert report.kinds["failure_mode"].coverage.value is not None
    assert report.kinds["failure_mode"].coverage.value < 1.0


def test_an_edited_chain_or_required_action_makes_its_items_an_error(tmp_path: Path) -> None:
    data = yaml.safe_load(REVIEW_FILE.read_text(encoding="utf-8"))
    trajectory = next(i for i in data["items"] if i["verdict_kind"] == "trajectory")
    arguments = next(i for i in data["items"] if i["verdict_kind"] == "arguments")
    sample = next(s for s in data["samples"] if s["id"] == arguments["sample"])
    assert arguments["target_sha"] == target_sha(
        real_tasks()[arguments["task_id"]], arguments["tier"], arguments["required_index"]
    )
    trajectory["target_sha"] = "000000000000"
    arguments["candidate"] = len(sample["instances"]) + 3
    unlabelled = dict(trajectory, id="no-note", note="")
    data["items"] = [trajectory, arguments]
    path = tmp_path / "edited.yml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    with pytest.raises(CalibrationError) as caught:
        load_calibration([path], real_tasks())
    text = str(caught.value)
    assert f"item '{trajectory['id']}': target_sha: the {trajectory['tier']} chain" in text
    assert f"item '{arguments['id']}': candidate: sample '{sample['id']}' has" in text
    data["items"] = [unlabelled]
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    with pytest.raises(CalibrationError, match="a one-line rationale is required"):
        load_calibration([path], real_tasks())


def test_figures_on_the_blind_labels_alone_are_those_of_their_rows() -> None:
    # 30 blind rows: 12 (pass, pass), 3 (pass, fail), 3 (fail, pass), 12 (fail, fail): kappa
    # 0.6 as above; 20 verdict-shown rows that all agree would lift the pooled figure.
    blind = (
        [_row("criterion", "pass", "pass")] * 12
        + [_row("criterion", "pass", "fail"), _row("criterion", "fail", "pass")] * 3
        + [_row("criterion", "fail", "fail")] * 12
    )
    blind = [replace(row, method="blind-review") for row in blind]
    shown = [replace(_row("criterion", "pass", "pass"), method="verdict-shown")] * 10 + [
        replace(_row("criterion", "fail", "fail"), method="verdict-shown")
    ] * 10
    report = agreement("j@1", blind + shown, resamples=200)
    assert report.label_methods == ("blind-review", "verdict-shown")
    # All 50: p_o = 44/50, p_e = 0.5: kappa = (0.88 - 0.5) / 0.5 = 0.76.
    assert report.kappa.value == pytest.approx(0.76)
    only = restricted(report, "blind", resamples=200)
    assert only is not None
    assert (only.label_set, only.label_methods, only.total) == ("blind", ("blind-review",), 30)
    assert only.kappa.value == pytest.approx(0.6)
    assert restricted(agreement("j@1", shown, resamples=10), "blind") is None
