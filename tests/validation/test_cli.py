"""``datagouv-eval preflight`` through click's CliRunner."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from datagouv_eval_pipeline.cli import main
from datagouv_eval_pipeline.core.tasks.loader import TASK_SPECS_DIR, load_task_specs
from datagouv_eval_pipeline.world.catalogue.urls import TwinUrls

from .factories import SPORTS, tasks_checking


def test_preflight_starts_the_twin_and_passes_with_the_committed_baselines() -> None:
    result = CliRunner().invoke(main, ["preflight"])
    assert result.exit_code == 0, result.output
    assert "against twin twin-" in result.output
    assert re.search(r"^task_0004\s+ok\s+4/4$", result.output, re.MULTILINE)
    assert re.search(r"^\d+ ok, 0 quarantined$", result.output, re.MULTILINE)


def test_preflight_with_a_drift_overlay_quarantines_and_exits_1(tmp_path: Path) -> None:
    overlay = tmp_path / "rename.yaml"
    overlay.write_text(
        f"name: rename\nchanges:\n  - {{op: rename_title, type: dataset, id: {SPORTS}, "
        "title: Équipements}\n",
        encoding="utf-8",
    )
    result = CliRunner().invoke(main, ["preflight", "--overlay", str(overlay)])
    assert result.exit_code == 1, result.output
    assert "+ overlay rename" in result.output
    assert re.search(
        r"^task_0004\s+QUARANTINED\s+3/4\s+same_title_description$", result.output, re.M
    )
    assert (
        "      title: 'Recensement des équipements sportifs, espaces et sites de pratiques'"
        " → 'Équipements'"
    ) in result.output
    renamed = tasks_checking(load_task_specs([TASK_SPECS_DIR]), SPORTS, "same_title_description")
    assert {"task_0004", "task_0012"} <= set(renamed)
    assert re.search(rf"quarantined \({', '.join(renamed)}\)$", result.output, re.M)


def test_preflight_json_against_an_api_base(twin: TwinUrls) -> None:
    result = CliRunner().invoke(main, ["preflight", "--api-base", twin.site, "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["urls"]["tabular_api"] == twin.tabular_api
    assert report["quarantined"] == [] and report["ok"]
    assert report["source"] == twin.datagouv_api


def test_missing_baselines_exit_1_with_the_hint(twin: TwinUrls, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["preflight", "--api-base", twin.site, "--baselines", str(tmp_path)]
    )
    assert result.exit_code == 1
    assert "run `datagouv-eval preflight --refresh`" in result.output


def test_refresh_shows_the_diff_and_writes_only_when_confirmed(
    twin: TwinUrls, tmp_path: Path
) -> None:
    runner = CliRunner()
    args = ["preflight", "--refresh", "--api-base", twin.site, "--baselines", str(tmp_path)]
    declined = runner.invoke(main, args, input="n\n")
    assert declined.exit_code == 1
    assert "  added    " in declined.output and "write " in declined.output
    assert "nothing written" in declined.output
    assert list(tmp_path.iterdir()) == []
    accepted = runner.invoke(main, [*args, "--yes"])
    assert accepted.exit_code == 0, accepted.output
    written = sorted(tmp_path.rglob("*.json"))
    assert re.search(rf"wrote {len(written)} baseline change\(s\)", accepted.output)
    assert (tmp_path / "task_0004" / f"dataset-{SPORTS}.json") in written
    again = runner.invoke(main, args)
    assert again.exit_code == 0 and "the baselines are up to date" in again.output


def test_bad_options_are_usage_errors(tmp_path: Path) -> None:
    runner = CliRunner()
    bad_base = runner.invoke(main, ["preflight", "--api-base", "nowhere"])
    assert bad_base.exit_code == 2 and "expected 'live', 'demo'" in bad_base.output
    partial = runner.invoke(main, ["preflight", "--api-base", "site=http://127.0.0.1:1/"])
    assert partial.exit_code == 2 and "missing" in partial.output
    bad_overlay = tmp_path / "o.yaml"
    bad_overlay.write_text("name: x\nchanges: []\n", encoding="utf-8")
    overlay = runner.invoke(main, ["preflight", "--overlay", str(bad_overlay)])
    assert overlay.exit_code == 2 and "changes" in overlay.output
    both = runner.invoke(main, ["preflight", "--overlay", str(bad_overlay), "--api-base", "live"])
    assert both.exit_code == 2
