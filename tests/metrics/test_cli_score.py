from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from datagouv_eval_pipeline.cli import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TASK = str(FIXTURES / "tasks" / "task_0002.yml")
TRACE = str(FIXTURES / "traces" / "task_0002_mcp.json")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["score", *args])
    return result.exit_code, result.stdout, result.stderr


def test_score_prints_the_json_document() -> None:
    code, out, _ = run("--task", TASK, "--trace", TRACE)
    assert code == 0
    document = json.loads(out)
    assert document["task_id"] == "task_0002"
    # minimal tier of the worked example in docs/metrics.md: P = 3/4, R = 1
    assert document["minimal"]["action_precision"] == {"value": 0.75, "reason": None}
    assert document["minimal"]["action_recall"]["value"] == 1.0
    assert document["optimal"]["trajectory_adherence"]["value"] == 0.8
    assert document["checks"]["value"]["passed"] is True
    assert [a["action"] for a in document["actions"]] == [
        "search.datasets",
        "get.dataset.info",
        "get.dataset.resources",
        "get.data",
    ]


def test_accuracy_options_fill_the_efficiency_ratios() -> None:
    code, out, _ = run("--task", TASK, "--trace", TRACE, "--accuracy-minimal", "1", "--compact")
    assert code == 0
    assert "\n" not in out.strip()
    efficiency = json.loads(out)["efficiency"]
    # 1.0 / (9532 / 1000)
    assert efficiency["token_efficiency"]["minimal"]["value"] == 1 / 9.532
    assert efficiency["token_efficiency"]["optimal"]["value"] is None


def test_accuracy_out_of_range_is_a_usage_error() -> None:
    code, _, err = run("--task", TASK, "--trace", TRACE, "--accuracy-minimal", "1.5")
    assert code == 2
    assert "--accuracy-minimal" in err


def test_invalid_trace_names_the_file_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"task_id": "task_0002", "tool_calls": [{"id": 1}]}', encoding="utf-8")
    code, _, err = run("--task", TASK, "--trace", str(bad))
    assert code == 1
    assert str(bad) in err
    assert "tool_calls.0.name" in err


def test_invalid_task_names_the_file_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "task_0002.yml"
    text = (FIXTURES / "tasks" / "task_0002.yml").read_text(encoding="utf-8")
    bad.write_text(text.replace("expected_behaviour: answer", "expected_behavior: answer"))
    code, _, err = run("--task", str(bad), "--trace", TRACE)
    assert code == 1
    assert str(bad) in err
    assert "expected_behavior" in err


def test_trace_of_another_task_is_an_error(tmp_path: Path) -> None:
    other = tmp_path / "other.json"
    data = json.loads(Path(TRACE).read_text(encoding="utf-8"))
    data["task_id"] = "task_0005"
    other.write_text(json.dumps(data), encoding="utf-8")
    code, _, err = run("--task", TASK, "--trace", str(other))
    assert code == 1
    assert "task_0005" in err


def test_unknown_mcp_version_warns_and_still_prints(tmp_path: Path) -> None:
    local = tmp_path / "local.json"
    data = json.loads(Path(TRACE).read_text(encoding="utf-8"))
    data["mcp_version"] = "local"
    local.write_text(json.dumps(data), encoding="utf-8")
    code, out, err = run("--task", TASK, "--trace", str(local))
    assert code == 0
    assert "warning" in err and "'local'" in err
    assert json.loads(out)["minimal"]["action_f1"]["value"] is None
