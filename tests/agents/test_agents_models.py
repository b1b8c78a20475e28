"""The model registry: keys from the environment, Mistral quirks, offline policies."""

from __future__ import annotations

import pytest
from pydantic_ai.models.function import FunctionModel

from datagouv_eval_pipeline.core.benchmark.cells import CellModel
from datagouv_eval_pipeline.core.benchmark.config import ProviderKind
from datagouv_eval_pipeline.pipeline.agents.models import (
    CompatibleChatModel,
    MissingApiKeyError,
    api_key_for,
    base_model,
    live_model,
    normalise_completion,
)

LIVE = CellModel(
    provider="mistral",
    name="mistral-small-2603",
    kind=ProviderKind.OPENAI_COMPATIBLE,
    base_url="https://api.mistral.ai/v1",
    api_key_env="MISTRAL_API_KEY",
    input_price_per_mtok=None,
    output_price_per_mtok=None,
    currency="EUR",
)
OFFLINE = CellModel("offline", "baseline-thorough", ProviderKind.OFFLINE, None, None, 0, 0, "EUR")


def test_mistral_quirks_are_normalised_in_one_place() -> None:
    completion = {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "Bon"}, {"type": "text", "text": "jour"}],
                    "tool_calls": [
                        {"id": "a", "type": None, "function": {"name": "f", "arguments": "{}"}}
                    ],
                }
            }
        ]
    }
    message = normalise_completion(completion)["choices"][0]["message"]
    assert message["content"] == "Bonjour"
    assert message["tool_calls"][0]["type"] == "function"
    untouched = {"choices": [{"message": {"content": "x", "tool_calls": None}}]}
    assert normalise_completion(untouched) == {
        "choices": [{"message": {"content": "x", "tool_calls": None}}]
    }


def test_keys_come_from_the_named_environment_variable_only() -> None:
    assert api_key_for(LIVE, {"MISTRAL_API_KEY": " sk-1 "}) == "sk-1"
    with pytest.raises(MissingApiKeyError) as error:
        api_key_for(LIVE, {"MISTRAL_API_KEY": ""})
    assert "MISTRAL_API_KEY" in str(error.value)
    model = live_model(LIVE, environ={"MISTRAL_API_KEY": "sk-test-secret"})
    assert isinstance(model, CompatibleChatModel)
    assert model.model_name == "mistral-small-2603"
    assert "sk-test-secret" not in repr(model)
    assert model.client.max_retries == 0  # retries are ManagedModel's, honouring Retry-After


def test_offline_models_are_baseline_policies() -> None:
    model = base_model(OFFLINE)
    assert isinstance(model, FunctionModel)
    assert model.model_name == "baseline-thorough"
    with pytest.raises(KeyError):
        base_model(CellModel("offline", "nope", ProviderKind.OFFLINE, None, None, 0, 0, "EUR"))
