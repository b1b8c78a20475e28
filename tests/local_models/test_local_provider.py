"""The ``llama_cpp`` provider kind: validated in models.yml, served from the model's settings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from datagouv_eval_pipeline.core.benchmark.config import ModelsFile, ProviderKind
from datagouv_eval_pipeline.world.local_models import LlamaServerError, served_model, server_spec
from datagouv_eval_pipeline.world.local_models.plumbing import TOOLS_TEMPLATE


def _models(provider: dict[str, Any], **model: Any) -> dict[str, Any]:
    entry = {
        "name": "tiny",
        "active": False,
        "input_price_per_mtok": 0,
        "output_price_per_mtok": 0,
        **model,
    }
    return {"currency": "EUR", "providers": [{"name": "local", **provider, "models": [entry]}]}


def test_a_llama_cpp_model_is_served_from_its_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MODELS", "/models")
    models = ModelsFile.model_validate(
        _models(
            {"kind": "llama_cpp", "threads": 2, "concurrency": 1, "timeout_s": 900},
            gguf="$MODELS/tiny.gguf",
            chat_template_file="chatml_tools.jinja",
            context_window=8192,
            max_output_tokens=256,
            temperature=0,
        )
    )
    model = served_model("local/tiny", models)
    assert model is not None and model.kind == ProviderKind.LLAMA_CPP
    assert model.base_url is None and model.api_key_env is None
    spec = server_spec(model)
    assert spec.gguf == Path("/models/tiny.gguf")
    assert spec.alias == "tiny"
    assert spec.context_window == 8192 and spec.max_output_tokens == 256
    assert spec.threads == 2 and spec.slots == 1
    assert spec.chat_template_file == TOOLS_TEMPLATE
    assert served_model("local/other", models) is None


@pytest.mark.parametrize(
    ("provider", "model", "message"),
    [
        ({"kind": "llama_cpp"}, {}, "a llama_cpp model needs its gguf file"),
        (
            {"kind": "llama_cpp", "base_url": "http://127.0.0.1:8080/v1"},
            {"gguf": "m.gguf"},
            "a llama_cpp provider takes no base_url",
        ),
        (
            {"kind": "openai_compatible", "base_url": "http://h/v1", "api_key_env": "K"},
            {"gguf": "m.gguf"},
            r"only a llama_cpp provider takes models\.0 \(tiny\) gguf",
        ),
        ({"kind": "offline", "threads": 2}, {}, "only a llama_cpp provider takes threads"),
    ],
)
def test_misplaced_server_settings_are_refused(
    provider: dict[str, Any], model: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        ModelsFile.model_validate(_models(provider, **model))


def test_an_unknown_template_names_the_ones_shipped() -> None:
    models = ModelsFile.model_validate(
        _models({"kind": "llama_cpp"}, gguf="m.gguf", chat_template_file="nope.jinja")
    )
    model = served_model("local/tiny", models)
    assert model is not None
    with pytest.raises(LlamaServerError, match=r"'nope\.jinja'.*chatml_tools\.jinja"):
        server_spec(model)


def test_a_llama_cpp_judge_passes_validation_before_its_server_exists(tmp_path: Path) -> None:
    from datagouv_eval_pipeline.cli.validate import judge_errors

    models = ModelsFile.model_validate(_models({"kind": "llama_cpp"}, gguf="absent.gguf"))
    judge = tmp_path / "judge.yml"
    judge.write_text("kind: hybrid\nmodel: local/tiny\n", encoding="utf-8")
    assert judge_errors(judge, models) == []
    judge.write_text("kind: hybrid\nmodel: local/other\n", encoding="utf-8")
    assert "no model 'other'" in judge_errors(judge, models)[0].message
