"""The run store: atomic per-cell documents and failure records beside them."""

from pathlib import Path

import pytest

from datagouv_eval_pipeline.pipeline.experiment.store import (
    RunStore,
    RunStoreError,
    write_json_atomic,
)

KEY = "offline~baseline-oneshot__mcp@0.2.26__data_gouv_context"


def test_write_then_read_round_trips_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "store")
    path = store.write("agent_runs", KEY, {"traces": [{"task_id": "task_0002"}], "n": 1})
    assert path == tmp_path / "store" / "agent_runs" / f"{KEY}.json"
    assert store.read("agent_runs", KEY) == {"traces": [{"task_id": "task_0002"}], "n": 1}
    assert [p.name for p in path.parent.iterdir()] == [f"{KEY}.json"]
    assert list(store.cell_keys("agent_runs")) == [KEY]


def test_a_missing_document_reads_as_none_and_require_names_what_to_run(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    assert store.read("judge_scores", KEY) is None
    with pytest.raises(RunStoreError, match="materialize judge_scores") as error:
        store.require("judge_scores", KEY)
    assert KEY in str(error.value)
    assert list(store.cell_keys("judge_scores")) == []


def test_an_interrupted_write_keeps_the_previous_document(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    store.write("agent_runs", KEY, {"version": 1})

    class Unserialisable:
        def __str__(self) -> str:
            raise RuntimeError("boom while serialising")

    with pytest.raises(RuntimeError, match="boom"):
        store.write("agent_runs", KEY, {"version": 2, "bad": Unserialisable()})
    assert store.read("agent_runs", KEY) == {"version": 1}
    # The temporary file was removed: only the good document is left.
    assert sorted(p.name for p in (tmp_path / "agent_runs").iterdir()) == [f"{KEY}.json"]


def test_a_failure_never_replaces_the_last_good_document(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    store.write("agent_runs", KEY, {"traces": ["good"]})
    failure = store.record_failure("agent_runs", KEY, "RuntimeError: provider down")
    assert store.read("agent_runs", KEY) == {"traces": ["good"]}
    recorded = store.failure("agent_runs", KEY)
    assert recorded == failure
    assert recorded is not None
    assert (recorded.stage, recorded.cell_key, recorded.reason) == (
        "agent_runs",
        KEY,
        "RuntimeError: provider down",
    )
    # The failure record is not a document of its own.
    assert list(store.cell_keys("agent_runs")) == [KEY]


def test_a_failure_without_any_earlier_document_leaves_none(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    store.record_failure("agent_runs", KEY, "boom")
    assert store.read("agent_runs", KEY) is None
    assert store.failure("agent_runs", KEY) is not None


def test_a_successful_write_clears_the_failure_record(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    store.record_failure("agent_runs", KEY, "boom")
    store.write("agent_runs", KEY, {"traces": []})
    assert store.failure("agent_runs", KEY) is None
    # Failures are per stage: another stage's write does not clear it.
    store.record_failure("agent_runs", KEY, "boom again")
    store.write("judge_scores", KEY, {"scores": []})
    assert store.failure("agent_runs", KEY) is not None


def test_invalid_json_and_non_objects_are_errors_naming_the_file(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    path = store.path("agent_runs", KEY)
    path.parent.mkdir(parents=True)
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(RunStoreError, match="not valid JSON") as error:
        store.read("agent_runs", KEY)
    assert str(path) in str(error.value)
    write_json_atomic(path, [1, 2])
    with pytest.raises(RunStoreError, match="expected a JSON object"):
        store.read("agent_runs", KEY)


@pytest.mark.parametrize("bad", ["../escape", "a/b", ".hidden"])
def test_keys_that_would_escape_the_stage_directory_are_refused(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError, match="not a cell key"):
        RunStore(tmp_path).path("agent_runs", bad)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b'{"cell": "\xff\xfe"}', "not UTF-8 text (byte 10: b'\\xff')"),
        (b"\xef\xbb\xbf\x80", "not UTF-8 text (byte 3: b'\\x80')"),
        (b"[" * 100_000 + b"]" * 100_000, "not valid JSON (nested too deeply)"),
        (b"", "not valid JSON (Expecting value: line 1 column 1 (char 0))"),
    ],
)
def test_a_document_is_an_error_naming_the_file_whatever_its_bytes(
    tmp_path: Path, content: bytes, problem: str
) -> None:
    store = RunStore(tmp_path)
    path = store.path("action_mappings", KEY)
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    with pytest.raises(RunStoreError) as error:
        store.read("action_mappings", KEY)
    assert str(error.value) == f"{path}: {problem}"


def test_an_unreadable_document_or_failure_record_is_an_error_naming_the_file(
    tmp_path: Path,
) -> None:
    store = RunStore(tmp_path)
    store.path("agent_runs", KEY).mkdir(parents=True)  # a directory where the file should be
    with pytest.raises(RunStoreError, match=r"agent_runs/.*\.json: cannot read \(Is a directory"):
        store.read("agent_runs", KEY)
    record = store.record_failure("judge_scores", KEY, "boom")
    assert store.failure("judge_scores", KEY) == record
    failed = next((tmp_path / "judge_scores").glob("*.failed.json"))
    failed.write_bytes(b'{"reason": "\xff"}')
    with pytest.raises(RunStoreError, match="not UTF-8 text"):
        store.failure("judge_scores", KEY)
    failed.write_text('{"reason": 3}', encoding="utf-8")
    with pytest.raises(RunStoreError, match="expected a failure record with stage, cell_key"):
        store.failure("judge_scores", KEY)
