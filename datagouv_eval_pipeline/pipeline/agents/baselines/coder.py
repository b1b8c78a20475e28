"""``baseline-coder``: writes Python against the REST and Tabular APIs (and ``datagouv``)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from datagouv_eval_pipeline.pipeline.agents.baselines.code import (
    EXECUTE_CLI,
    EXECUTE_PYTHON,
    ApiBases,
    program,
    resources_of,
)
from datagouv_eval_pipeline.pipeline.agents.baselines.guidance import Guidance
from datagouv_eval_pipeline.pipeline.agents.baselines.parsing import (
    Listed,
    derive_filter,
    pipe_rows,
    tabular_preview,
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
    most_related,
    next_query,
)
from datagouv_eval_pipeline.pipeline.agents.baselines.text import (
    asks_for_api,
    asks_for_metrics,
    is_quantitative,
)
from datagouv_eval_pipeline.pipeline.agents.baselines.thorough import (
    add_metrics,
    add_row_count,
    closest,
    described_filter,
    row_titles,
)
from datagouv_eval_pipeline.pipeline.agents.output import FinalAnswer


@dataclass(frozen=True)
class CoderPolicy(BaselinePolicy):
    """Write Python against the REST and Tabular APIs (``datagouv`` commands when available).

    It knows the APIs' query syntax (the v2 search endpoints, Tabular filters, counts from
    ``meta.total``), so it batches several requests in one program where ``baseline-thorough``
    sends one per step. It reads visits and downloads only when the instructions give the
    Metrics API request.
    """

    name: str = "baseline-coder"
    label: str = f"{NOT_AN_LLM}: writes Python against the REST and Tabular APIs"

    runs_with: ClassVar[frozenset[str]] = frozenset({"code", "python-sdk"})
    needs: ClassVar[str] = (
        "needs the code capability to run Python: it only writes code, and "
        "with MCP tools alone it would repeat baseline-thorough's calls"
    )

    def _step(
        self, question: str, seen: Sequence[Observation], tools: ToolSurface, guidance: Guidance
    ) -> Step:
        """The next program to run, or the answer."""
        if not tools.has(EXECUTE_PYTHON):
            return FinalAnswer(answer="Aucun outil d'exécution de code disponible.", declined=True)
        bases = ApiBases.of(tools)
        if bases is None:
            return FinalAnswer(answer="Les adresses des API ne sont pas indiquées.", declined=True)
        every = [s for s in seen if s.tool in (EXECUTE_PYTHON, EXECUTE_CLI)]
        searches = [s for s in every if _SEARCH in str(s.args.get("code", ""))]
        # The later steps count from the last search, as before the searches were relaxed.
        steps = every[len(searches) - 1 :] if searches else []
        query = next_query(question, searches, row_titles)
        if query is not None:
            return self._run(
                program(
                    _SEARCH,
                    f"r = httpx.get({bases.api + DATASET_SEARCH!r}, "
                    f"params={{'q': {query!r}, 'page_size': 5}}, timeout=30)",
                    "r.raise_for_status()",
                    "for d in r.json()['data']:",
                    "    print(d['id'], '|', d['title'], '|', d['page'])",
                )
            )
        datasets = pipe_rows(steps[0].text) if not steps[0].failed else []
        datasets = most_related(question, datasets, lambda row: row[1] if len(row) > 1 else "")
        if not datasets:
            return self._api_or_final(question, bases, steps, [], guidance)
        dataset_id = datasets[0][0]
        if len(steps) == 1:
            if tools.has(EXECUTE_CLI):
                return Call(EXECUTE_CLI, {"command": f"datagouv dataset get {dataset_id}"})
            return self._run(
                program(
                    f"url = {bases.api + '1/datasets/' + dataset_id + '/'!r}",
                    "d = httpx.get(url, timeout=30).json()",
                    "print(d['title'], '|', d['page'])",
                    "for r in d['resources']:",
                    "    print(r['id'], '|', r['title'], '|', r['format'])",
                )
            )
        resources = resources_of(steps[1])
        done = len(steps)
        if is_quantitative(question) and resources and done == 2:
            return self._run(
                program(
                    f"for rid in {[r[0] for r in resources[:3]]!r}:",
                    f"    p = httpx.get({bases.tabular!r} + 'resources/' + rid + '/data/', "
                    "params={'page_size': 3}, timeout=30)",
                    "    if p.status_code == 200:",
                    "        body = p.json()",
                    "        print('resource', rid, 'total', body['meta']['total'])",
                    "        for row in body['data']:",
                    "            print(row)",
                    "        break",
                    "    print('resource', rid, 'not in the Tabular API:', p.status_code)",
                )
            )
        probe = steps[2] if done > 2 and is_quantitative(question) else None
        if probe is not None and done == 3 and not probe.failed:
            resource_id, columns, rows = tabular_preview(probe.text)
            derived = derive_filter(question, columns, rows) if resource_id else None
            if resource_id and derived is not None:
                return self._run(
                    program(
                        f"url = {bases.tabular + 'resources/' + resource_id + '/data/'!r}",
                        f"params = {{{derived.column + '__' + derived.operator!r}: "
                        f"{derived.value!r}, 'page_size': 1}}",
                        "r = httpx.get(url, params=params, timeout=30)",
                        "r.raise_for_status()",
                        "print('total', r.json()['meta']['total'])",
                    )
                )
        metrics_path = guidance.metrics_path
        wants_metrics = asks_for_metrics(question) and metrics_path and bases.metrics
        if wants_metrics and metrics_path and bases.metrics and not _metrics_steps(steps):
            url = bases.metrics + metrics_path.replace("{id}", dataset_id)
            return self._run(
                program(
                    f"r = httpx.get({url!r}, timeout=30)",
                    "r.raise_for_status()",
                    "print('metrics')",
                    "for m in r.json()['data']:",
                    "    print(m['metric_month'], '|', m.get('monthly_visit'), '|', "
                    "m.get('monthly_download_resource'))",
                )
            )
        return self._api_or_final(question, bases, steps, datasets, guidance)

    @staticmethod
    def _run(code: str) -> Call:
        return Call(EXECUTE_PYTHON, {"code": code})

    def _api_or_final(
        self,
        question: str,
        bases: ApiBases,
        steps: Sequence[Observation],
        datasets: Sequence[Sequence[str]],
        guidance: Guidance,
    ) -> Step:
        wants_api = asks_for_api(question)
        dataset = tuple([*datasets[0], "", "", ""][:3]) if datasets else None
        api_steps = [s for s in steps if "dataservices" in str(s.args.get("code", ""))]
        query = next_query(question, api_steps, row_titles)
        if wants_api and query is not None:
            return self._run(
                program(
                    f"r = httpx.get({bases.api + DATASERVICE_SEARCH!r}, "
                    f"params={{'q': {query!r}, 'page_size': 3}}, timeout=30)",
                    "r.raise_for_status()",
                    "for s in r.json()['data']:",
                    "    print(s['id'], '|', s['title'], '|', s.get('base_api_url'), '|', "
                    "s.get('machine_documentation_url')"
                    + (", '|', s.get('self_web_url'))" if guidance.cite_pages else ")"),
                )
            )
        findings = Findings()
        figure = False
        if dataset is not None:
            dataset_id, title, page = dataset
            findings.lines.append(
                f"Jeu de données : « {title} » ({page}), identifiant {dataset_id}."
            )
            findings.cite(page, dataset_id)
            totals = [s for s in steps if s.tool == EXECUTE_PYTHON and s.text.startswith("total ")]
            if totals:
                count = re.sub(r"\D", "", totals[-1].text.split()[1])
                described = described_filter(str(totals[-1].args.get("code", "")))
                findings.lines.append(
                    f"D'après l'API tabulaire, {count} lignes correspondent{described}."
                )
                figure = True
            elif len(steps) > 2 and is_quantitative(question):
                add_row_count(findings, steps[2].text, "(aucun filtre déduit de la question)")
            metrics = _metrics_steps(steps)
            figure = add_metrics(findings, metrics[0] if metrics else None, question) or figure
            if guidance.closest_sources and is_quantitative(question) and not figure:
                listed = [Listed(r[1], r[0], r[2]) for r in datasets if len(r) >= 3]
                closest(findings, listed)
        if api_steps and not api_steps[-1].failed:
            services = pipe_rows(api_steps[-1].text)
            if services:
                service = (services[0] + ["", "", "", "", ""])[:5]
                service_page = service[4] if service[4] and service[4] != "None" else None
                findings.lines.append(
                    f"API : « {service[1]} », adresse de base {service[2]}, documentation "
                    f"{service[3]} (identifiant {service[0]})"
                    + (f", page {service_page}." if service_page else ".")
                )
                findings.cite(service_page, service[0])
        return findings.answer(NOTHING_FOUND)


_SEARCH = "# search the catalogue"
"""First line of every dataset search program (tells searches from the later steps)."""

DATASET_SEARCH = "2/datasets/search/"
DATASERVICE_SEARCH = "2/dataservices/search/"
"""The catalogue's search endpoints a coder uses: API v2 searches title, acronym,
organization and tags with fuzziness (v1's ``1/datasets/?q=`` requires every word in the
title); it is the search data.gouv.fr's own site and MCP server (from 0.2.26) send."""


def _metrics_steps(steps: Sequence[Observation]) -> list[Observation]:
    return [s for s in steps if str(s.args.get("code", "")).find("print('metrics')") >= 0]
