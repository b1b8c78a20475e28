"""The weekly run's live configuration from the environment, and when a pre-flight stops a run."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from datagouv_eval_pipeline.core.benchmark.cells import Cell, expand_cells
from datagouv_eval_pipeline.core.benchmark.config import ProviderKind
from datagouv_eval_pipeline.core.benchmark.loader import load_benchmark_config
from datagouv_eval_pipeline.pipeline.experiment.documents import (
    CatalogValidationDocument,
    PreflightProbe,
)
from datagouv_eval_pipeline.pipeline.experiment.live import (
    CATALOG_ENV,
    JUDGE_BASE_URL_ENV,
    JUDGE_ENV,
    LiveConfigError,
    live_config,
    offline_only,
    preflight_problem,
)
from datagouv_eval_pipeline.pipeline.preflight.models import (
    PreflightCheckResult,
    TaskReport,
    ValidationReport,
)

SECRET = "sk-test-not-a-real-key-0123456789"


@pytest.fixture(scope="module")
def cells() -> list[Cell]:
    offline = expand_cells(load_benchmark_config())
    base = offline[0]
    mistral = replace(
        base,
        key="mistral~small__none__data_gouv_context",
        model=replace(
            base.model,
            provider="mistral",
            name="mistral-small-2603",
            kind=ProviderKind.OPENAI_COMPATIBLE,
            api_key_env="MISTRAL_API_KEY",
        ),
    )
    return [*offline, mistral]


def test_the_baselines_always_run_and_a_provider_runs_when_its_key_is_set(
    cells: list[Cell],
) -> None:
    without = live_config(cells, {})
    assert (without.live, without.providers) == (True, ("offline",))
    assert without.left_out == {"mistral": "MISTRAL_API_KEY is not set"}
    assert live_config(cells, {"MISTRAL_API_KEY": "  "}).providers == ("offline",)

    with_key = live_config(cells, {"MISTRAL_API_KEY": SECRET})
    assert with_key.providers == ("offline", "mistral")
    assert with_key.left_out == {}
    # The run config carries no secret: the agents read the key from the environment.
    assert SECRET not in repr(with_key.run_config())
    assert with_key.run_config() == {
        "resources": {
            "catalog": {"config": {"live": True}},
            "judge": {"config": {"kind": "deterministic", "model": ""}},
        }
    }


def test_the_weekly_catalog_may_stay_on_the_twin(cells: list[Cell]) -> None:
    assert live_config(cells, {CATALOG_ENV: "twin"}).live is False
    assert live_config(cells, {CATALOG_ENV: "LIVE"}).live is True
    with pytest.raises(LiveConfigError, match="expected 'live' or 'twin'"):
        live_config(cells, {CATALOG_ENV: "prod"})


def test_an_llm_judge_needs_its_key(cells: list[Cell]) -> None:
    environ = {JUDGE_ENV: "hybrid:mistral/mistral-small-2603"}
    with pytest.raises(LiveConfigError, match="MISTRAL_API_KEY is not set") as error:
        live_config(cells, environ)
    assert JUDGE_ENV in str(error.value)
    config = live_config(cells, environ | {"MISTRAL_API_KEY": SECRET})
    assert config.judge == {"kind": "hybrid", "model": "mistral/mistral-small-2603"}
    # A gateway (or a replay server) in front of the judge answers without our key.
    gateway = live_config(cells, environ | {JUDGE_BASE_URL_ENV: "http://127.0.0.1:9/v1"})
    assert gateway.judge["base_url"] == "http://127.0.0.1:9/v1"


def test_a_bad_judge_choice_is_named(cells: list[Cell]) -> None:
    with pytest.raises(LiveConfigError, match=JUDGE_ENV):
        live_config(cells, {JUDGE_ENV: "oracle"})


def test_the_twins_emulations_cannot_run_live(cells: list[Cell]) -> None:
    emulated = next(c for c in cells if c.mcp_version == "0.2.26" and c.mcp_source == "twin")
    assert "twin's emulation" in (offline_only(emulated) or "")
    assert offline_only(next(c for c in cells if c.capabilities == ())) is None
    code = next(c for c in cells if c.capabilities == ("code",))
    assert offline_only(code) is None
    deployed = replace(emulated, mcp_source="url", mcp_url="https://mcp.data.gouv.fr/mcp")
    assert offline_only(deployed) is None


def _check(outcome: str, reason: str) -> PreflightCheckResult:
    return PreflightCheckResult.model_validate(
        {"fn": "same_title_description", "object_type": "dataset", "object_id": "d1"}
        | {"outcome": outcome, "reason": reason}
    )


def _document(
    statuses: list[str], outcome: str = "failed", probe: bool | None = True
) -> CatalogValidationDocument:
    tasks = [
        TaskReport(
            task_id=f"task_{i:04d}",
            task_version=1,
            spec_hash="h",
            status=status,
            checks=[_check("passed" if status == "ok" else outcome, f"reason {i}")],
        )
        for i, status in enumerate(statuses, start=1)
    ]
    report = ValidationReport(
        urls={},
        source="live",
        now=datetime(2026, 12, 1, tzinfo=UTC),
        baselines_dir="b",
        tasks=tasks,
    )
    detail = "GET https://www.data.gouv.fr/api/1/site/ → HTTP 200"
    if not probe:
        detail = "GET https://www.data.gouv.fr/api/1/site/ failed: ConnectError: refused"
    answered = None if probe is None else PreflightProbe(ok=probe, detail=detail)
    return CatalogValidationDocument(snapshot_id=None, report=report, probe=answered)


def test_when_a_preflight_stops_the_run() -> None:
    assert preflight_problem(None, skip_validation=False) == (
        "no pre-flight report: catalog_validation has not run"
    )
    unreachable = _document(["quarantined", "quarantined"], probe=False)
    assert preflight_problem(unreachable, skip_validation=True) == (
        "the catalog is unreachable: GET https://www.data.gouv.fr/api/1/site/ failed: "
        "ConnectError: refused"
    )
    every = _document(["quarantined", "quarantined"])
    assert preflight_problem(every, skip_validation=False) == (
        "every task is quarantined (2 of 2): nothing would run; task_0001: reason 1"
    )
    # --skip-validation runs quarantined tasks: drift alone does not stop it.
    assert preflight_problem(every, skip_validation=True) is None
    errored = _document(["quarantined", "quarantined"], outcome="error")
    assert preflight_problem(errored, skip_validation=True) == (
        "every pre-flight check errored, e.g. reason 1"
    )
    some = _document(["ok", "quarantined"])
    assert preflight_problem(some, skip_validation=False) is None
    # A run of task_0002 alone, which is quarantined, would run nothing.
    assert preflight_problem(some, skip_validation=False, task_ids=["task_0002"]) == (
        "every selected task is quarantined (1 of 1): nothing would run; task_0002: reason 2"
    )
    assert preflight_problem(some, skip_validation=False, task_ids=["task_0001"]) is None
    # A report written before the probe existed is judged on its checks alone.
    old = _document(["ok"], probe=None)
    assert preflight_problem(old, skip_validation=False) is None
