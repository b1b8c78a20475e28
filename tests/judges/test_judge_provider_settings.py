"""The judge follows its provider's ``concurrency``, ``timeout_s`` and ``retries`` in models.yml.

A one-slot local server (it answers one request at a time, like a llama.cpp server started
with one slot) runs the whole calibration set: the judge keeps one request open at a time,
so none waits in the server's queue behind seven others, and every item is decided.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pydantic_ai.models
import pytest

from datagouv_eval_pipeline.core.benchmark.loader import load_benchmark_config
from datagouv_eval_pipeline.core.judges.calibration import (
    CALIBRATION_DIR,
    calibrate,
    load_calibration,
)
from datagouv_eval_pipeline.core.judges.config import (
    RETRY_DELAY_ENV,
    JudgeKind,
    JudgeSpec,
    JudgeSpecError,
    load_judge_spec,
)
from datagouv_eval_pipeline.core.judges.factory import build_judge
from datagouv_eval_pipeline.core.judges.llm import LLMJudge
from datagouv_eval_pipeline.pipeline.experiment.catalog import twin_catalog_lookup
from tests.benchmark.benchmark_fixtures import write_config
from tests.judges.judge_server import grading
from tests.judges.judges_factories import real_tasks
from tests.providers.scripted_server import Reply, ScriptedServer

MODEL = "one-slot/openai/gpt-oss-120b"
ALBERT = "    api_key_env: ALBERT_API_KEY\n"


@pytest.fixture(autouse=True)
def _requests_to_the_local_server(monkeypatch: pytest.MonkeyPatch) -> None:
    # Model requests are allowed here: they can only reach the server on 127.0.0.1.
    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)


class OneSlot:
    """Answers one request at a time (the others wait their turn), counting those open."""

    def __init__(self) -> None:
        self._slot = threading.Lock()
        self._count = threading.Lock()
        self.open = 0
        self.most_open = 0

    def __call__(self, body: dict[str, Any]) -> Reply:
        with self._count:
            self.open += 1
            self.most_open = max(self.most_open, self.open)
        try:
            with self._slot:
                return grading(body)
        finally:
            with self._count:
                self.open -= 1


def _models(tmp_path: Path, provider: str) -> Any:
    config_dir = write_config(tmp_path / "benchmark")
    models = config_dir / "models.yml"
    text = models.read_text(encoding="utf-8").replace(ALBERT, ALBERT + provider, 1)
    # A provider of its own: no built-in quota, no limiter shared with another test.
    text = text.replace("  - name: albert\n", "  - name: one-slot\n", 1)
    models.write_text(text, encoding="utf-8")
    return load_benchmark_config(config_dir).models


def _llm(judge: Any) -> LLMJudge:
    assert isinstance(judge, LLMJudge)
    return judge


def test_the_judge_takes_its_providers_settings_unless_it_sets_its_own(tmp_path: Path) -> None:
    spec = JudgeSpec(kind=JudgeKind.LLM, model=MODEL)
    url = "http://127.0.0.1:9/v1"
    local = _models(tmp_path / "a", "    concurrency: 1\n    timeout_s: 900\n    retries: 0\n")
    (guarded,) = _llm(build_judge(spec, local, base_url=url))._guarded.values()
    assert (guarded.max_concurrency, guarded.timeout_s) == (1, 900.0)
    assert _llm(build_judge(spec, local, base_url=url)).retry.retries == 0
    # The judge's own settings win; without either, the judge's defaults.
    own = spec.model_copy(update={"concurrency": 3, "timeout_s": 30.0, "retries": 1})
    judge = _llm(build_judge(own, local, base_url=url))
    (guarded,) = judge._guarded.values()
    assert (guarded.max_concurrency, guarded.timeout_s, judge.retry.retries) == (3, 30.0, 1)
    plain = _llm(build_judge(spec, _models(tmp_path / "b", ""), base_url=url))
    (guarded,) = plain._guarded.values()
    assert (guarded.max_concurrency, guarded.timeout_s, plain.retry.retries) == (8, 60.0, 2)


def test_the_tracked_judge_file_leaves_the_limits_to_the_provider() -> None:
    from datagouv_eval_pipeline.core.benchmark.loader import BENCHMARK_CONFIG_DIR
    from datagouv_eval_pipeline.core.judges.config import JUDGE_FILE

    spec = load_judge_spec(BENCHMARK_CONFIG_DIR / JUDGE_FILE)
    assert (spec.concurrency, spec.timeout_s, spec.retries) == (None, None, None)


def test_the_retry_delay_comes_from_the_file_or_the_environment(tmp_path: Path) -> None:
    path = tmp_path / "judge.yml"
    path.write_text(f"kind: llm\nmodel: {MODEL}\nretry_delay_s: 0.5\n", encoding="utf-8")
    assert load_judge_spec(path, env={}).retry_delay_s == 0.5
    spec = load_judge_spec(path, env={RETRY_DELAY_ENV: " 0.05 "})
    assert spec.retry_delay_s == 0.05
    # The backoff starts at the delay; the jitter never exceeds it.
    url = "http://127.0.0.1:9/v1"
    retry = _llm(build_judge(spec, _models(tmp_path, ""), base_url=url)).retry
    assert (retry.base_delay_s, retry.min_delay_s, retry.jitter_s) == (0.05, 0.05, 0.05)
    default = _llm(
        build_judge(
            JudgeSpec(kind=JudgeKind.LLM, model=MODEL), _models(tmp_path / "b", ""), base_url=url
        )
    ).retry
    assert (default.base_delay_s, default.min_delay_s, default.jitter_s) == (2.0, 0.5, 1.0)
    for bad in ("soon", "-1", "nan"):
        with pytest.raises(JudgeSpecError, match=f"{RETRY_DELAY_ENV}=.*seconds >= 0"):
            load_judge_spec(path, env={RETRY_DELAY_ENV: bad})


def test_a_one_slot_server_judges_the_whole_calibration_set_one_request_at_a_time(
    tmp_path: Path,
) -> None:
    items = load_calibration([CALIBRATION_DIR], real_tasks())
    assert len(items) >= 58
    slot = OneSlot()
    models = _models(tmp_path, "    concurrency: 1\n    timeout_s: 600\n")
    with ScriptedServer(slot) as server:
        judge = build_judge(
            JudgeSpec(kind=JudgeKind.LLM, model=MODEL), models, base_url=server.base_url
        )
        report = asyncio.run(calibrate(judge, items, catalog=twin_catalog_lookup()))
        sent = server.requests
    assert sent > len(items) // 2
    assert slot.most_open == 1
    # Every item decided: no request timed out or failed.
    assert report.scored == report.total == len(items)
