"""An inactive model of models.yml runs from the command line, in a fresh process, without
editing the tracked YAML: ``run-cell`` by its key, ``experiment`` by ``--models`` and ``--cells``.

The model is ``mistral/mistral-small-2603`` (inactive in the tracked file); its requests go to a
scripted OpenAI-compatible server on 127.0.0.1 (``--model-base-url``), the catalog to the twin.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import duckdb

from tests.cli.command_env import CLI, experiment_env
from tests.providers.scripted_server import ScriptedServer, SearchThenAnswer

KEY = "mistral~mistral-small-2603__mcp@0.2.26__data_gouv_context"
SECRET = {"MISTRAL_API_KEY": "sk-test-inactive-model"}


def test_run_cell_reaches_an_inactive_model(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with ScriptedServer(SearchThenAnswer()) as server:
        done = subprocess.run(
            [
                CLI,
                "run-cell",
                KEY,
                "--tasks",
                "task_0003",
                "--out",
                str(out),
                "--model-base-url",
                server.base_url,
            ],
            env={**experiment_env(tmp_path), **SECRET},
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        sent = server.requests
    assert done.returncode == 0, done.stdout + done.stderr
    trace = json.loads((out / "task_0003__r0.json").read_text(encoding="utf-8"))
    assert trace["status"] == "ok" and trace["model"] == "mistral-small-2603"
    assert trace["provenance"]["cell_key"] == KEY
    assert sent == 2  # the search, then the answer


def test_experiment_runs_only_the_chosen_cell_of_an_inactive_model(tmp_path: Path) -> None:
    env = {**experiment_env(tmp_path), **SECRET}
    choose = ["--models", "mistral/mistral-small-2603", "--cells", "*__mcp@0.2.26__*"]
    with ScriptedServer(SearchThenAnswer()) as server:
        dry = subprocess.run(
            [CLI, "experiment", *choose, "--tasks", "task_0003", "--dry-run"],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert dry.returncode == 0, dry.stdout + dry.stderr
        assert KEY in dry.stdout and "1 cells × 1 tasks" in dry.stdout
        done = subprocess.run(
            [
                CLI,
                "experiment",
                *choose,
                "--tasks",
                "task_0003",
                "--model-base-url",
                server.base_url,
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=1200,
            check=False,
        )
        sent = server.requests
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "1 cells × 1 tasks" in output
    with duckdb.connect(str(tmp_path / "warehouse.duckdb"), read_only=True) as conn:
        runs = conn.execute("SELECT cell_key, status FROM eval.runs").fetchall()
    # Only the chosen cell ran: no offline baseline of the default run, no other mistral cell.
    assert runs == [(KEY, "ok")]
    assert sent == 2
