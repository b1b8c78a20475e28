"""Request and generation settings in models.yml: validated, carried by cells, part of the key."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from datagouv_eval_pipeline.core.benchmark.cells import expand_cells
from datagouv_eval_pipeline.core.benchmark.config import ModelCallSettings
from datagouv_eval_pipeline.core.benchmark.loader import (
    BenchmarkConfigErrors,
    load_benchmark_config,
)
from datagouv_eval_pipeline.pipeline.experiment.lanes import provider_slots
from tests.benchmark.benchmark_fixtures import write_config

ALBERT = "    api_key_env: ALBERT_API_KEY\n"
GPT_OSS = "      - name: openai/gpt-oss-120b\n"
PROVIDER = "    timeout_s: 600\n    retries: 0\n    concurrency: 1\n"
MODEL = (
    "        temperature: 0.2\n        top_p: 0.9\n        seed: 7\n"
    "        max_output_tokens: 512\n        stop: ['</answer>']\n        context_window: 8192\n"
)


def _write(tmp_path: Path, provider: str = "", model: str = "", offline: str = "") -> Path:
    config_dir = write_config(tmp_path / "benchmark")
    models = config_dir / "models.yml"
    text = models.read_text(encoding="utf-8")
    text = text.replace(ALBERT, ALBERT + provider, 1).replace(GPT_OSS, GPT_OSS + model, 1)
    text = text.replace("    kind: offline\n", "    kind: offline\n" + offline, 1)
    models.write_text(text, encoding="utf-8")
    return config_dir


def test_settings_reach_the_cell_its_record_and_its_key(tmp_path: Path) -> None:
    config = load_benchmark_config(_write(tmp_path, PROVIDER, MODEL))
    cells = [c for c in expand_cells(config) if c.model.provider == "albert"]
    assert cells
    expected = {
        "timeout_s": 600.0,
        "retries": 0,
        "temperature": 0.2,
        "top_p": 0.9,
        "seed": 7,
        "max_output_tokens": 512,
        "stop": ["</answer>"],
        "context_window": 8192,
    }
    digest = hashlib.sha256(
        json.dumps(expected, sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()[:8]
    for cell in cells:
        assert cell.model.settings.record() == expected
        assert cell.to_record().model_settings == expected
        assert cell.key.startswith(f"albert~openai~gpt-oss-120b@{digest}__")
        # The provider's quota is the model's, whatever its settings.
        assert cell.model.quota_key == "albert~openai~gpt-oss-120b"
    assert provider_slots(config)["albert"] == 1


def test_models_without_settings_keep_their_keys_and_records(tmp_path: Path) -> None:
    cells = expand_cells(load_benchmark_config(_write(tmp_path)))
    assert all("@" not in cell.model.key for cell in cells)
    assert all(cell.to_record().model_settings is None for cell in cells)
    assert ModelCallSettings().tag() is None
    assert ModelCallSettings().request_timeout_s == 180.0


def test_a_changed_setting_is_another_cell(tmp_path: Path) -> None:
    def keys(directory: Path) -> set[str]:
        cells = expand_cells(load_benchmark_config(directory))
        return {cell.key for cell in cells if cell.model.provider == "albert"}

    cold = keys(_write(tmp_path / "a", model="        temperature: 0\n"))
    warm = keys(_write(tmp_path / "b", model="        temperature: 0.7\n"))
    slow = keys(_write(tmp_path / "c", provider="    timeout_s: 600\n"))
    assert len(cold) == len(warm) == len(slow)
    assert not cold & warm and not cold & slow and not warm & slow


@pytest.mark.parametrize(
    ("provider", "model", "offline", "path", "message"),
    [
        ("    timeout_s: 0\n", "", "", "providers[1].timeout_s", "greater than 0"),
        ("    retries: -1\n", "", "", "providers[1].retries", "greater than or equal to 0"),
        ("    concurrency: 0\n", "", "", "providers[1].concurrency", "greater than or equal"),
        ("", "        temperature: 3\n", "", "providers[1].models[0].temperature", "less than"),
        ("", "        top_p: 0\n", "", "providers[1].models[0].top_p", "greater than 0"),
        ("", "        seed: lucky\n", "", "providers[1].models[0].seed", "valid integer"),
        (
            "",
            "        max_output_tokens: 0\n",
            "",
            "providers[1].models[0].max_output_tokens",
            "greater than or equal to 1",
        ),
        ("", "        stop: ['']\n", "", "providers[1].models[0].stop", "empty string"),
        (
            "",
            "        context_window: 4096\n        max_output_tokens: 4096\n",
            "",
            "providers[1].models[0]",
            "must be smaller than context_window",
        ),
        ("", "        temprature: 0.1\n", "", "providers[1].models[0].temprature", "unknown key"),
        ("    slots: 2\n", "", "", "providers[1]", "`slots` is now called `concurrency`"),
        ("", "", "    timeout_s: 30\n", "providers[0]", "offline provider takes no timeout_s"),
    ],
)
def test_bad_settings_are_located(
    tmp_path: Path, provider: str, model: str, offline: str, path: str, message: str
) -> None:
    config_dir = _write(tmp_path, provider=provider, model=model, offline=offline)
    with pytest.raises(BenchmarkConfigErrors) as raised:
        load_benchmark_config(config_dir)
    errors = raised.value.errors
    assert [(e.file.name, e.field_path) for e in errors] == [("models.yml", path)]
    assert message in errors[0].message


def test_an_offline_policy_takes_no_generation_settings(tmp_path: Path) -> None:
    config_dir = write_config(tmp_path / "benchmark")
    models = config_dir / "models.yml"
    text = models.read_text(encoding="utf-8").replace(
        "{name: m1, active: true,", "{name: m1, temperature: 0.5, active: true,", 1
    )
    models.write_text(text, encoding="utf-8")
    with pytest.raises(BenchmarkConfigErrors) as raised:
        load_benchmark_config(config_dir)
    (error,) = raised.value.errors
    assert error.field_path == "providers[0]"
    assert "m1" in error.message and "takes no temperature" in error.message
