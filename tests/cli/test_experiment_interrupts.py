"""Ctrl-C and SIGTERM stop ``datagouv-eval experiment`` whatever it waits on (real processes).

Here: while an LLM judge waits on a model that never answers, and before the first stage. The
stage moments are in ``test_experiment_interrupts_early.py`` and ``..._late.py`` (split so that
pytest-xdist runs them side by side); ``interrupt_runs.py`` holds what they share.
"""

from __future__ import annotations

import http.server
import signal
import socketserver
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.command_env import experiment_env
from tests.cli.interrupt_runs import SUCCEEDED, Run, assert_stopped


class _HangingJudge(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint that takes every question and never answers."""

    asked = threading.Event()

    def do_POST(self) -> None:
        _HangingJudge.asked.set()
        time.sleep(600)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def hanging_judge() -> Iterator[str]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _HangingJudge)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_a_signal_while_an_llm_judge_waits_on_its_model_stops_the_run(
    tmp_path: Path, hanging_judge: str
) -> None:
    env = experiment_env(tmp_path, MISTRAL_API_KEY="test-key")
    judge = ["--judge", "llm:mistral/mistral-small-2603", "--judge-base-url", hanging_judge]
    run = Run(env, tmp_path / "llm.log", *judge)
    deadline = time.monotonic() + 900
    while not _HangingJudge.asked.is_set():
        assert run.process.poll() is None and time.monotonic() < deadline, run.output()
        time.sleep(0.2)
    # The question went to the model, which does not answer: the stage is waiting on it.
    assert_stopped(run, run.interrupt(), signal.SIGINT)
    assert "judge_scores" not in run.steps(SUCCEEDED), run.output()


def test_a_signal_before_the_first_stage_stops_before_the_experiment_job(tmp_path: Path) -> None:
    run = Run(experiment_env(tmp_path), tmp_path / "early.log")
    deadline = time.monotonic() + 600
    # The versions' observation jobs run first, then the experiment job.
    while "no dead runs in the local Dagster instance" not in run.output():
        assert run.process.poll() is None and time.monotonic() < deadline, run.output()
        time.sleep(0.05)
    returncode = run.interrupt(signal.SIGTERM)
    output = run.output()
    assert returncode == 130, output
    assert "Traceback" not in output, output
    if run.run_id() is None:  # stopped before the experiment job
        assert "experiment stopped (interrupted by SIGTERM)" in output, output
        assert "before any stage ran: nothing changed" in output, output
    else:  # the job had just started: it stopped at its first stage
        assert_stopped(run, returncode, signal.SIGTERM)
