"""The baselines read their instructions: advice in the text changes steps, its absence does not.

Also: no tools → a declined answer; oneshot and thorough through ``code``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import pytest
import yaml
from pydantic_ai import Agent, ToolOutput
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import FunctionToolset

from datagouv_eval_pipeline.core.tasks.loader import TASK_SPECS_DIR
from datagouv_eval_pipeline.pipeline.agents.baselines import (
    NO_GUIDANCE,
    NO_TOOLS,
    POLICIES,
    Call,
    CoderPolicy,
    Guidance,
    Observation,
    OneShotPolicy,
    Parallel,
    Step,
    ThoroughPolicy,
    ToolSurface,
    policy_model,
)
from datagouv_eval_pipeline.pipeline.agents.output import FINAL_ANSWER_TOOL, FinalAnswer
from tests.agents import baseline_helpers as helpers
from tests.agents.baseline_helpers import QUESTION, catalog_tools, surface

SKILLS = (TASK_SPECS_DIR / "benchmark" / "skills" / "datagouv-apis-0.0.1.md").read_text("utf-8")
DATASET = "5d13a8b6634f41070a43dff3"
RID = "f868cca6-8da1-4369-a78d-47463f19a9a3"


def without(text: str, sentence: str) -> str:
    """The skills document with one piece of advice removed (it must be there to remove)."""
    pattern = r"\s+".join(re.escape(word) for word in sentence.split())
    edited, count = re.subn(pattern, "", text)
    assert count == 1, sentence
    return edited


def tool(name: str, required: Sequence[str], description: str = "") -> ToolDefinition:
    """A tool that also takes ``page_size``."""
    return helpers.tool(name, required, ["page_size"], description)


MCP = surface(*catalog_tools(["page_size"]))
CODE_HELP = (
    "Run Python.\n- main API (datasets): http://t/api/ (e.g. ...)\n"
    "- Tabular API (query): http://t/tabular/api/ (e.g. ...)\n"
    "- Metrics API (visits): http://t/metrics/api/\n"
)
CODE = ToolSurface({"execute_python": tool("execute_python", ["code"], CODE_HELP)})
SEARCH = f"""Found 2 dataset(s)

1. Catalogue des données de data.gouv.fr
   ID: {DATASET}
   URL: https://www.data.gouv.fr/datasets/catalogue/

2. Autre catalogue
   ID: 5d7f5d200f507a42669e0b10
   URL: https://www.data.gouv.fr/datasets/autre/
"""
INFO = f"""Dataset Information: Catalogue

ID: {DATASET}
URL: https://www.data.gouv.fr/datasets/catalogue/
Description: Liste des jeux de données publiés sur data.gouv.fr.
Update frequency: daily
Last updated: 2026-06-01
"""
RESOURCES = f"""Resources in dataset: Catalogue

1. export-dataset.csv
   Resource ID: {RID}
   Format: csv
"""
NOT_TABULAR = (
    "Resource Information: export-dataset.csv\n"
    "⚠️  Not available via Tabular API (may not be tabular data)"
)


def drive(
    policy: Any,
    question: str,
    tools: ToolSurface,
    results: dict[str, str],
    guidance: Guidance = NO_GUIDANCE,
) -> tuple[list[Call], FinalAnswer]:
    """Run a policy on canned results (chosen by tool name, or by program label for code)."""
    history: list[Observation] = []
    calls: list[Call] = []
    for _ in range(12):
        step: Step = policy.decide(question, history, tools, guidance)
        if isinstance(step, FinalAnswer):
            return calls, step
        for call in step.calls if isinstance(step, Parallel) else (step,):
            calls.append(call)
            key = call.tool
            if call.tool == "execute_python":
                key = str(call.args["code"]).split("\n", 1)[0]
            history.append(Observation(call.tool, call.args, results[key], False))
    raise AssertionError("the policy did not stop")


def test_the_skills_document_holds_every_piece_of_advice_the_policies_know() -> None:
    guidance = Guidance.read(SKILLS)
    assert guidance.found == [
        "filter_separator",
        "filter_operators",
        "count_one_page",
        "read_description",
        "closest_sources",
        "access_constraints",
        "metrics_path",
        "cite_pages",
        "search_path",
    ]
    assert guidance.search_path == "2/datasets/search/"
    assert guidance.filter_param("created_at", "strictly_less") == "created_at__strictly_less"
    assert guidance.filter_param("created_at", "between") is None  # not a documented operator
    assert guidance.metrics_path == "datasets/data/?dataset_id__exact={id}&metric_month__sort=desc"


def test_advice_comes_from_the_text_not_from_the_capability() -> None:
    assert Guidance.read(None) == NO_GUIDANCE
    assert Guidance.read("You are a helpful assistant for users of data.gouv.fr.") == NO_GUIDANCE
    # A system prompt giving one piece of advice, in its own words, gets it without skills.
    prompt = "When no dataset fits the request, tell the user and name the closest ones."
    assert Guidance.read(prompt).found == ["closest_sources"]
    # Removing what the document says removes exactly that advice.
    edited = without(SKILLS, ", where `meta.total` is the number of matching rows over all pages")
    assert "count_one_page" not in Guidance.read(edited).found
    assert Guidance.read(edited).read_description
    no_filters = Guidance.read(without(SKILLS, "`{column}__{operator}={value}`"))
    assert no_filters.filter_param("created_at", "strictly_less") is None


REWORDED = """
Base URL `https://tabular-api.data.gouv.fr/api/`. Rows of a file:
`GET resources/{id}/data/?{col}__{op}=VALUE`, with the operators `exact`, `less` and
`strictly_less`. The body's `meta.total` gives how many rows match the filters. Visits:
`GET datasets/data/?dataset_id__exact={dataset_id}`. Searching: `GET 2/datasets/search/?q=WORDS`.

Tips. The description of a dataset tells its coverage and its update frequency. If there is
nothing on the platform for the user, say it and list the nearest related datasets. Tell the
user about access limits such as a required account or token. Always link the page of each
dataset or API you used.
"""

FRENCH = """
Lignes d'un fichier : `GET resources/{id}/data/?{column}__{operator}=valeur`, opérateurs
`exact`, `less`, `strictly_less`. Dans la réponse, `meta.total` donne le nombre de lignes qui
correspondent au filtre. Statistiques : `GET datasets/data/?dataset_id__exact={id}`.
Recherche : `GET 2/datasets/search/?q=mots`.

Conseils : la description d'un jeu de données indique sa couverture et sa fréquence de mise à
jour. Si aucun jeu ne convient, dites-le et proposez les jeux les plus proches. Signalez les
conditions d'accès (compte ou jeton nécessaire). Donnez le lien vers la page de chaque jeu de
données ou API utilisé.
"""


@pytest.mark.parametrize("document", [REWORDED, FRENCH], ids=["reworded", "french"])
def test_the_advice_is_read_from_its_content_not_from_exact_sentences(document: str) -> None:
    """Other words, other language, same content: the same advice (no sentence is matched)."""
    ours = Guidance.read(SKILLS)
    theirs = Guidance.read(document)
    assert theirs.found == ours.found
    assert theirs.filter_param("created_at", "strictly_less") == "created_at__strictly_less"
    assert theirs.filter_operators == {"exact", "less", "strictly_less"}
    assert theirs.search_path == ours.search_path == "2/datasets/search/"
    assert theirs.metrics_path is not None and "dataset_id__exact=" in theirs.metrics_path


def test_the_benchmark_system_prompts_give_the_advice_they_contain() -> None:
    path = TASK_SPECS_DIR / "benchmark" / "system_prompts.yml"
    prompts = {p["name"]: p["text"] for p in yaml.safe_load(path.read_text())["system_prompts"]}
    # data_assistant asks to cite pages and to point to the closest sources; the default
    # prompt (data_gouv_context) gives no advice the policies act on.
    assert Guidance.read(prompts["data_assistant"]).found == ["closest_sources", "cite_pages"]
    assert Guidance.read(prompts["data_gouv_context"]) == NO_GUIDANCE


def test_no_tools_means_a_declined_answer_from_every_policy() -> None:
    for policy in POLICIES.values():
        step = policy.decide(QUESTION, [], ToolSurface({}), Guidance.read(SKILLS))
        assert step == FinalAnswer(answer=NO_TOOLS, declined=True), policy.name


def test_oneshot_reads_the_description_only_when_told_to() -> None:
    results = {"search_datasets": SEARCH, "get_dataset_info": INFO}
    calls, answer = drive(OneShotPolicy(), QUESTION, MCP, results, Guidance.read(SKILLS))
    assert [c.tool for c in calls] == ["search_datasets", "get_dataset_info"]
    assert calls[1].args == {"dataset_id": DATASET}
    assert "Liste des jeux de données publiés" in answer.answer
    assert "Fréquence de mise à jour annoncée : daily (dernière mise à jour : 2026-06-01)" in (
        answer.answer
    )
    edited = Guidance.read(
        without(
            SKILLS,
            "A dataset's description usually states its coverage, how often it is updated and "
            "its known limits; check it before using the data.",
        )
    )
    calls, plain = drive(OneShotPolicy(), QUESTION, MCP, results, edited)
    assert [c.tool for c in calls] == ["search_datasets"]
    assert "description" not in plain.answer
    assert plain.ids_used == answer.ids_used == [DATASET]


def test_oneshot_through_code_sends_one_search_request() -> None:
    results = {"import httpx": f"{DATASET} | Catalogue | https://www.data.gouv.fr/datasets/c/"}
    calls, answer = drive(OneShotPolicy(), QUESTION, CODE, results)
    assert len(calls) == 1
    code = str(calls[0].args["code"])
    assert "httpx.get('http://t/api/1/datasets/'" in code and "'page_size': 1" in code
    assert answer.ids_used == [DATASET]
    assert answer.cited_urls == ["https://www.data.gouv.fr/datasets/c/"]
    # The skills document gives the v2 search endpoint: the program uses it.
    calls, _ = drive(OneShotPolicy(), QUESTION, CODE, results, Guidance.read(SKILLS))
    assert "httpx.get('http://t/api/2/datasets/search/'" in str(calls[0].args["code"])


CODE_RESULTS = {
    "# search": f"{DATASET} | Catalogue | https://www.data.gouv.fr/datasets/catalogue/",
    "# dataset": f"Title: Catalogue\nPage: https://www.data.gouv.fr/datasets/catalogue/\n"
    f"{RID} | export-dataset.csv | csv",
    "# probe": f"resource {RID} total 3182\n"
    "{'__id': 1, 'id': 'a', 'created_at': '2011-12-05T10:00:00'}",
    "# count": "total 2076",
}


def test_thorough_through_code_filters_only_with_the_documented_syntax() -> None:
    calls, answer = drive(ThoroughPolicy(), QUESTION, CODE, CODE_RESULTS, Guidance.read(SKILLS))
    labels = [str(c.args["code"]).split("\n", 1)[0] for c in calls]
    assert labels == ["# search", "# dataset", "# probe", "# count"]
    count = str(calls[-1].args["code"])
    # Parameter name built from the document's `{column}__{operator}`; one row for a count.
    assert "params = {'created_at__strictly_less': '2012-06-28', 'page_size': 1}" in count
    assert "2076 lignes du fichier" in answer.answer
    # Without the filter syntax in the document, the tool description alone does not say how
    # to filter: the policy reports the unfiltered total instead of guessing.
    edited = Guidance.read(without(SKILLS, "`{column}__{operator}={value}`"))
    calls, plain = drive(ThoroughPolicy(), QUESTION, CODE, CODE_RESULTS, edited)
    assert [str(c.args["code"]).split("\n", 1)[0] for c in calls] == [
        "# search",
        "# dataset",
        "# probe",
    ]
    assert "3182 lignes au total (aucun filtre appliqué)" in plain.answer
    # And the closest sources, since the document still asks for them when no figure is found.
    assert "Sources les plus proches" in plain.answer


def test_thorough_mcp_count_asks_for_one_row_when_told_a_count_needs_one_page() -> None:
    surface = ToolSurface(
        dict(MCP.tools)
        | {
            "query_resource_data": ToolDefinition(
                name="query_resource_data",
                parameters_json_schema={
                    "type": "object",
                    "properties": {
                        k: {"type": "string"}
                        for k in [
                            "resource_id",
                            "page_size",
                            "filter_column",
                            "filter_operator",
                            "filter_value",
                        ]
                    },
                    "required": ["resource_id"],
                },
            )
        }
    )
    preview = (
        f"Resource ID: {RID}\nTotal rows (Tabular API): 3182\nColumns: __id, created_at\n\n"
        "  Row 1:\n    __id: 1\n    created_at: 2011-12-05T10:00:00\n"
    )
    results = {
        "search_datasets": SEARCH,
        "get_dataset_info": INFO,
        "list_dataset_resources": RESOURCES,
        "get_resource_info": "Resource Information: x\n✅ Available via Tabular API",
        "query_resource_data": preview,
    }
    told, _ = drive(ThoroughPolicy(), QUESTION, surface, results, Guidance.read(SKILLS))
    plain, _ = drive(ThoroughPolicy(), QUESTION, surface, results)
    assert told[-1].args["page_size"] == 1 and plain[-1].args["page_size"] == 20
    assert [c.tool for c in told] == [c.tool for c in plain]


def test_thorough_mentions_access_constraints_and_closest_sources_when_told() -> None:
    results = {
        "search_datasets": SEARCH,
        "get_dataset_info": INFO,
        "list_dataset_resources": RESOURCES,
        "get_resource_info": NOT_TABULAR,
    }
    _, told = drive(ThoroughPolicy(), QUESTION, MCP, results, Guidance.read(SKILLS))
    _, plain = drive(ThoroughPolicy(), QUESTION, MCP, results)
    assert f"les fichiers examinés ({RID}) ne sont pas interrogeables" in told.answer
    assert "Sources les plus proches" in told.answer
    assert "https://www.data.gouv.fr/datasets/autre/" in told.cited_urls
    assert "interrogeables" not in plain.answer and "Sources" not in plain.answer
    assert plain.cited_urls == ["https://www.data.gouv.fr/datasets/catalogue/"]


def test_coder_reads_metrics_only_with_the_documented_request() -> None:
    question = "Combien de visites a eu ce jeu de données en mai 2026 ?"
    results = {
        "search": f"{DATASET} | Catalogue | https://www.data.gouv.fr/datasets/catalogue/",
        "dataset": f"Catalogue | https://x/\n{RID} | export | pdf",
        "probe": f"resource {RID} not in the Tabular API: 404",
        "metrics": "metrics\n2026-05 | 3418 | 1276\n2026-04 | 1 | 2",
    }
    order = ["search", "dataset", "probe", "metrics"]

    def run(guidance: Guidance) -> tuple[list[Call], FinalAnswer]:
        history: list[Observation] = []
        calls: list[Call] = []
        for _ in range(8):
            step = CoderPolicy().decide(question, history, CODE, guidance)
            if isinstance(step, FinalAnswer):
                return calls, step
            assert isinstance(step, Call)
            calls.append(step)
            history.append(Observation(step.tool, step.args, results[order[len(calls) - 1]], False))
        raise AssertionError("the policy did not stop")

    calls, told = run(Guidance.read(SKILLS))
    assert len(calls) == 4
    assert (
        "http://t/metrics/api/datasets/data/?dataset_id__exact=5d13a8b6634f41070a43dff3"
        "&metric_month__sort=desc"
    ) in str(calls[-1].args["code"])
    assert "2026-05 : 3418 visites et 1276 téléchargements" in told.answer
    calls, plain = run(Guidance.read(without(SKILLS, "`GET datasets/data/?dataset_id__exact={id}")))
    assert len(calls) == 3 and "visites" not in plain.answer


@pytest.mark.parametrize("with_skills", [True, False])
def test_the_model_reads_the_agents_instructions(with_skills: bool) -> None:
    """Through pydantic-ai: ``AgentInfo.instructions`` carries the skills document."""
    tools: FunctionToolset[None] = FunctionToolset()

    def search_datasets(query: str) -> str:
        return SEARCH

    def get_dataset_info(dataset_id: str) -> str:
        return INFO

    tools.add_function(search_datasets)
    tools.add_function(get_dataset_info)
    agent = Agent(
        policy_model(OneShotPolicy()),
        instructions="You are a helpful assistant.\n\n" + (SKILLS if with_skills else ""),
        output_type=ToolOutput(FinalAnswer, name=FINAL_ANSWER_TOOL),
        toolsets=[tools],
    )
    result = agent.run_sync(QUESTION)
    names = [
        part.tool_name
        for message in result.all_messages()
        for part in message.parts
        if part.part_kind == "tool-call"
    ]
    expected = ["search_datasets", "get_dataset_info"] if with_skills else ["search_datasets"]
    assert names == [*expected, FINAL_ANSWER_TOOL]
    assert result.output.ids_used == [DATASET]


def test_thorough_through_code_uses_the_cli_for_the_dataset_when_offered() -> None:
    surface = ToolSurface(dict(CODE.tools) | {"execute_cli": tool("execute_cli", ["command"])})
    cli_json = (
        f'{{"id": "{DATASET}", "resources": [{{"id": "{RID}", "title": "export", '
        '"format": "csv"}]}\n[stderr]\nnote'
    )
    history = [
        Observation("execute_python", {"code": "# search\n"}, CODE_RESULTS["# search"], False)
    ]
    step = ThoroughPolicy().decide(QUESTION, history, surface)
    assert step == Call("execute_cli", {"command": f"datagouv dataset get {DATASET}"})
    history.append(Observation("execute_cli", {"command": "datagouv dataset get"}, cli_json, False))
    probe = ThoroughPolicy().decide(QUESTION, history, surface)
    assert isinstance(probe, Call) and str(probe.args["code"]).startswith("# probe\n")
    assert f"resources/{RID}/data/" in str(probe.args["code"])


def test_coder_cites_the_api_page_only_when_told_to() -> None:
    question = "Quelle API publique donne l'adresse d'une entreprise ?"
    service = (
        "6000000000000000000000aa | API Sirene des entreprises | https://api.x/ | "
        "https://api.x/openapi.json"
    )
    results = [
        f"{DATASET} | Base Sirene des entreprises | https://www.data.gouv.fr/datasets/sirene/",
        f"Sirene | https://www.data.gouv.fr/datasets/sirene/\n{RID} | stock | zip",
    ]
    programs = ["# search the catalogue\n", "x"]

    def run(guidance: Guidance) -> tuple[str, FinalAnswer]:
        history = [
            Observation("execute_python", {"code": code}, text, False)
            for code, text in zip(programs, results, strict=True)
        ]
        step = CoderPolicy().decide(question, history, CODE, guidance)
        assert isinstance(step, Call) and "2/dataservices/search/" in str(step.args["code"])
        page = " | https://www.data.gouv.fr/dataservices/api-sirene/" if guidance.cite_pages else ""
        history.append(Observation("execute_python", step.args, service + page, False))
        answer = CoderPolicy().decide(question, history, CODE, guidance)
        assert isinstance(answer, FinalAnswer)
        return str(step.args["code"]), answer

    code, told = run(Guidance.read(SKILLS))
    assert "s.get('self_web_url')" in code
    assert "https://www.data.gouv.fr/dataservices/api-sirene/" in told.cited_urls
    edited = without(
        SKILLS, "Link the data.gouv.fr page of each dataset or API your answer uses, so the user"
    )
    code, plain = run(Guidance.read(edited))
    assert "s.get('self_web_url')" not in code
    assert plain.cited_urls == ["https://www.data.gouv.fr/datasets/sirene/"]
    assert "6000000000000000000000aa" in plain.ids_used
