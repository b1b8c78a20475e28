"""The releases the benchmark configuration accepts for the twin are the ones it serves."""

from __future__ import annotations

from datagouv_eval_pipeline.base.vocabulary import TWIN_MCP_RELEASES
from datagouv_eval_pipeline.world.mcp.versions import VERSIONS


def test_the_named_twin_releases_are_the_emulated_ones() -> None:
    assert list(TWIN_MCP_RELEASES) == list(VERSIONS)
