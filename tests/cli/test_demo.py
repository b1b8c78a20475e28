"""``datagouv-eval demo`` validates the specs, scores the example traces and writes them whole."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from datagouv_eval_pipeline.cli import main
from datagouv_eval_pipeline.cli.demo import EXAMPLE_TRACES_DIR


def test_demo_scores_every_example_trace_and_prints_the_results_path(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["demo", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    written = sorted(tmp_path.glob("*/scores.json"))
    assert len(written) == 1
    assert f"results: {written[0]}" in result.output
    rows = json.loads(written[0].read_text(encoding="utf-8"))
    assert [row["trace"] for row in rows] == sorted(
        p.name for p in EXAMPLE_TRACES_DIR.glob("*.json")
    )
    decline = next(row for row in rows if row["trace"] == "task_0011_mcp_decline.json")
    assert decline["checks"]["behaviour"]["passed"] is True
    # The wrong trace states 1 500 instead of 2 076 and cites an invented id.
    wrong = next(row for row in rows if row["trace"] == "task_0002_mcp_wrong.json")
    assert wrong["checks"]["value"]["passed"] is False
    assert wrong["checks"]["grounded_ids"]["passed"] is False
    assert not list(tmp_path.glob("*/*.partial"))


def test_demo_refuses_a_trace_for_an_unknown_task(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    (traces / "t.json").write_text(json.dumps({"task_id": "task_9999"}), encoding="utf-8")
    result = CliRunner().invoke(main, ["demo", "--traces", str(traces), "--out", str(tmp_path)])
    assert result.exit_code != 0
    assert "task_9999" in result.output
    assert not list(tmp_path.glob("*/scores.json"))
