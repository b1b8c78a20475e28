"""``baseline-oneshot``: one search, answers with the first result."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from datagouv_eval_pipeline.pipeline.agents.baselines.code import V1_SEARCH, ApiBases, run
from datagouv_eval_pipeline.pipeline.agents.baselines.guidance import Guidance
from datagouv_eval_pipeline.pipeline.agents.baselines.parsing import (
    field_value,
    numbered_items,
    pipe_rows,
)
from datagouv_eval_pipeline.pipeline.agents.baselines.policy import (
    NOT_AN_LLM,
    NOTHING_FOUND,
    BaselinePolicy,
    Call,
    Findings,
    Observation,
    Step,
    ToolSurface,
    calls_of,
    last,
    listing_text,
    most_related,
    next_query,
)
from datagouv_eval_pipeline.pipeline.agents.baselines.text import asks_for_api
from datagouv_eval_pipeline.pipeline.agents.baselines.thorough import listed_texts, row_titles
from datagouv_eval_pipeline.pipeline.agents.output import FinalAnswer

NO_SEARCH = "Aucun outil de recherche disponible."
_SEARCH = "# search the catalogue"
"""First line of the search programs (a relaxed search is one more program)."""


@dataclass(frozen=True)
class OneShotPolicy(BaselinePolicy):
    """Search once and answer with the first hit.

    Through MCP it calls ``search_datasets`` (``search_dataservices`` when the question asks
    for an API and the toolset has it; ``web_search`` without MCP); through ``code`` it
    runs one program sending one search request to the main API (the search endpoint its
    instructions document, else API v1's). When the instructions say a dataset's description
    tells its coverage and update frequency, it reads the first hit's description (one more
    call) and quotes it.
    """

    name: str = "baseline-oneshot"
    label: str = f"{NOT_AN_LLM}: one search, answers with the first result"

    runs_with: ClassVar[frozenset[str]] = frozenset({"mcp", "web_search", "code", "python-sdk"})
    needs: ClassVar[str] = "needs a way to search (mcp, web_search or code)"

    def _step(
        self, question: str, seen: Sequence[Observation], tools: ToolSurface, guidance: Guidance
    ) -> Step:
        """Search, optionally read the first hit's description, then answer from it."""
        if tools.has("search_datasets") or tools.has("web_search"):
            return self._tool_search(question, seen, tools, guidance)
        bases = ApiBases.of(tools)
        if bases is not None:
            return self._code(question, seen, bases, guidance)
        return FinalAnswer(answer=NO_SEARCH, declined=True)

    def _tool_search(
        self, question: str, seen: Sequence[Observation], tools: ToolSurface, guidance: Guidance
    ) -> Step:
        search = "search_datasets" if tools.has("search_datasets") else "web_search"
        if asks_for_api(question) and tools.has("search_dataservices"):
            search = "search_dataservices"  # the question asks for an API: search those
        query = next_query(question, calls_of(seen, search), listed_texts)
        if query is not None:
            args = tools.args(search, {"query": query})
            if args is None:
                return FinalAnswer(answer=NO_SEARCH, declined=True)
            return Call(search, args)
        searches = calls_of(seen, search)
        if not searches:  # no content word to search for
            return FinalAnswer(answer=NOTHING_FOUND, declined=True)
        first = searches[-1]
        if first.failed:
            return FinalAnswer(answer=f"La recherche a échoué : {first.text[:300]}", declined=True)
        items = most_related(
            question, numbered_items(first.text), lambda item: item.title, listing_text
        )
        if not items:
            return FinalAnswer(answer=NOTHING_FOUND, declined=True)
        top = items[0]
        if search == "search_dataservices":
            findings = Findings()
            base = top.fields.get("Base API URL")
            findings.lines.append(
                f"L'API la plus pertinente trouvée sur data.gouv.fr est « {top.title} »"
                + (f" : {top.url}" if top.url else "")
                + (f", adresse de base {base}." if base else ".")
            )
            findings.cite(top.url, top.id)
            return findings.answer(NOTHING_FOUND)
        info = last(seen, "get_dataset_info")
        if guidance.read_description and top.id and tools.has("get_dataset_info") and not info:
            return Call("get_dataset_info", {"dataset_id": top.id})
        findings = Findings()
        findings.lines.append(
            f"Le jeu de données le plus pertinent trouvé sur data.gouv.fr est « {top.title} »"
            + (f" : {top.url}" if top.url else ".")
        )
        findings.cite(top.url, top.id)
        if info is not None and not info.failed:
            _describe(
                findings,
                field_value(info.text, "Description") or field_value(info.text, "Full description"),
                field_value(info.text, "Update frequency"),
                field_value(info.text, "Last updated"),
            )
        return findings.answer(NOTHING_FOUND)

    def _code(
        self, question: str, seen: Sequence[Observation], bases: ApiBases, guidance: Guidance
    ) -> Step:
        searches = [s for s in seen if _SEARCH in str(s.args.get("code", ""))]
        query = next_query(question, searches, row_titles)
        if query is not None:
            return run(
                _SEARCH,
                f"r = httpx.get({bases.api + (guidance.search_path or V1_SEARCH)!r}, "
                f"params={{'q': {query!r}, 'page_size': 1}}, timeout=30)",
                "r.raise_for_status()",
                "for d in r.json()['data'][:1]:",
                "    print(d['id'], '|', d['title'], '|', d['page'])",
            )
        described = seen[len(searches) :]
        rows = [] if not searches or searches[-1].failed else pipe_rows(searches[-1].text)
        if not rows:
            return FinalAnswer(answer=NOTHING_FOUND, declined=True)
        dataset_id, title, page = (rows[0] + ["", "", ""])[:3]
        if guidance.read_description and not described:
            return run(
                f"d = httpx.get({bases.api + '1/datasets/' + dataset_id + '/'!r}, timeout=30)"
                ".json()",
                "text = d.get('description_short') or d.get('description') or ''",
                "print('Description:', ' '.join(text.split())[:300])",
                "print('Update frequency:', d.get('frequency'))",
                "print('Last updated:', d.get('last_update'))",
            )
        findings = Findings()
        findings.lines.append(
            f"Le jeu de données le plus pertinent trouvé sur data.gouv.fr est « {title} » : {page}"
        )
        findings.cite(page, dataset_id)
        if described and not described[0].failed:
            _describe(
                findings,
                field_value(described[0].text, "Description"),
                field_value(described[0].text, "Update frequency"),
                field_value(described[0].text, "Last updated"),
            )
        return findings.answer(NOTHING_FOUND)


def _describe(
    findings: Findings, description: str | None, frequency: str | None, updated: str | None
) -> None:
    """Quote what the dataset's description says (read because the instructions ask to)."""
    if description:
        findings.lines.append(f"Sa description indique : « {description.strip()[:300]} ».")
    if frequency and frequency != "None":
        text = f"Fréquence de mise à jour annoncée : {frequency}"
        if updated and updated != "None":
            text += f" (dernière mise à jour : {updated})"
        findings.lines.append(text + ".")
