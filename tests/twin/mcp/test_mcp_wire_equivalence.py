"""The fast stateless POST path answers byte for byte as the mcp SDK's session manager does."""

from __future__ import annotations

from datagouv_eval_pipeline.world.api.wirecheck import compare_streaming, compare_wire


def test_fast_path_and_sdk_path_give_identical_raw_answers() -> None:
    mismatches = compare_wire()
    assert not mismatches, mismatches[0].describe()


def test_keep_alive_comments_and_notifications_are_framed_as_the_sdk_does() -> None:
    mismatches = compare_streaming()
    assert not mismatches, mismatches[0].describe()
