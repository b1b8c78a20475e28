"""The trace format parses what models really send and rejects what it cannot read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from datagouv_eval_pipeline.core.traces import Trace, load_trace


def _trace(arguments: object) -> dict[str, object]:
    return {
        "task_id": "task_0002",
        "tool_calls": [{"id": "c1", "name": "x", "arguments": arguments}],
    }


def test_json_string_arguments_become_an_object() -> None:
    trace = Trace.model_validate(_trace('{"query": "catalogue", "page_size": 5}'))
    assert trace.tool_calls[0].arguments == {"query": "catalogue", "page_size": 5}


@pytest.mark.parametrize("empty", ["", None])
def test_empty_arguments_are_an_empty_object(empty: object) -> None:
    assert Trace.model_validate(_trace(empty)).tool_calls[0].arguments == {}


def test_a_string_that_is_not_a_json_object_is_an_error_not_an_empty_dict() -> None:
    with pytest.raises(ValueError, match="not valid JSON"):
        Trace.model_validate(_trace("{query: catalogue"))
    with pytest.raises(ValueError, match="JSON object"):
        Trace.model_validate(_trace("[1, 2]"))


def test_load_trace_names_the_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"task_id": "t", "latency": 3}), encoding="utf-8")
    with pytest.raises(ValueError) as error:
        load_trace(path)
    assert str(path) in str(error.value)
    assert "latency" in str(error.value)


def test_load_trace_names_the_file_of_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    path.write_bytes(b'{"task_id": "task_0002", "answer": "\xff\xfe"}')
    with pytest.raises(ValueError) as raised:
        load_trace(path)
    assert str(raised.value) == (
        f"{path}: not UTF-8 text (byte 0xff at offset 36); a trace is UTF-8 JSON"
    )


def test_total_tokens_adds_input_and_output() -> None:
    trace = Trace.model_validate(
        {"task_id": "t", "usage": {"input_tokens": 120, "output_tokens": 30}}
    )
    assert trace.usage.total_tokens == 150
