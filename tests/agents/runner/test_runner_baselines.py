"""The offline baselines against the real twin over HTTP/MCP, scored with score_trace."""

from __future__ import annotations

import pytest

from datagouv_eval_pipeline.core.benchmark.cells import Cell
from datagouv_eval_pipeline.core.metrics import score_trace
from datagouv_eval_pipeline.core.tasks.spec import TaskSpec
from datagouv_eval_pipeline.core.traces import Trace
from datagouv_eval_pipeline.pipeline.agents.runner import execute_cell, run_cell
from datagouv_eval_pipeline.world.api.server import TwinServer

from .helpers import key_of, variant


def run_one(cells: dict[str, Cell], twin: TwinServer, key: str, task: TaskSpec) -> Trace:
    (trace,) = run_cell(cells[key], [task], twin_urls=twin.urls)
    return trace


PERMITS = "689c42fa521ccf80ce954f83"
PERMITS_RESOURCE = "65a9e264-7a20-46a9-9d98-66becb817bc3"


@pytest.fixture(scope="module")
def task_0005_traces(
    cells: dict[str, Cell], twin: TwinServer, tasks: dict[str, TaskSpec]
) -> dict[str, Trace]:
    return {
        model: run_one(cells, twin, key_of(model, "mcp@0.2.26"), tasks["task_0005"])
        for model in ("baseline-oneshot", "baseline-thorough")
    }


def test_thorough_follows_the_catalog_chain_and_finds_the_count(
    task_0005_traces: dict[str, Trace],
) -> None:
    trace = task_0005_traces["baseline-thorough"]
    assert trace.status == "ok", trace.status_reason
    assert [call.name for call in trace.tool_calls] == [
        "search_datasets",
        "get_dataset_info",
        "list_dataset_resources",
        "get_resource_info",
        "query_resource_data",
        "query_resource_data",
    ]
    # The question's most specific words (v2 search: one hit, the national permits list).
    assert trace.tool_calls[0].arguments == {"query": "autorisations residentiels construire"}
    assert trace.tool_calls[1].arguments == {"dataset_id": PERMITS}
    # The filter is derived from "à Tournefeuille" and the preview's columns and case.
    assert trace.tool_calls[-1].arguments == {
        "resource_id": PERMITS_RESOURCE,
        "filter_column": "ADR_LOCALITE_TER",
        "filter_operator": "exact",
        "filter_value": "TOURNEFEUILLE",
        "page_size": 20,
    }
    assert "1146" in trace.answer
    assert trace.declined is False
    assert PERMITS in (trace.ids_used or [])
    assert not any(call.error for call in trace.tool_calls)
    assert all(call.duration_ms is not None for call in trace.tool_calls)
    # Six tool calls in five requests (dataset info and resources go together), then the answer.
    assert trace.usage.requests == 6
    assert len(trace.requests) == 6
    assert trace.cost == 0.0  # offline models are priced at 0 in models.yml


def test_thorough_beats_oneshot_on_action_recall(
    task_0005_traces: dict[str, Trace], tasks: dict[str, TaskSpec]
) -> None:
    task = tasks["task_0005"]
    thorough = score_trace(task, task_0005_traces["baseline-thorough"])
    oneshot = score_trace(task, task_0005_traces["baseline-oneshot"])
    # Minimal chain: search.datasets > get.dataset.resources > get.data (3 required actions).
    # Thorough performs all three with the required ids; oneshot only searches.
    assert thorough.minimal.action_recall.value == 1.0
    assert oneshot.minimal.action_recall.value == pytest.approx(1 / 3)
    # Optimal adds get.dataset.info and get.resource.profile: 5 required actions.
    assert thorough.optimal.action_recall.value == 1.0
    assert oneshot.optimal.action_recall.value == pytest.approx(1 / 5)
    assert thorough.checks["value"].passed is True
    assert oneshot.checks["value"].passed is False


def test_oneshot_answers_from_its_single_search(task_0005_traces: dict[str, Trace]) -> None:
    trace = task_0005_traces["baseline-oneshot"]
    assert trace.status == "ok"
    assert [call.name for call in trace.tool_calls] == ["search_datasets"]
    assert "Liste des permis de construire et autres autorisations" in trace.answer
    assert trace.ids_used == [PERMITS]
    assert trace.usage.requests == 2


def test_v1_search_of_0_2_19_misses_what_the_v2_search_of_0_2_26_finds(
    cells: dict[str, Cell], twin: TwinServer, tasks: dict[str, TaskSpec]
) -> None:
    """Same policy, same question: only the server's search differs (search.and_semantics).

    MCP 0.2.19 searches API v1 (every word in the title): no title holds the three words, so
    the policy relaxes its query down to "autorisations" and picks an unrelated dataset; 0.2.26
    searches API v2 (title, acronym, organization, tags, fuzzy) and finds the permits list.
    """
    old = run_one(cells, twin, key_of("baseline-thorough", "mcp@0.2.19"), tasks["task_0005"])
    new = run_one(cells, twin, key_of("baseline-thorough", "mcp@0.2.26"), tasks["task_0005"])
    old_queries = [c.arguments["query"] for c in old.tool_calls if c.name == "search_datasets"]
    new_queries = [c.arguments["query"] for c in new.tool_calls if c.name == "search_datasets"]
    assert new_queries == ["autorisations residentiels construire"]
    assert old_queries[0] == new_queries[0] and len(old_queries) > 1
    assert PERMITS in (new.ids_used or []) and PERMITS not in (old.ids_used or [])
    task = tasks["task_0005"]
    assert score_trace(task, new).checks["value"].passed is True
    assert score_trace(task, old).checks["value"].passed is False


def test_mcp_versions_expose_different_tool_surfaces(
    cells: dict[str, Cell], twin: TwinServer, tasks: dict[str, TaskSpec]
) -> None:
    # task_0012 has no MCP constraint and asks for a number: the data step differs by version.
    task = tasks["task_0012"]
    old = execute_cell(cells[key_of("baseline-thorough", "mcp@0.2.5")], [task], twin_urls=twin.urls)
    new = execute_cell(
        cells[key_of("baseline-thorough", "mcp@0.2.26")], [task], twin_urls=twin.urls
    )
    old_names = [call.name for call in old.traces[0].tool_calls]
    new_names = [call.name for call in new.traces[0].tool_calls]
    assert "query_dataset_data" in old_names and "query_resource_data" not in old_names
    assert "query_resource_data" in new_names and "query_dataset_data" not in new_names
    assert old.traces[0].mcp_version == "0.2.5"
    assert new.traces[0].mcp_version == "0.2.26"
    # The tool list is fetched once per version and recorded.
    listed_old = [tool["name"] for tool in old.tool_lists["0.2.5"]]
    listed_new = [tool["name"] for tool in new.tool_lists["0.2.26"]]
    assert "search_dataservices" not in listed_old and "query_dataset_data" in listed_old
    assert "search_organizations" in listed_new and "query_dataset_data" not in listed_new


def test_version_0_2_19_explores_the_first_permits_dataset_it_lists(
    cells: dict[str, Cell], twin: TwinServer, tasks: dict[str, TaskSpec]
) -> None:
    """On 0.2.19 the v1 title search lists two permits datasets with equal text scores.

    The catalogue's "Base des permis de construire et autres autorisations d'urbanisme" comes
    first (ties in id order). Its resources are generated from its export row (every
    catalogue dataset lists its files), so the policy no longer skips it as empty: it probes
    three of them, finds none served by the Tabular API, and answers without a figure. (Before
    the catalogue's datasets listed their resources, it skipped to the hand-written list and
    queried it, sending 0.2.19's required ``question``.)
    """
    prompt = (
        "Combien d'autorisations d'urbanisme compte la liste des permis de construire à "
        "Tournefeuille ?"
    )
    task = tasks["task_0005"].model_copy(update={"prompt": prompt})
    trace = run_one(cells, twin, key_of("baseline-thorough", "mcp@0.2.19"), task)
    assert trace.tool_calls[0].arguments == {"query": "autorisations construire urbanisme"}
    assert [call.name for call in trace.tool_calls[1:]] == [
        "get_dataset_info",
        "list_dataset_resources",
        "get_resource_info",
        "get_resource_info",
        "get_resource_info",
    ]
    assert trace.tool_calls[1].arguments == {"dataset_id": "65df63ec00e28e691495ae6e"}
    assert all("Not available via Tabular API" in c.result for c in trace.tool_calls[3:])
    assert "1146" not in trace.answer


def test_web_search_baseline_uses_the_twin_catalog_index(
    cells: dict[str, Cell], twin: TwinServer, tasks: dict[str, TaskSpec]
) -> None:
    base = cells[key_of("baseline-thorough", "mcp@0.2.26+web_search")]
    cell = variant(base, capabilities=("web_search",), mcp_version=None, mcp_url=None)
    (trace,) = run_cell(cell, [tasks["task_0003"]], twin_urls=twin.urls)
    assert trace.status == "ok", trace.status_reason
    # Every word is required: an empty search is retried with a word fewer (at most 6).
    *searches, fetch = trace.tool_calls
    assert [call.name for call in searches] == ["web_search"] * len(searches)
    assert 1 <= len(searches) <= 6 and fetch.name == "http_fetch"
    url = fetch.arguments["url"]
    # Production URLs, served offline by the twin.
    assert url.startswith("https://www.data.gouv.fr/datasets/")
    assert fetch.result.startswith("HTTP 200")


def test_unsupported_combinations_are_skipped_with_a_reason(
    cells: dict[str, Cell], twin: TwinServer, tasks: dict[str, TaskSpec]
) -> None:
    (trace,) = run_cell(
        cells[key_of("baseline-coder", "mcp@0.2.26")], [tasks["task_0003"]], twin_urls=twin.urls
    )
    assert trace.status == "skipped"
    assert "needs the code capability" in (trace.status_reason or ""), trace.status_reason
    assert trace.tool_calls == [] and trace.answer == ""


def test_without_tools_a_baseline_runs_and_declines(
    cells: dict[str, Cell], twin: TwinServer, tasks: dict[str, TaskSpec]
) -> None:
    (trace,) = run_cell(
        cells[key_of("baseline-thorough", "none")], [tasks["task_0003"]], twin_urls=twin.urls
    )
    assert trace.status == "ok", trace.status_reason
    assert trace.declined is True and trace.tool_calls == []
    assert "aucun outil" in trace.answer
    assert trace.usage.requests == 1


def test_skills_change_what_oneshot_does(
    cells: dict[str, Cell], twin: TwinServer, tasks: dict[str, TaskSpec]
) -> None:
    # The skills document asks to read a dataset's description before relying on it.
    task = tasks["task_0007"]
    (plain,) = run_cell(
        cells[key_of("baseline-oneshot", "mcp@0.2.26")], [task], twin_urls=twin.urls
    )
    (told,) = run_cell(
        cells[key_of("baseline-oneshot", "mcp@0.2.26+skills@0.0.1")], [task], twin_urls=twin.urls
    )
    assert [call.name for call in plain.tool_calls] == ["search_datasets"]
    assert [call.name for call in told.tool_calls] == ["search_datasets", "get_dataset_info"]
    assert "Sa description indique" in told.answer and "Sa description" not in plain.answer


def test_tasks_excluded_by_their_mcp_constraint_are_skipped(
    cells: dict[str, Cell], twin: TwinServer, tasks: dict[str, TaskSpec]
) -> None:
    traces = run_cell(
        cells[key_of("baseline-oneshot", "mcp@0.2.5")],
        [tasks["task_0002"], tasks["task_0003"]],
        twin_urls=twin.urls,
        repeats=2,
    )
    assert [(t.task_id, t.repeat, t.status) for t in traces] == [
        ("task_0002", 0, "skipped"),
        ("task_0002", 1, "skipped"),
        ("task_0003", 0, "ok"),
        ("task_0003", 1, "ok"),
    ]
    assert traces[0].status_reason == ("task task_0002 needs MCP >=0.2.13; the cell runs MCP 0.2.5")
    # Repeats are independent runs of a deterministic policy: same calls.
    assert traces[2].tool_calls[0].arguments == traces[3].tool_calls[0].arguments


def test_traces_carry_provenance(
    task_0005_traces: dict[str, Trace], tasks: dict[str, TaskSpec], twin: TwinServer
) -> None:
    trace = task_0005_traces["baseline-thorough"]
    provenance = trace.provenance
    assert provenance.cell_key == key_of("baseline-thorough", "mcp@0.2.26")
    assert provenance.spec_hash == tasks["task_0005"].spec_hash()
    assert provenance.snapshot_id == twin.store.snapshot_id
    assert provenance.system_prompt == "data_gouv_context"
    assert provenance.system_prompt_sha256 is not None
    assert provenance.started_at is not None and provenance.started_at.endswith("+00:00")
    assert trace.model == "baseline-thorough"
    assert trace.capabilities == ["mcp"]
