"""The stored judgement and classification forms validate back into the same objects."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from datagouv_eval_pipeline.core.judges.judgement_record import (
    StoredClassification,
    classification_to_json,
)
from datagouv_eval_pipeline.core.judges.verdict import (
    CallClassification,
    ClassifiedAction,
    Question,
    Verdict,
    VerdictStatus,
)

STORED: TypeAdapter[CallClassification] = TypeAdapter(StoredClassification)


def _classification(judge_id: str) -> CallClassification:
    verdict = Verdict(
        question=Question.CLASSIFICATION,
        status=VerdictStatus.OK,
        passed=True,
        reason="it fetches the dataset",
        judge_id=judge_id,
        prompt_hash="p1",
        input_tokens=120,
        output_tokens=30,
    )
    action = ClassifiedAction("get.dataset.info", {"dataset_id": "d1"})
    return CallClassification(call_id="call_4", actions=(action,), verdict=verdict)


@pytest.mark.parametrize(
    ("judge_id", "model"), [("llm:mistral/small", "mistral/small"), ("rules@1", None)]
)
def test_a_stored_classification_round_trips_with_its_model(
    judge_id: str, model: str | None
) -> None:
    classification = _classification(judge_id)
    stored = classification_to_json(classification)
    assert stored["model"] == model
    again = STORED.validate_python(stored)
    assert again == classification
    assert STORED.dump_python(again, mode="json") == stored


def test_a_classification_without_a_verdict_names_the_field() -> None:
    stored = classification_to_json(_classification("rules@1"))
    del stored["verdict"]
    with pytest.raises(ValidationError) as caught:
        STORED.validate_python(stored)
    assert caught.value.errors()[0]["loc"] == ("verdict",)
