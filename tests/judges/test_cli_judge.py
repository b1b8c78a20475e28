from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
import yaml
from click.testing import CliRunner

from datagouv_eval_pipeline.cli import main
from datagouv_eval_pipeline.core.judges.calibration import (
    CALIBRATION_DIR,
    LABEL_SETS,
    load_calibration,
)
from tests.judges.judges_factories import EXAMPLES, real_tasks


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


V1 = str(CALIBRATION_DIR / "criteria_v1.yml")


def test_the_top_level_calibrate_is_judge_calibrate_with_its_own_help() -> None:
    listing = invoke("--help")[1]
    (line,) = [row for row in listing.splitlines() if row.strip().startswith("calibrate")]
    assert "Agreement of a judge with the labels of the calibration set" in line
    code, text = invoke("calibrate", "--help")
    # The same command: only the usage line differs, naming the path it was called by.
    assert code == 0 and text == invoke("judge", "calibrate", "--help")[1].replace(
        " judge calibrate [OPTIONS]", " calibrate [OPTIONS]"
    )
    assert "--set" in text


def test_calibrate_deterministic_reports_coverage_accuracy_and_kappa(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    code, out = invoke("calibrate", "--set", V1, "--json", "--warehouse", str(db))
    assert code == 0
    report = json.loads(out.split("\nstored ")[0])
    assert report["judge_id"] == "deterministic@3"
    # Figures worked out in tests/judges/test_calibration.py (every item decided by its
    # criterion's assertion or hints).
    assert (report["total"], report["scored"]) == (58, 58)
    assert report["accuracy"]["value"] == pytest.approx(50 / 58)
    assert report["kappa"]["value"] == pytest.approx(1176 / 1640)
    assert report["confusion"]["fail"]["unscored"] == 0
    assert report["verdict_kinds"]["criterion"]["kappa"]["value"] == pytest.approx(1176 / 1640)
    code, text = invoke("judge", "calibrate", "--set", V1, "--no-store")
    assert code == 0
    assert "Cohen's kappa (scored items): 0.717" in text
    assert "  criterion        58    58  1.000   0.717  [" in text
    assert "disagreements:" in text
    with duckdb.connect(str(db), read_only=True) as conn:
        rows = conn.execute(
            "SELECT judge_id, verdict_kind, items, scored, kappa, ci_low <= kappa, "
            "kappa <= ci_high, meets_requirement, calibration_files "
            "FROM eval.judge_calibration ORDER BY verdict_kind"
        ).fetchall()
    assert rows == [
        (
            "deterministic@3",
            "all",
            58,
            58,
            pytest.approx(1176 / 1640),
            True,
            True,
            False,
            "criteria_v1.yml",
        ),
        (
            "deterministic@3",
            "criterion",
            58,
            58,
            pytest.approx(1176 / 1640),
            True,
            True,
            False,
            "criteria_v1.yml",
        ),
    ]
    # The same judge on the same labels replaces its rows.
    assert invoke("calibrate", "--set", V1, "--warehouse", str(db))[0] == 0
    with duckdb.connect(str(db), read_only=True) as conn:
        assert conn.execute("SELECT count(*) FROM eval.judge_calibration").fetchone() == (2,)


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
    assert document["judge_id"] == "deterministic@3"
    # Every criterion of task_0002 is decided (hints, assertions or the citation check).
    assert [c["verdict"]["status"] for c in document["criteria"]] == ["ok"] * 5
    assert document["tiers"]["optimal"]["trajectory"]["score"] == pytest.approx(0.8)


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


def _as_blind(source: Path, target: Path) -> None:
    """The reviewed labels as if they had been given blind (a test's relabelling of the file)."""
    data = yaml.load(source.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
    data["provenance"] = {
        "labeller": "Ada <ada@example.org>",
        "method": "blind-review",
        "human": True,
    }
    target.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")


def test_calibration_restricted_to_blind_labels_records_its_label_set(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    # No blind label in the set: refused, saying what the set holds.
    code, out = invoke("calibrate", "--set", V1, "--labels", "blind", "--no-store")
    assert code == 1
    assert "no blind-review labels in the calibration set (it holds 58 written)" in out
    blind = tmp_path / "blind.yml"
    _as_blind(CALIBRATION_DIR / "review_2026-12-02.yml", blind)
    both = ["--set", V1, "--set", str(blind), "--warehouse", str(db)]
    code, out = invoke("calibrate", *both, "--labels", "blind")
    assert code == 0, out
    assert "labels: blind (242 blind-review)" in out
    code, out = invoke("calibrate", *both)
    assert code == 0, out
    assert "labels: all (242 blind-review, 58 written)" in out
    with duckdb.connect(str(db), read_only=True) as conn:
        rows = conn.execute(
            "SELECT label_set, label_methods, items FROM eval.judge_calibration "
            "WHERE verdict_kind = 'all' ORDER BY label_set"
        ).fetchall()
    assert rows == [("all", "blind-review,written", 300), ("blind", "blind-review", 242)]


def test_a_file_without_provenance_reads_as_unrecorded_and_not_blind(tmp_path: Path) -> None:
    data = yaml.load(
        (CALIBRATION_DIR / "review_2026-12-02.yml").read_text(encoding="utf-8"),
        Loader=yaml.CSafeLoader,
    )
    assert data["provenance"]["method"] == "verdict-shown"
    assert data["provenance"]["human"] is False
    del data["provenance"]
    old = tmp_path / "old.yml"
    old.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    items = load_calibration([old], real_tasks())
    assert {(r.provenance.labeller, r.provenance.method, r.provenance.human) for r in items} == {
        ("unrecorded", "verdict-shown", False)
    }
    v1 = yaml.safe_load(Path(V1).read_text(encoding="utf-8"))
    del v1["provenance"]
    (tmp_path / "v1").mkdir()
    (tmp_path / "v1" / "v1.yml").write_text(yaml.safe_dump(v1), encoding="utf-8")
    written = load_calibration([tmp_path / "v1"], real_tasks())
    assert {r.provenance.method for r in written} == {"written"}


def test_the_cli_offers_every_label_set() -> None:
    text = invoke("judge", "calibrate", "--help")[1]
    assert "[all|blind|verdict-shown|written]" in text
    assert f"[{'|'.join(LABEL_SETS)}]" in text
