from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from datagouv_eval_pipeline.cli import main
from tests.judges.judges_factories import EXAMPLES


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def test_calibrate_deterministic_reports_coverage_accuracy_and_kappa() -> None:
    code, out = invoke("calibrate", "--judge", "deterministic", "--json")
    assert code == 0
    report = json.loads(out)
    assert report["judge_id"] == "deterministic@2"
    assert (report["total"], report["scored"]) == (58, 46)
    assert report["accuracy"]["value"] == pytest.approx(35 / 46)
    assert report["kappa"]["value"] == pytest.approx(516 / 1022)
    assert report["confusion"]["fail"]["unscored"] == 5
    code, text = invoke("judge", "calibrate")
    assert code == 0
    assert "Cohen's kappa (scored items): 0.505" in text
    assert "disagreements:" in text


@pytest.mark.parametrize(
    ("judge", "message"),
    [
        ("nope/model", "unknown judge model 'nope/model'"),
        ("offline/baseline-oneshot", "offline baseline policy, not an LLM"),
        ("mistral/mistral-small-2603", "needs its API key in $MISTRAL_API_KEY"),
    ],
)
def test_calibrate_with_an_unusable_model_says_why(
    judge: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MISTRAL_API_KEY", raising=False)
    code, out = invoke("calibrate", "--judge", judge)
    assert code == 1
    assert message in out


def test_judge_trace_prints_every_verdict() -> None:
    code, out = invoke("judge", "trace", str(EXAMPLES / "task_0002_mcp.json"))
    assert code == 0
    document = json.loads(out)
    assert document["judge_id"] == "deterministic@2"
    assert [c["verdict"]["status"] for c in document["criteria"]] == [
        "ok",
        "unscored",
        "ok",
        "unscored",
        "ok",
    ]
    assert document["tiers"]["optimal"]["trajectory"]["score"] == pytest.approx(0.8)


def test_review_sample_then_import_review(tmp_path: Path) -> None:
    run = tmp_path / "run-a"
    run.mkdir()
    for name in ("task_0002_mcp.json", "task_0002_mcp_wrong.json"):
        shutil.copy(EXAMPLES / name, run / name)
    review = tmp_path / "review.csv"
    code, out = invoke("review-sample", str(run), "--per-run", "2", "--out", str(review))
    assert code == 0
    assert "wrote 10 rows (2 answers, 1 passed every check)" in out
    with review.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    rows[0]["human_verdict"] = "pass"
    with review.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    target = tmp_path / "reviewed.yml"
    code, out = invoke("judge", "import-review", str(review), "--into", str(target))
    assert code == 0
    assert "added 1 item(s)" in out and "skipped 9 unannotated" in out
    code, out = invoke("calibrate", "--set", str(target), "--json")
    assert code == 0
    assert json.loads(out)["total"] == 1


def test_a_judge_config_sets_a_model_per_role(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from datagouv_eval_pipeline.cli.judge import _build_judge

    monkeypatch.setenv("MISTRAL_API_KEY", "test-key-not-used")
    config = tmp_path / "judge.yml"
    config.write_text(
        "default: {model: mistral/mistral-small-2603}\n"
        "roles:\n"
        "  failure_modes: {model: mistral/mistral-large-2512, temperature: null}\n"
        "max_concurrency: 4\n"
        "requests_per_minute: 120\n",
        encoding="utf-8",
    )
    judge = _build_judge("ignored/when-config-has-default", config, tmp_path / "cache", None)
    assert judge.model_ids == {
        "default": "mistral/mistral-small-2603",
        "failure_modes": "mistral/mistral-large-2512",
    }
    # Both roles count against the mistral quota of models.yml, shared with mistral's agents.
    assert judge.limiter_keys == {"default": "mistral", "failure_modes": "mistral"}
    assert judge.limiter_of("default").limit.requests_per_minute == 60
    assert judge.cache is not None and judge.cache.path.parent == tmp_path / "cache"
    bad = tmp_path / "bad.yml"
    bad.write_text("default: {model: x/y}\nroles: {grading: {model: x/y}}\n", encoding="utf-8")
    with pytest.raises(Exception, match="invalid judge config"):
        _build_judge("x/y", bad, None, None)
