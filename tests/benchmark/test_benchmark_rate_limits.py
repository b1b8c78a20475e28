"""Rate limits in models.yml: per provider, overridable per model, validated, carried by cells."""

from __future__ import annotations

from pathlib import Path

import pytest

from datagouv_eval_pipeline.core.benchmark.cells import expand_cells
from datagouv_eval_pipeline.core.benchmark.config import ModelRateLimit
from datagouv_eval_pipeline.core.benchmark.loader import (
    BENCHMARK_CONFIG_DIR,
    BenchmarkConfigErrors,
    load_benchmark_config,
)
from tests.benchmark.benchmark_fixtures import write_config

ALBERT = "    api_key_env: ALBERT_API_KEY\n"
GPT_OSS = "      - name: openai/gpt-oss-120b\n"


def _write(tmp_path: Path, provider: str = "", model: str = "", offline: str = "") -> Path:
    config_dir = write_config(tmp_path / "benchmark")
    models = config_dir / "models.yml"
    text = models.read_text(encoding="utf-8")
    assert ALBERT in text and GPT_OSS in text
    text = text.replace(ALBERT, ALBERT + provider, 1).replace(GPT_OSS, GPT_OSS + model, 1)
    text = text.replace("    kind: offline\n", "    kind: offline\n" + offline, 1)
    models.write_text(text, encoding="utf-8")
    return config_dir


def _limits(config_dir: Path) -> dict[str, ModelRateLimit | None]:
    cells = expand_cells(load_benchmark_config(config_dir))
    return {cell.model.name: cell.model.rate_limit for cell in cells}


def test_the_real_configuration_keeps_the_former_defaults() -> None:
    config = load_benchmark_config(BENCHMARK_CONFIG_DIR)
    found = {
        provider.name: provider.rate_limit_for(provider.models[0])
        for provider in config.models.providers
    }
    assert found == {
        "offline": None,
        "mistral": ModelRateLimit(60, None, per_model=False),
        "openai": ModelRateLimit(500, None, per_model=False),
        "albert": ModelRateLimit(10, None, per_model=False),
    }


def test_without_rate_limits_cells_carry_none(tmp_path: Path) -> None:
    assert set(_limits(_write(tmp_path)).values()) == {None}


def test_provider_limits_are_shared_and_model_fields_override_one_by_one(
    tmp_path: Path,
) -> None:
    provider = "    rate_limit: {requests_per_minute: 10, tokens_per_minute: 20000}\n"
    shared = _limits(_write(tmp_path / "a", provider=provider))
    assert shared["openai/gpt-oss-120b"] == ModelRateLimit(10, 20000, per_model=False)
    assert shared["m1"] is None  # the offline provider sets none
    # The model sets its tokens per minute (null: no limit) and inherits the requests.
    model = "        rate_limit: {tokens_per_minute: null}\n"
    own = _limits(_write(tmp_path / "b", provider=provider, model=model))
    assert own["openai/gpt-oss-120b"] == ModelRateLimit(10, None, per_model=True)
    # A model-only limit leaves the other field unlimited.
    alone = _limits(_write(tmp_path / "c", model="        rate_limit: {requests_per_minute: 3}\n"))
    assert alone["openai/gpt-oss-120b"] == ModelRateLimit(3, None, per_model=True)


@pytest.mark.parametrize(
    ("provider", "model", "path", "message"),
    [
        (
            "    rate_limit: {requests_per_minute: 0}\n",
            "",
            "providers[1].rate_limit.requests_per_minute",
            "Input should be greater than 0",
        ),
        (
            "",
            "        rate_limit: {tokens_per_minute: -5}\n",
            "providers[1].models[0].rate_limit.tokens_per_minute",
            "Input should be greater than 0",
        ),
        (
            "    rate_limit: {requests_per_min: 10}\n",
            "",
            "providers[1].rate_limit.requests_per_min",
            "unknown key 'requests_per_min'; allowed keys: requests_per_minute, tokens_per_minute",
        ),
        (
            "    rate_limit: {}\n",
            "",
            "providers[1].rate_limit",
            "an empty rate_limit sets nothing",
        ),
        (
            "    rate_limit: {requests_per_minute: lots}\n",
            "",
            "providers[1].rate_limit.requests_per_minute",
            "Input should be a valid number",
        ),
    ],
)
def test_bad_rate_limits_are_located(
    tmp_path: Path, provider: str, model: str, path: str, message: str
) -> None:
    config_dir = _write(tmp_path, provider=provider, model=model)
    with pytest.raises(BenchmarkConfigErrors) as raised:
        load_benchmark_config(config_dir)
    errors = raised.value.errors
    assert [(e.file.name, e.field_path) for e in errors] == [("models.yml", path)]
    assert message in errors[0].message


def test_rate_limits_stay_out_of_the_cell_key_and_record(tmp_path: Path) -> None:
    plain = {
        cell.key: cell.to_record()
        for cell in expand_cells(load_benchmark_config(_write(tmp_path / "a")))
    }
    limited_dir = _write(tmp_path / "b", provider="    rate_limit: {requests_per_minute: 5}\n")
    limited = {
        cell.key: cell.to_record() for cell in expand_cells(load_benchmark_config(limited_dir))
    }
    assert limited == plain
