from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml

from datagouv_eval_pipeline.core.judges.calibration import (
    CALIBRATION_DIR,
    CalibrationError,
    CalibrationRow,
    agreement,
    calibrate,
    cohen_kappa,
    load_calibration,
)
from datagouv_eval_pipeline.core.judges.deterministic import DeterministicJudge
from datagouv_eval_pipeline.core.judges.verdict import Question, Verdict, VerdictStatus, unscored
from tests.judges.judges_factories import Grader, default_answers, llm_judge, real_tasks

# The deterministic judge's outcome on every item of task_specs/calibration/criteria_v1.yml,
# worked out by hand from the rules in core/judges/deterministic.py (p = pass, f = fail, u =
# unscored).
EXPECTED_DETERMINISTIC = {
    "cal-0002-count-exact": "p",  # pattern, value and unit ("jeux") hold
    "cal-0002-count-words": "f",  # number in words: no pattern match
    "cal-0002-count-wrong": "f",
    "cal-0002-count-today": "f",  # 52 066 is not 2066
    "cal-0002-count-resources": "f",  # assert number: "ressources" is not one of its units
    "cal-0002-source-catalogue": "p",  # assert: "catalogue" and "date de création"
    "cal-0002-method-created-at": "p",
    "cal-0002-method-vague": "p",  # the keyword is there; the method is not checked
    "cal-0002-link-id": "p",
    "cal-0002-link-other-dataset": "f",
    "cal-0001-finess-approximation": "p",
    "cal-0001-finess-as-answer": "f",  # assert: FINESS but no "ne décrit pas les services"
    "cal-0001-annuaire-paraphrase": "f",  # keyword absent
    "cal-0001-no-dataset": "p",  # assert: a decline phrase and "neurolog"
    "cal-0003-merimee": "f",  # assert: neither Palissy nor "objets mobiliers"
    "cal-0004-gers-count": "p",
    "cal-0004-national-figure": "f",
    "cal-0004-installations": "f",  # assert number: "installations" is not a unit of it
    "cal-0004-other-department": "f",  # assert number: no "Gers" or "32" in its sentence
    "cal-0004-identify-dataset": "p",  # assert: the national dataset's title
    "cal-0004-link-page": "p",
    "cal-0004-link-api-only": "f",
    "cal-0005-count": "p",
    "cal-0005-logements": "f",  # assert number: "logements" is not a unit of it
    "cal-0005-insee-code": "p",
    "cal-0005-postal-code": "f",
    "cal-0006-councillors": "p",
    "cal-0006-women": "p",  # assert number: "femmes" is one of its units
    "cal-0006-swapped": "f",  # assert number: "35 conseillers", not women
    "cal-0006-members": "p",  # assert number: "69 membres", Toulouse in the sentence
    "cal-0006-method": "p",
    "cal-0006-code-only": "p",
    "cal-0006-share": "p",  # assert regex: 50-51 %
    "cal-0007-monthly": "p",
    "cal-0007-not-monthly": "p",  # the pattern matches a negated claim
    "cal-0007-weekly": "f",
    "cal-0007-recherche-entreprises": "p",
    "cal-0007-sirene-only": "f",
    "cal-0008-ban": "p",
    "cal-0008-google": "f",
    "cal-0008-search-csv": "p",
    "cal-0008-search-csv-bare": "p",
    "cal-0009-certif-info": "p",
    "cal-0009-file-only": "f",
    "cal-0011-refuses": "p",
    "cal-0011-leaks-anyway": "p",
    "cal-0011-gives-nothing": "p",  # assert: no grade ("/20", "mention ...")
    "cal-0012-visits": "p",
    "cal-0012-downloads": "p",  # "1 276 fois": filler, "téléchargés" earlier in the clause
    "cal-0012-swapped": "f",  # assert number: "3 418 téléchargements", not visits
    "cal-0012-visits-before": "p",
    "cal-0013-recherche-entreprises": "p",
    "cal-0013-sirene": "f",
    "cal-0013-rate-limit": "p",
    "cal-0013-rate-limit-wrong": "p",
    "cal-0014-bonne-alternance": "p",
    "cal-0014-link-fiche": "p",
    "cal-0014-no-link": "f",
}
NAMES = {"p": "pass", "f": "fail", "u": "unscored"}


def load() -> list:  # type: ignore[type-arg]
    return load_calibration([CALIBRATION_DIR / "criteria_v1.yml"], real_tasks())


def test_the_calibration_set_covers_our_tasks_passes_fails_and_near_misses() -> None:
    items = load()
    assert len(items) >= 40
    assert {r.item.id for r in items} == set(EXPECTED_DETERMINISTIC)
    humans = [r.item.human for r in items]
    assert humans.count("pass") == 32 and humans.count("fail") == 26
    kinds = [r.item.kind for r in items]
    assert kinds.count("near_miss") == 22
    assert len({r.item.task_id for r in items}) == 13


def test_deterministic_agreement_matches_the_hand_count() -> None:
    report = asyncio.run(calibrate(DeterministicJudge(), load()))
    assert {row.item_id: row.judge for row in report.rows} == {
        item: NAMES[code] for item, code in EXPECTED_DETERMINISTIC.items()
    }
    # Hand count from the table above against the human verdicts in the YAML file (the criteria
    # of tasks 0001-0014 carry assertions, so every item is decided):
    #   human pass: 30 pass, 2 fail, 0 unscored; human fail: 6 pass, 20 fail, 0 unscored.
    assert report.confusion == {
        "pass": {"pass": 30, "fail": 2, "unscored": 0},
        "fail": {"pass": 6, "fail": 20, "unscored": 0},
    }
    assert (report.total, report.scored) == (58, 58)
    assert report.coverage.value == pytest.approx(1.0)
    assert report.accuracy.value == pytest.approx(50 / 58)  # 30 + 20 agreements
    # p_o = 50/58; humans 32 pass / 26 fail and judge 36 pass / 22 fail among the scored:
    # p_e = (32*36 + 26*22) / 58^2 = 1724/3364; kappa = (2900 - 1724) / (3364 - 1724).
    assert report.kappa.value == pytest.approx(1176 / 1640)
    assert report.by_kind["pass"] == {"total": 29, "scored": 29, "agree": 29}
    assert report.by_kind["near_miss"] == {"total": 22, "scored": 22, "agree": 14}
    text = report.render()
    assert "coverage: 1.000" in text
    assert "human fail         6        20         0" in text


def verdict(passed: bool | None) -> Verdict:
    if passed is None:
        return unscored(Question.CRITERION, "judge timed out", judge_id="j", prompt_hash="h")
    return Verdict(
        question=Question.CRITERION,
        status=VerdictStatus.OK,
        passed=passed,
        judge_id="j",
        prompt_hash="h",
    )


def row(human: str, judge: bool | None, item: str = "x") -> CalibrationRow:
    v = verdict(judge)
    label = "unscored" if judge is None else ("pass" if judge else "fail")
    return CalibrationRow(item, "task_0002", 0, "pass", human, label, v)  # type: ignore[arg-type]


def test_unscored_items_are_coverage_not_disagreements() -> None:
    rows = [row("pass", True), row("fail", False), row("pass", None), row("fail", None)]
    report = agreement("j", rows)
    assert report.accuracy.value == 1.0  # 2 of 2 scored items agree
    assert report.coverage.value == 0.5
    assert report.confusion["pass"]["unscored"] == 1
    nothing = agreement("j", [row("pass", None)])
    assert nothing.accuracy.value is None
    assert nothing.kappa.value is None


def test_cohen_kappa_on_a_worked_example() -> None:
    # 50 items: both say yes on 20, both no on 15, A yes/B no on 5, A no/B yes on 10.
    # p_o = 35/50 = 0.7; p_yes = 25/50 * 30/50 = 0.3; p_no = 25/50 * 20/50 = 0.2; p_e = 0.5;
    # kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4.
    pairs = [(True, True)] * 20 + [(False, False)] * 15 + [(True, False)] * 5
    pairs += [(False, True)] * 10
    assert cohen_kappa(pairs).value == pytest.approx(0.4)
    assert cohen_kappa([(True, True)] * 3).value is None  # chance agreement 1
    assert cohen_kappa([]).value is None


def test_a_stale_criterion_hash_names_the_file_item_and_field(tmp_path: Path) -> None:
    path = tmp_path / "c.yml"
    path.write_text(
        yaml.safe_dump(
            {
                "version": 1,
                "items": [
                    {
                        "id": "stale",
                        "task_id": "task_0002",
                        "criterion": 0,
                        "criterion_sha": "000000000000",
                        "answer": "2076",
                        "human": "pass",
                        "kind": "pass",
                    },
                    {
                        "id": "bad-index",
                        "task_id": "task_0002",
                        "criterion": 9,
                        "criterion_sha": "000000000000",
                        "answer": "x",
                        "human": "fail",
                        "kind": "fail",
                    },
                    {"id": "typo", "task_id": "task_0002", "criterion": 0, "humn": "pass"},
                ],
            }
        ),
        encoding="utf-8",
    )
    with pytest.raises(CalibrationError) as caught:
        load_calibration([path], real_tasks())
    text = str(caught.value)
    assert "items.2.humn (item 'typo'): Extra inputs are not permitted" in text
    path.write_text(
        path.read_text(encoding="utf-8").replace("  humn: pass\n", ""), encoding="utf-8"
    )
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["items"] = data["items"][:2]
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(CalibrationError) as caught:
        load_calibration([path], real_tasks())
    problems = caught.value.problems
    assert problems[0].startswith(f"{path}: item 'stale': criterion_sha: the criterion's text")
    assert "expected d63120a2dd15" in problems[0]
    assert "item 'bad-index': criterion: task_0002 has 5 criteria (0..4), not 9" in problems[1]


def test_an_llm_judge_can_be_calibrated_offline() -> None:
    answers = default_answers()
    # A scripted grader that fails every answer: agreement = the human fail items.
    answers["criterion"] = lambda _: {"passed": False, "grounded": None, "reason": "no"}
    grader = Grader(answers)
    report = asyncio.run(calibrate(llm_judge(grader), load()))
    assert len(grader.requests) == 58
    assert report.scored == 58
    assert report.accuracy.value == pytest.approx(26 / 58)
    # A constant judge agrees exactly as often as chance predicts: kappa 0.
    assert report.kappa.value == pytest.approx(0.0)
    assert report.spend.questions == 58
    evidence_items = [r for r in grader.requests if "Total rows (Tabular API): 2066" in r.prompt]
    assert len(evidence_items) == 1  # the one item that carries tool evidence
