"""A cassette recorded in one process replays in a fresh one with zero misses.

Nothing per-process reaches the model: tool descriptions, MCP results and sandbox outputs carry
production URLs, so the replaying process (its own twin, on another random port) sends the
very requests that were recorded.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from datagouv_eval_pipeline.world.api.server import TwinServer
from datagouv_eval_pipeline.world.replay import ReplayConfig, ReplayServer

from .fresh_replay import KEY_ENV, Script, run_cells, summary

REPO = Path(__file__).resolve().parents[3]


def test_a_recording_replays_in_a_fresh_process_with_zero_misses(
    twin: TwinServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The recording proxy forwards the key it reads from the environment at request time.
    monkeypatch.setenv(KEY_ENV, "sk-test-fresh-process-key")
    upstream = ReplayServer(ReplayConfig(mode="scripted", responder=Script()))
    with upstream:
        recorder = ReplayConfig(
            mode="record",
            cassettes_dir=tmp_path,
            upstream_url=upstream.base_url,
            upstream_api_key_env=KEY_ENV,
        )
        with ReplayServer(recorder) as proxy:
            recorded = summary(run_cells(proxy, twin.urls))
    assert [run["status"] for run in recorded] == ["ok", "ok"], recorded
    assert sorted(path.name for path in tmp_path.glob("*.json")) == ["code.json", "mcp-0.2.26.json"]
    # Production URLs only in what the model saw.
    seen = json.dumps(recorded)
    assert "https://www.data.gouv.fr/" in seen and twin.urls.site not in seen
    fresh = subprocess.run(
        [sys.executable, "-m", "tests.agents.runner.fresh_replay", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert fresh.returncode == 0, fresh.stderr[-3000:]
    replayed = json.loads(fresh.stdout.strip().splitlines()[-1])
    assert replayed["twin"] != twin.urls.site  # another twin, on another port
    assert replayed["misses"] == []
    assert replayed["summary"] == json.loads(json.dumps(recorded))
