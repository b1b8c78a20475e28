"""Baseline policies on hand-written tool surfaces and results (no twin, no network)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai.tools import ToolDefinition

from datagouv_eval_pipeline.pipeline.agents.baselines import (
    POLICIES,
    ApiBases,
    Call,
    CoderPolicy,
    Observation,
    OneShotPolicy,
    Parallel,
    ThoroughPolicy,
    ToolSurface,
    date_bound,
    derive_filter,
    get_policy,
    keywords,
    metrics_line,
    numbered_items,
    place,
    preview_rows,
    total_rows,
)
from datagouv_eval_pipeline.pipeline.agents.baselines.code import resources_of
from datagouv_eval_pipeline.pipeline.agents.baselines.text import search_terms
from datagouv_eval_pipeline.pipeline.agents.output import FinalAnswer
from tests.agents.baseline_helpers import QUESTION, catalog_tools, surface, tool

FILTERS = ["page", "page_size", "filter_column", "filter_value", "filter_operator"]
SURFACE_0_2_26 = surface(
    *catalog_tools(),
    tool("query_resource_data", ["resource_id"], FILTERS),
    tool("search_dataservices", ["query"]),
    tool("get_dataservice_info", ["dataservice_id"]),
    tool("get_dataservice_openapi_spec", ["dataservice_id"]),
)
SURFACE_0_2_19 = ToolSurface(
    dict(SURFACE_0_2_26.tools)
    | {"query_resource_data": tool("query_resource_data", ["question", "resource_id"], FILTERS)}
)
SURFACE_0_2_5 = surface(*catalog_tools(), tool("query_dataset_data", ["question"], ["dataset_id"]))
SEARCH = """Found 2 dataset(s) for query: 'x'
Page 1 of results:

1. Catalogue des données de data.gouv.fr
   ID: 5d13a8b6634f41070a43dff3
   Resources: 8
   URL: https://www.data.gouv.fr/datasets/catalogue/

2. Autre
   ID: 5d7f5d200f507a42669e0b10
   URL: https://www.data.gouv.fr/datasets/autre/
"""
RESOURCES = """Resources in dataset: Catalogue
Dataset ID: 5d13a8b6634f41070a43dff3
Total resources: 2

1. export-dataset.csv
   Resource ID: f868cca6-8da1-4369-a78d-47463f19a9a3
   Format: csv

2. export-resource.csv
   Resource ID: 787327de-6a80-40ea-8398-9cd3fa801f4e
   Format: csv
"""
RID = "f868cca6-8da1-4369-a78d-47463f19a9a3"
PREVIEW = f"""Querying resource: export-dataset.csv
Resource ID: {RID}
Total rows (Tabular API): 3182
Retrieved: 1 row(s) from page 1
Columns: __id, id, temporal_coverage.start, created_at

Data (1 rows):
  Row 1:
    __id: 1
    id: 4edc96203489e39d3bb8b49b
    temporal_coverage.start: 2011-01-01
    created_at: 2011-12-05T10:00:00
"""


def seen(*steps: tuple[str, dict[str, Any], str]) -> list[Observation]:
    return [Observation(name, args, text, False) for name, args, text in steps]


def test_question_readers() -> None:
    assert keywords("Où trouver les équipements sportifs du Gers ?") == "equipements sportifs gers"
    bound = date_bound(QUESTION)
    assert bound is not None
    assert (bound.operator, bound.value, bound.creation) == ("strictly_less", "2012-06-28", True)
    assert date_bound("depuis le 2024-01-05") is not None
    assert place("le conseil départemental du Gers") is not None
    gers = place("le conseil départemental du Gers")
    assert gers is not None and (gers.name, gers.department) == ("Gers", True)
    toulouse = place("au conseil municipal de Toulouse d'après le répertoire")
    assert toulouse is not None and (toulouse.name, toulouse.department) == ("Toulouse", False)
    assert place("l'open data en France") is None


def test_english_questions_drop_the_country_and_rank_participles_after_nouns() -> None:
    # Every dataset of the catalogue is French: "French" and "France" name none of them.
    assert search_terms("How many French schools are there in France?") == ("schools",)
    # English participles (-ing, -ed) come after the nouns that say which data.
    # Nouns by length (vehicles, app), then the participles by length then alphabet.
    assert search_terms("Developing an app, I need registered vehicles") == (
        "vehicles",
        "app",
        "developing",
        "registered",
    )


def test_result_parsers() -> None:
    items = numbered_items(SEARCH)
    assert [(i.title, i.id, i.url) for i in items] == [
        (
            "Catalogue des données de data.gouv.fr",
            "5d13a8b6634f41070a43dff3",
            "https://www.data.gouv.fr/datasets/catalogue/",
        ),
        ("Autre", "5d7f5d200f507a42669e0b10", "https://www.data.gouv.fr/datasets/autre/"),
    ]
    assert [i.id for i in numbered_items(RESOURCES)] == [
        RID,
        "787327de-6a80-40ea-8398-9cd3fa801f4e",
    ]
    assert total_rows(PREVIEW) == 3182
    columns, rows = preview_rows(PREVIEW)
    assert columns == ["__id", "id", "temporal_coverage.start", "created_at"]
    assert rows[0]["created_at"] == "2011-12-05T10:00:00"
    table = "2026-05      | 3,418           | 1,276\n2026-04 | 1 | 2"
    assert metrics_line(table, "2026-05") == "2026-05 : 3418 visites et 1276 téléchargements"
    # Releases that align the columns with spaces instead of bars.
    aligned = "Month        Visits          Downloads\n2026-05      3,418           1,276\n"
    assert metrics_line(aligned, None) == "2026-05 : 3418 visites et 1276 téléchargements"


def test_derived_filters() -> None:
    columns, rows = preview_rows(PREVIEW)
    # Two date columns: the question is about publication, so the creation date wins.
    derived = derive_filter(QUESTION, columns, rows)
    assert derived is not None
    assert (derived.column, derived.operator, derived.value) == (
        "created_at",
        "strictly_less",
        "2012-06-28",
    )
    towns = [{"Code de la commune": "40192", "Libellé de la commune": "Mont-de-Marsan"}]
    derived = derive_filter("Combien d'élus à Toulouse ?", list(towns[0]), towns)
    assert derived is not None
    assert (derived.column, derived.value) == ("Libellé de la commune", "Toulouse")
    upper = [{"COMM": "31557", "ADR_LOCALITE_TER": "TOURNEFEUILLE"}]
    derived = derive_filter("Combien de permis à Tournefeuille ?", list(upper[0]), upper)
    assert derived is not None and derived.value == "TOURNEFEUILLE"
    assert derive_filter("Combien de lignes ?", columns, rows) is None


def test_oneshot_searches_once_then_answers_with_the_first_hit() -> None:
    policy = OneShotPolicy()
    step = policy.decide(QUESTION, [], SURFACE_0_2_26)
    assert isinstance(step, Call) and step.tool == "search_datasets"
    answer = policy.decide(QUESTION, seen(("search_datasets", step.args, SEARCH)), SURFACE_0_2_26)
    assert isinstance(answer, FinalAnswer)
    assert answer.ids_used == ["5d13a8b6634f41070a43dff3"]
    assert answer.cited_urls == ["https://www.data.gouv.fr/datasets/catalogue/"]
    empty = policy.decide(
        QUESTION, seen(("search_datasets", {}, "No datasets found")), SURFACE_0_2_26
    )
    assert isinstance(empty, FinalAnswer) and empty.declined


def thorough_steps(surface: ToolSurface) -> list[Call]:
    """Drive the thorough policy with canned results until it stops calling tools."""
    policy = ThoroughPolicy()
    results = {
        "search_datasets": SEARCH,
        "get_dataset_info": "Dataset Information: Catalogue\nURL: https://x/",
        "list_dataset_resources": RESOURCES,
        "get_resource_info": "Resource Information: export\n✅ Available via Tabular API",
        "query_resource_data": PREVIEW,
        "query_dataset_data": "   Total rows (Tabular API): 3182",
    }
    history: list[Observation] = []
    calls: list[Call] = []
    for _ in range(12):
        step = policy.decide(QUESTION, history, surface)
        if isinstance(step, FinalAnswer):
            return calls
        batch = step.calls if isinstance(step, Parallel) else (step,)
        for call in batch:
            calls.append(call)
            history.append(Observation(call.tool, call.args, results[call.tool], False))
    raise AssertionError("the policy did not stop")


def test_thorough_asks_for_the_dataset_info_and_resources_together() -> None:
    # Both calls only need the dataset id, so they go out in one response (run concurrently).
    policy = ThoroughPolicy()
    history = seen(("search_datasets", {"query": "x"}, SEARCH))
    step = policy.decide(QUESTION, history, SURFACE_0_2_26)
    assert isinstance(step, Parallel)
    assert [(c.tool, c.args) for c in step.calls] == [
        ("get_dataset_info", {"dataset_id": "5d13a8b6634f41070a43dff3"}),
        ("list_dataset_resources", {"dataset_id": "5d13a8b6634f41070a43dff3"}),
    ]
    # With one of them already answered, only the other is asked.
    history.append(Observation("get_dataset_info", {}, "Dataset Information: x", False))
    single = policy.decide(QUESTION, history, SURFACE_0_2_26)
    assert isinstance(single, Call) and single.tool == "list_dataset_resources"


def test_thorough_adapts_to_each_mcp_version() -> None:
    latest = thorough_steps(SURFACE_0_2_26)
    assert [c.tool for c in latest] == [
        "search_datasets",
        "get_dataset_info",
        "list_dataset_resources",
        "get_resource_info",
        "query_resource_data",
        "query_resource_data",
    ]
    assert latest[-1].args == {
        "resource_id": RID,
        "filter_column": "created_at",
        "filter_operator": "strictly_less",
        "filter_value": "2012-06-28",
        "page_size": 20,
    }
    # 0.2.19 requires `question` on query_resource_data; 0.2.26 has no such parameter.
    assert all("question" in c.args for c in thorough_steps(SURFACE_0_2_19)[-2:])
    # 0.2.5 has no filters: one query_dataset_data call instead.
    assert [c.tool for c in thorough_steps(SURFACE_0_2_5)][-1] == "query_dataset_data"


def test_coder_reads_base_urls_from_the_tool_description() -> None:
    description = (
        "Run Python.\n- main API (datasets): http://127.0.0.1:9/api/ (e.g. ...)\n"
        "- Tabular API (query): http://127.0.0.1:9/tabular/api/ (e.g. ...)\n"
        "- Metrics API (visits): http://127.0.0.1:9/metrics/api/\n"
    )
    bases = ApiBases.from_description(description)
    assert bases == ApiBases(
        "http://127.0.0.1:9/api/",
        "http://127.0.0.1:9/tabular/api/",
        "http://127.0.0.1:9/metrics/api/",
    )
    surface = ToolSurface(
        {
            "execute_python": ToolDefinition(
                name="execute_python",
                description=description,
                parameters_json_schema={
                    "type": "object",
                    "properties": {"code": {}},
                    "required": ["code"],
                },
            )
        }
    )
    step = CoderPolicy().decide(QUESTION, [], surface)
    assert isinstance(step, Call)
    assert "http://127.0.0.1:9/api/2/datasets/search/" in step.args["code"]


def test_coder_reads_cli_json_despite_stderr_noise() -> None:
    text = (
        '{"id": "d", "resources": [{"id": "r1", "title": "t", "format": "csv"}]}\n[stderr]\nWARNING'
    )
    assert resources_of(Observation("execute_cli", {}, text, False)) == [["r1", "t", "csv"]]


@pytest.mark.parametrize(
    ("name", "capabilities", "reason"),
    [
        ("baseline-oneshot", ["mcp"], None),
        ("baseline-oneshot", ["web_search"], None),
        ("baseline-oneshot", ["code"], None),
        ("baseline-oneshot", ["mcp", "skills"], None),
        ("baseline-oneshot", [], None),  # runs and declines: no tool, no knowledge
        ("baseline-oneshot", ["datagouv-cli"], "needs a way to search"),
        ("baseline-thorough", ["code", "skills"], None),
        ("baseline-thorough", [], None),
        ("baseline-thorough", ["datagouv-cli"], "needs the mcp, web_search or code capability"),
        ("baseline-coder", ["code", "datagouv-cli"], None),
        ("baseline-coder", ["code", "skills"], None),
        ("baseline-coder", [], None),
        ("baseline-coder", ["mcp"], "needs the code capability"),
        ("baseline-coder", ["mcp", "skills"], "would repeat baseline-thorough's calls"),
    ],
)
def test_each_policy_says_what_it_cannot_use(
    name: str, capabilities: list[str], reason: str | None
) -> None:
    found = get_policy(name).unsupported(capabilities)
    if reason is None:
        assert found is None
    else:
        assert found is not None and reason in found


def test_policies_are_labelled_as_not_llms() -> None:
    assert sorted(POLICIES) == ["baseline-coder", "baseline-oneshot", "baseline-thorough"]
    assert all("not an LLM" in policy.label for policy in POLICIES.values())
    with pytest.raises(KeyError, match="known"):
        get_policy("gpt-9")
