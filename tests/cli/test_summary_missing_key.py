"""The experiment summary names an unset API key every time, older results or not.

A real OpenAI-compatible server on 127.0.0.1 plays the provider; the agent stage runs on a real
Dagster instance and the summary is read from its result, as ``datagouv-eval experiment`` does.
The first run has the key and caches a result; the second, without the key, adds a task: the
cell shows the older result, and the new run was not done for want of the key.
"""

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from datagouv_eval_pipeline.cli.experiment_summary import exit_code, summarise, summary_lines
from datagouv_eval_pipeline.core.benchmark.cells import Cell, CellModel
from datagouv_eval_pipeline.core.benchmark.config import ProviderKind
from datagouv_eval_pipeline.defs.partitions import CELLS_BY_KEY
from datagouv_eval_pipeline.pipeline.agents.output import FINAL_ANSWER_TOOL
from datagouv_eval_pipeline.world.replay import tool_call_completion
from tests.cli.one_cell_run import run_one_cell
from tests.providers.scripted_server import Reply, ScriptedServer

KEY_ENV = "SUMMARY_TEST_API_KEY"
KEY_REASON = (
    f"set the environment variable {KEY_ENV} to the API key of provider 'acme' "
    "(it is read from the environment only, never from a file)"
)
BASE = CELLS_BY_KEY["offline~baseline-oneshot__none__data_gouv_context"]


def _answers(body: dict[str, Any]) -> Reply:
    final = {"answer": "Aucun jeu trouvé.", "declined": True, "cited_urls": [], "ids_used": []}
    return Reply(200, tool_call_completion(str(body["model"]), [(FINAL_ANSWER_TOOL, final)]))


@pytest.fixture
def provider() -> Iterator[tuple[ScriptedServer, Cell]]:
    with ScriptedServer(_answers) as server:
        model = CellModel(
            provider="acme",
            name="model-0",
            kind=ProviderKind.OPENAI_COMPATIBLE,
            base_url=server.base_url,
            api_key_env=KEY_ENV,
            input_price_per_mtok=None,
            output_price_per_mtok=None,
            currency="EUR",
        )
        key = "acme~model-0__none__data_gouv_context"
        yield server, dataclasses.replace(BASE, key=key, model=model)


def test_an_unset_key_is_named_even_when_the_cell_has_an_older_result(
    tmp_path: Path, provider: tuple[ScriptedServer, Cell], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, cell = provider
    store = tmp_path / "store"
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        monkeypatch.setenv(KEY_ENV, "sk-local-test-key")
        first = summarise(run_one_cell(cell, ["task_0002"], store, instance))
        assert server.requests == 1
        assert first.missing_keys == {} and first.idle_cells == {}

        monkeypatch.delenv(KEY_ENV)
        result = run_one_cell(cell, ["task_0002", "task_0003"], store, instance)
    summary = summarise(result)
    assert server.requests == 1  # task_0002 from the cache, task_0003 not asked
    assert (summary.executed, summary.reused) == (0, 1)
    assert summary.idle_cells == {}  # the older result hid the key before
    assert summary.missing_keys == {KEY_REASON: [cell.key]}
    assert (
        f"KEY MISSING in 1 cell(s), only results from the cache: {KEY_REASON} [{cell.key}]"
        in summary_lines(summary)
    )
    assert exit_code(result.success, summary, interrupted=False) == 0


def test_a_cell_with_no_result_names_its_key_once(
    tmp_path: Path, provider: tuple[ScriptedServer, Cell], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, cell = provider
    monkeypatch.delenv(KEY_ENV, raising=False)
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        result = run_one_cell(cell, ["task_0002"], tmp_path / "store", instance)
    summary = summarise(result)
    assert server.requests == 0
    assert summary.idle_cells == {KEY_REASON: [cell.key]}
    assert summary.missing_keys == {}  # already named on the NO RESULT line
    # The cell was selected and scored nothing: the user must act, the exit code says so.
    assert summary.unscored_for_key == [cell.key]
    assert exit_code(result.success, summary, interrupted=False) == 1
