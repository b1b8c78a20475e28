"""``baseline-thorough``: follow the catalog chain step by step, one request per step."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from datagouv_eval_pipeline.pipeline.agents.baselines.code import (
    EXECUTE_CLI,
    EXECUTE_PYTHON,
    V1_SEARCH,
    ApiBases,
    program,
    resources_of,
)
from datagouv_eval_pipeline.pipeline.agents.baselines.guidance import Guidance
from datagouv_eval_pipeline.pipeline.agents.baselines.parsing import (
    HEX_ID,
    Listed,
    derive_filter,
    field_value,
    metrics_line,
    numbered_items,
    pipe_rows,
    preview_rows,
    spec_endpoints,
    tabular_preview,
    total_rows,
)
from datagouv_eval_pipeline.pipeline.agents.baselines.policy import (
    NOT_AN_LLM,
    NOTHING_FOUND,
    BaselinePolicy,
    Call,
    Findings,
    Observation,
    Parallel,
    Step,
    ToolSurface,
    calls_of,
    last,
    listing_text,
    most_related,
    next_query,
)
from datagouv_eval_pipeline.pipeline.agents.baselines.text import (
    FREQUENCIES_FR,
    asks_about_freshness,
    asks_for_api,
    asks_for_metrics,
    counted_noun,
    is_quantitative,
    month_asked,
    title_overlap,
)
from datagouv_eval_pipeline.pipeline.agents.output import FinalAnswer

NOT_TABULAR = "⚠️  Not available via Tabular API"


@dataclass(frozen=True)
class ThoroughPolicy(BaselinePolicy):
    """Follow the catalog chain: search, dataset, resources, resource, data (and APIs, metrics).

    Through MCP, one tool per step (the dataset's info and resources, and an API's info and
    OpenAPI spec, are asked together: neither needs the other). Through ``code``, one program
    per request in the same order; it only filters Tabular rows and reads metrics when the
    instructions document how (the tool description gives base URLs, not the query syntax).
    With ``web_search`` only: search, then fetch the first page.
    """

    name: str = "baseline-thorough"
    label: str = (
        f"{NOT_AN_LLM}: search → dataset → resources → resource → data, filter derived from "
        "the question"
    )
    max_resource_probes: int = 3

    runs_with: ClassVar[frozenset[str]] = frozenset({"mcp", "web_search", "code", "python-sdk"})
    needs: ClassVar[str] = "needs the mcp, web_search or code capability"

    def _step(
        self, question: str, seen: Sequence[Observation], tools: ToolSurface, guidance: Guidance
    ) -> Step:
        """The next step of the chain (see the class docstring)."""
        if tools.has("search_datasets"):
            return self._mcp(question, seen, tools, guidance)
        if tools.has("web_search"):
            return self._web(question, seen, tools)
        bases = ApiBases.of(tools)
        if bases is not None:
            code = ThoroughCode(
                question, seen, bases, guidance, self.max_resource_probes, tools.has(EXECUTE_CLI)
            )
            return code.step()
        return FinalAnswer(answer="Aucun outil de recherche disponible.", declined=True)

    # -- web search only: search, fetch the first page, answer from it
    def _web(self, question: str, seen: Sequence[Observation], tools: ToolSurface) -> Step:
        query = next_query(question, calls_of(seen, "web_search"), listed_titles)
        if query is not None:
            args = tools.args("web_search", {"query": query})
            if args is None:
                return FinalAnswer(answer="Aucun outil de recherche disponible.", declined=True)
            return Call("web_search", args)
        search = last(seen, "web_search")
        if search is None:
            return FinalAnswer(answer=NOTHING_FOUND, declined=True)
        items = () if search.failed else numbered_items(search.text)
        if not items:
            return FinalAnswer(answer=NOTHING_FOUND, declined=True)
        top = items[0]
        page = last(seen, "http_fetch")
        if page is None and top.url and tools.has("http_fetch"):
            return Call("http_fetch", {"url": top.url})
        findings = Findings()
        findings.lines.append(f"Source trouvée sur data.gouv.fr : « {top.title} » ({top.url}).")
        if page is not None and not page.failed:
            found = re.search(HEX_ID, page.text)
            summary = " ".join(page.text.split("\n", 2)[-1].split())[:400]
            findings.lines.append(f"Extrait de la page : {summary}")
            findings.cite(top.url, found.group(0) if found else None)
        else:
            findings.cite(top.url)
        return findings.answer(NOTHING_FOUND)

    # -- MCP
    def _mcp(
        self, question: str, seen: Sequence[Observation], tools: ToolSurface, guidance: Guidance
    ) -> Step:
        query = next_query(question, calls_of(seen, "search_datasets"), listed_texts)
        if query is not None:
            args = tools.args("search_datasets", {"query": query})
            return Call("search_datasets", args or {"query": query})
        search = last(seen, "search_datasets")
        datasets = (
            []
            if search is None or search.failed
            else [i for i in numbered_items(search.text) if i.id]
        )
        datasets = most_related(question, datasets, lambda item: item.title, listing_text)
        # A listing that says a dataset has no file: the others first (nothing to read there).
        datasets.sort(key=lambda item: item.fields.get("Resources", "").strip() == "0")
        dataset = datasets[0] if datasets else None
        if dataset is not None and dataset.id:
            step = self._dataset_chain(question, dataset.id, seen, tools, guidance)
            if step is not None:
                return step
        if asks_for_api(question) and tools.has("search_dataservices"):
            step = self._dataservice_chain(question, seen, tools)
            if step is not None:
                return step
        return self._final(question, datasets, seen, guidance)

    def _dataset_chain(
        self,
        question: str,
        dataset_id: str,
        seen: Sequence[Observation],
        tools: ToolSurface,
        guidance: Guidance,
    ) -> Call | Parallel | None:
        missing = [
            Call(tool, {"dataset_id": dataset_id})
            for tool in ("get_dataset_info", "list_dataset_resources")
            if tools.has(tool) and last(seen, tool) is None
        ]
        if missing:
            return missing[0] if len(missing) == 1 else Parallel(tuple(missing))
        resources = self._resources(seen)
        probes = calls_of(seen, "get_resource_info")
        chosen = self._tabular_resource(probes)
        if tools.has("get_resource_info") and chosen is None and resources:
            probed = {str(p.args.get("resource_id")) for p in probes}
            candidates = [r for r in resources if r.id and r.id not in probed]
            if (
                candidates
                and len(probes) < self.max_resource_probes
                and (is_quantitative(question) or not probes)
            ):
                return Call("get_resource_info", {"resource_id": candidates[0].id})
        if is_quantitative(question):
            step = self._data(question, dataset_id, chosen, seen, tools, guidance)
            if step is not None:
                return step
        wants_metrics = asks_for_metrics(question) and tools.has("get_metrics")
        if wants_metrics and last(seen, "get_metrics") is None:
            args = tools.args("get_metrics", {"dataset_id": dataset_id})
            if args is not None:
                return Call("get_metrics", args)
        return None

    @staticmethod
    def _resources(seen: Sequence[Observation]) -> list[Listed]:
        listing = last(seen, "list_dataset_resources")
        if listing is None or listing.failed:
            return []
        return [item for item in numbered_items(listing.text) if item.id]

    @staticmethod
    def _tabular_resource(probes: Sequence[Observation]) -> str | None:
        for probe in probes:
            if not probe.failed and "✅ Available via Tabular API" in probe.text:
                return str(probe.args.get("resource_id"))
        return None

    def _data(
        self,
        question: str,
        dataset_id: str,
        resource_id: str | None,
        seen: Sequence[Observation],
        tools: ToolSurface,
        guidance: Guidance,
    ) -> Call | None:
        if tools.has("query_resource_data"):
            if resource_id is None:
                return None
            queries = calls_of(seen, "query_resource_data")
            base = {"question": question, "resource_id": resource_id}
            if not queries:
                # A preview first: its columns and first rows tell which filter applies.
                preview = tools.args("query_resource_data", base | {"page_size": 5})
                return Call("query_resource_data", preview) if preview is not None else None
            if len(queries) == 1 and not queries[0].failed:
                columns, rows = preview_rows(queries[0].text)
                derived = derive_filter(question, columns, rows)
                if derived is not None:
                    values = base | {
                        "filter_column": derived.column,
                        "filter_operator": derived.operator,
                        "filter_value": derived.value,
                        # The total counts the matches: one row is enough when told so.
                        "page_size": 1 if guidance.count_one_page else 20,
                    }
                    args = tools.args("query_resource_data", values)
                    if args is not None:
                        return Call("query_resource_data", args)
            return None
        if tools.has("query_dataset_data") and last(seen, "query_dataset_data") is None:
            args = tools.args(
                "query_dataset_data", {"question": question, "dataset_id": dataset_id}
            )
            if args is not None:
                return Call("query_dataset_data", args)
        return None

    def _dataservice_chain(
        self, question: str, seen: Sequence[Observation], tools: ToolSurface
    ) -> Call | Parallel | None:
        query = next_query(question, calls_of(seen, "search_dataservices"), listed_texts)
        if query is not None:
            args = tools.args("search_dataservices", {"query": query})
            return Call("search_dataservices", args) if args is not None else None
        services = found_services(question, seen)
        if not services:
            return None
        service_id = services[0].id
        missing = [
            Call(tool, {"dataservice_id": service_id})
            for tool in ("get_dataservice_info", "get_dataservice_openapi_spec")
            if tools.has(tool) and last(seen, tool) is None
        ]
        if missing:
            return missing[0] if len(missing) == 1 else Parallel(tuple(missing))
        return None

    def _final(
        self,
        question: str,
        datasets: Sequence[Listed],
        seen: Sequence[Observation],
        guidance: Guidance,
    ) -> FinalAnswer:
        findings = Findings()
        dataset = datasets[0] if datasets else None
        if dataset is not None:
            info = last(seen, "get_dataset_info")
            url = (
                field_value(info.text, "URL") if info and not info.failed else None
            ) or dataset.url
            findings.lines.append(
                f"Jeu de données : « {dataset.title} » ({url}), identifiant {dataset.id}."
            )
            findings.cite(url, dataset.id)
            if info is not None and not info.failed and asks_about_freshness(question):
                freshness(findings, info.text)
            figure = self._data_findings(question, seen, findings)
            figure = add_metrics(findings, last(seen, "get_metrics"), question) or figure
            probes = [p for p in calls_of(seen, "get_resource_info") if not p.failed]
            outside = probes and all(NOT_TABULAR in p.text for p in probes)
            if guidance.access_constraints and outside:
                not_tabular(findings, [str(p.args.get("resource_id")) for p in probes])
            if guidance.closest_sources and is_quantitative(question) and not figure:
                closest(findings, datasets)
        services = found_services(question, seen)
        if services:
            # The API leads when the question asks for one.
            at = 0 if asks_for_api(question) else len(findings.lines)
            findings.lines[at:at] = service_lines(services, seen, findings)
        return findings.answer(NOTHING_FOUND)

    @staticmethod
    def _data_findings(question: str, seen: Sequence[Observation], findings: Findings) -> bool:
        """Add what the data steps found; True when a figure was found."""
        probes = [p for p in calls_of(seen, "get_resource_info") if not p.failed]
        queries = [q for q in calls_of(seen, "query_resource_data") if not q.failed]
        figure = False
        for probe in probes:
            title = field_value(probe.text, "Resource Information") or ""
            findings.lines.append(
                f"Fichier : {title.strip() or probe.args.get('resource_id')} "
                f"(ressource {probe.args.get('resource_id')})."
            )
            findings.cite(None, str(probe.args.get("resource_id")))
            if "✅" in probe.text:
                break
        if queries:
            latest = queries[-1]
            total = total_rows(latest.text)
            column = latest.args.get("filter_column")
            if total is not None and column:
                figure = True
                # The figure is stated with what the question counts, as a person repeats
                # the question's unit, and with the rows and filter it comes from.
                counted = counted_noun(question)
                findings.lines.append(
                    f"En interrogeant l'API tabulaire avec le filtre {column} "
                    f"{latest.args.get('filter_operator', 'exact')} "
                    f"{latest.args.get('filter_value')}, on obtient "
                    + (f"{total} {counted} (lignes du fichier)." if counted else f"{total} lignes.")
                )
            elif total is not None:
                findings.lines.append(
                    f"Le fichier compte {total} lignes (je n'ai pas pu déduire de filtre de la "
                    "question)."
                )
        dataset_query = last(seen, "query_dataset_data")
        if dataset_query is not None and not dataset_query.failed:
            total = total_rows(dataset_query.text)
            if total is not None:
                findings.lines.append(
                    f"Le premier fichier interrogeable compte {total} lignes au total (l'outil "
                    "de cette version ne permet pas de filtrer)."
                )
        return figure


def found_services(question: str, seen: Sequence[Observation]) -> list[Listed]:
    """The APIs the dataservice searches listed that relate to the question, most related first.

    Chosen on the whole listing (title, then tags, organization and description), over all
    the searches made: a relaxed search's results are not better than the earlier ones. An
    API sharing no topic word with the question is left out (a last, broad search lists
    APIs about anything).
    """
    services: dict[str, Listed] = {}
    for search in calls_of(seen, "search_dataservices"):
        if not search.failed:
            for item in numbered_items(search.text):
                if item.id and item.id not in services:
                    services[item.id] = item
    related = [
        item
        for item in services.values()
        if title_overlap(question, f"{item.title} {listing_text(item)}") > 0
    ]
    return most_related(question, related, lambda i: i.title, listing_text)


def service_lines(
    services: Sequence[Listed], seen: Sequence[Observation], findings: Findings
) -> list[str]:
    """What the answer says about the chosen API: address, spec, description, endpoints."""
    service = services[0]
    info = last(seen, "get_dataservice_info")
    info_text = info.text if info is not None and not info.failed else ""
    spec = field_value(info_text, "OpenAPI/Swagger spec")
    base = field_value(info_text, "Base API URL") or service.fields.get("Base API URL")
    text = f"API : « {service.title} » ({service.url})"
    if base:
        text += f", adresse de base {base}"
    if spec:
        text += f", spécification OpenAPI {spec}"
    lines = [text + "."]
    findings.cite(service.url, service.id)
    description = field_value(info_text, "Description")
    if description:
        lines.append(f"Sa fiche indique : « {description[:400]} ».")
    document = last(seen, "get_dataservice_openapi_spec")
    if document is not None and not document.failed:
        endpoints = spec_endpoints(document.text)
        if endpoints:
            lines.append("Points d'accès : " + " ; ".join(endpoints) + ".")
    return lines


def freshness(findings: Findings, info: str) -> None:
    """Say how often and how recently the dataset is updated, as its record reads."""
    frequency = field_value(info, "Update frequency")
    updated = field_value(info, "Last updated")
    parts = []
    if frequency and frequency != "None":
        parts.append(f"fréquence de mise à jour {FREQUENCIES_FR.get(frequency, frequency)}")
    if updated and updated != "None":
        parts.append(f"dernière mise à jour le {updated[:10]}")
    if parts:
        findings.lines.append("D'après sa fiche : " + ", ".join(parts) + ".")


def not_tabular(findings: Findings, resource_ids: Sequence[str]) -> None:
    """Say the files looked at are outside the Tabular API (an access constraint)."""
    findings.lines.append(
        "Accès : les fichiers examinés ("
        + ", ".join(resource_ids)
        + ") ne sont pas interrogeables via l'API tabulaire ; il faut les télécharger."
    )


def described_filter(code: str) -> str:
    """`` (column = value)`` for the Tabular filter a count program sent ("" without one)."""
    condition = re.search(r"params = \{'([^']+)': '([^']*)'", code)
    return f" ({condition.group(1)} = {condition.group(2)})" if condition else ""


def add_row_count(findings: Findings, probe: str, note: str) -> None:
    """Add the total row count a Tabular probe printed (``note`` says what it counts)."""
    resource_id, _, _ = tabular_preview(probe)
    found = re.search(r"total (\d+)", probe)
    if resource_id and found:
        findings.lines.append(f"Le fichier {resource_id} compte {found.group(1)} lignes {note}.")
        findings.cite(None, resource_id)


def add_metrics(findings: Findings, metrics: Observation | None, question: str) -> bool:
    """Add the visits and downloads read from a metrics result; whether a figure was added."""
    if metrics is None or metrics.failed:
        return False
    line = metrics_line(metrics.text, month_asked(question))
    if line:
        findings.lines.append(f"Statistiques de fréquentation, {line}.")
    return bool(line)


def closest(findings: Findings, datasets: Sequence[Listed]) -> None:
    """Say plainly no figure was found and point to the closest datasets of the search."""
    findings.lines.append(
        "Je n'ai pas trouvé de chiffre qui réponde exactement à la question dans ces données."
    )
    others = [d for d in datasets[:3] if d.url]
    if others:
        findings.lines.append(
            "Sources les plus proches : "
            + " ; ".join(f"« {d.title} » ({d.url})" for d in others)
            + "."
        )
        for item in others:
            findings.cite(item.url, item.id)


# ---------------------------------------------------------------------------------- code


@dataclass(frozen=True)
class ThoroughCode:
    """The thorough chain written as programs, one request each (``code`` without MCP).

    Programs are told apart by their first comment line (``# search``, ``# dataset``...), as
    a person labels notebook cells.
    """

    question: str
    seen: Sequence[Observation]
    bases: ApiBases
    guidance: Guidance
    max_resource_probes: int
    cli: bool = False

    def done(self, label: str) -> list[Observation]:
        """The programs (or ``datagouv`` commands) of a step, in order."""
        return [
            s
            for s in self.seen
            if (s.tool == EXECUTE_PYTHON and str(s.args.get("code", "")).startswith(f"# {label}\n"))
            or (
                s.tool == EXECUTE_CLI
                and label in _CLI
                and str(s.args.get("command", "")).startswith(_CLI[label])
            )
        ]

    def step(self) -> Step:
        """The next program, or the answer."""
        api = self.bases.api
        searches = self.done("search")
        query = next_query(self.question, searches, row_titles)
        if query is not None:
            return _labelled(
                "search",
                f"r = httpx.get({api + (self.guidance.search_path or V1_SEARCH)!r}, "
                f"params={{'q': {query!r}, 'page_size': 5}}, timeout=30)",
                "r.raise_for_status()",
                "for d in r.json()['data']:",
                "    print(d['id'], '|', d['title'], '|', d['page'])",
            )
        datasets = [] if not searches or searches[-1].failed else pipe_rows(searches[-1].text)
        datasets = most_related(self.question, datasets, lambda row: row[1] if len(row) > 1 else "")
        if datasets:
            dataset_id = datasets[0][0]
            step = self._dataset(dataset_id)
            if step is not None:
                return step
        if asks_for_api(self.question):
            step = self._dataservice()
            if step is not None:
                return step
        return self._final(datasets)

    def _dataset(self, dataset_id: str) -> Call | None:
        if not self.done("dataset"):
            if self.cli:
                return Call(EXECUTE_CLI, {"command": f"{_CLI['dataset']} {dataset_id}"})
            return _labelled(
                "dataset",
                f"d = httpx.get({self.bases.api + '1/datasets/' + dataset_id + '/'!r}, "
                "timeout=30).json()",
                "print('Title:', d['title'])",
                "print('Page:', d['page'])",
                "for r in d['resources']:",
                "    print(r['id'], '|', r['title'], '|', r['format'])",
            )
        if is_quantitative(self.question):
            step = self._data()
            if step is not None:
                return step
        metrics_path = self.guidance.metrics_path
        wants_metrics = asks_for_metrics(self.question) and metrics_path and self.bases.metrics
        if wants_metrics and metrics_path and self.bases.metrics and not self.done("metrics"):
            url = self.bases.metrics + metrics_path.replace("{id}", dataset_id)
            return _labelled(
                "metrics",
                f"r = httpx.get({url!r}, timeout=30)",
                "r.raise_for_status()",
                "for m in r.json()['data']:",
                "    print(m['metric_month'], '|', m.get('monthly_visit'), '|', "
                "m.get('monthly_download_resource'))",
            )
        return None

    def _resources(self) -> list[list[str]]:
        listing = self.done("dataset")
        if not listing or listing[0].failed:
            return []
        if listing[0].tool == EXECUTE_CLI:
            return resources_of(listing[0])
        return [row for row in pipe_rows(listing[0].text) if len(row) >= 3]

    def _data(self) -> Call | None:
        probes = self.done("probe")
        available = [p for p in probes if not p.failed and tabular_preview(p.text)[0]]
        if not available:
            programs = [str(p.args.get("code", "")) for p in probes]
            candidates = [r[0] for r in self._resources() if not any(r[0] in p for p in programs)]
            if candidates and len(probes) < self.max_resource_probes:
                rid = candidates[0]
                return _labelled(
                    "probe",
                    f"url = {self.bases.tabular + 'resources/' + rid + '/data/'!r}",
                    "r = httpx.get(url, params={'page_size': 5}, timeout=30)",
                    "if r.status_code == 200:",
                    "    body = r.json()",
                    f"    print('resource', {rid!r}, 'total', body['meta']['total'])",
                    "    for row in body['data']:",
                    "        print(row)",
                    "else:",
                    f"    print('resource', {rid!r}, 'not in the Tabular API:', r.status_code)",
                )
            return None
        if self.done("count"):
            return None
        resource_id, columns, rows = tabular_preview(available[0].text)
        derived = derive_filter(self.question, columns, rows)
        if resource_id is None or derived is None:
            return None
        param = self.guidance.filter_param(derived.column, derived.operator)
        if param is None:
            return None  # the tool description gives no filter syntax; the docs may
        return _labelled(
            "count",
            f"url = {self.bases.tabular + 'resources/' + resource_id + '/data/'!r}",
            f"params = {{{param!r}: {derived.value!r}, "
            f"'page_size': {1 if self.guidance.count_one_page else 20}}}",
            "r = httpx.get(url, params=params, timeout=30)",
            "r.raise_for_status()",
            "print('total', r.json()['meta']['total'])",
        )

    def _dataservice(self) -> Call | None:
        searches = self.done("dataservices")
        query = next_query(self.question, searches, row_titles)
        if query is not None:
            return _labelled(
                "dataservices",
                f"r = httpx.get({self.bases.api + '1/dataservices/'!r}, "
                f"params={{'q': {query!r}, 'page_size': 3}}, timeout=30)",
                "r.raise_for_status()",
                "for s in r.json()['data']:",
                "    print(s['id'], '|', s['title'], '|', s.get('page'))",
            )
        services = [] if not searches or searches[-1].failed else pipe_rows(searches[-1].text)
        if services and not self.done("dataservice"):
            url = self.bases.api + "1/dataservices/" + services[0][0] + "/"
            return _labelled(
                "dataservice",
                f"s = httpx.get({url!r}, timeout=30).json()",
                "print('Base API URL:', s.get('base_api_url'))",
                "print('OpenAPI spec:', s.get('machine_documentation_url'))",
            )
        return None

    def _final(self, datasets: Sequence[Sequence[str]]) -> FinalAnswer:
        findings = Findings()
        listed = [
            Listed(row[1], row[0], row[2] if len(row) > 2 else None)
            for row in datasets
            if len(row) >= 2
        ]
        if listed:
            top = listed[0]
            findings.lines.append(
                f"Jeu de données : « {top.title} » ({top.url}), identifiant {top.id}."
            )
            findings.cite(top.url, top.id)
            figure = self._data_findings(findings)
            metrics = self.done("metrics")
            figure = add_metrics(findings, metrics[0] if metrics else None, self.question) or figure
            if self.guidance.closest_sources and is_quantitative(self.question) and not figure:
                closest(findings, listed)
        searches = self.done("dataservices")
        services = [] if not searches or searches[-1].failed else pipe_rows(searches[-1].text)
        if services:
            service = (services[0] + ["", "", ""])[:3]
            text = f"API : « {service[1]} » ({service[2]})"
            details = self.done("dataservice")
            if details and not details[0].failed:
                base = field_value(details[0].text, "Base API URL")
                spec = field_value(details[0].text, "OpenAPI spec")
                if base and base != "None":
                    text += f", adresse de base {base}"
                if spec and spec != "None":
                    text += f", spécification OpenAPI {spec}"
            findings.lines.append(text + ".")
            findings.cite(service[2] or None, service[0])
        return findings.answer(NOTHING_FOUND)

    def _data_findings(self, findings: Findings) -> bool:
        probes = [p for p in self.done("probe") if not p.failed]
        available = [p for p in probes if tabular_preview(p.text)[0]]
        counts = [c for c in self.done("count") if not c.failed]
        if counts and available:
            resource_id, _, _ = tabular_preview(available[0].text)
            total = re.sub(r"\D", "", counts[-1].text.split("total", 1)[-1])
            described = described_filter(str(counts[-1].args["code"]))
            findings.lines.append(
                f"D'après l'API tabulaire, {total} lignes du fichier {resource_id} "
                f"correspondent{described}."
            )
            findings.cite(None, resource_id)
            return True
        if available:
            add_row_count(findings, available[0].text, "au total (aucun filtre appliqué)")
        elif probes and self.guidance.access_constraints:
            ids = [m.group(1) for p in probes for m in [re.search(r"resource (\S+)", p.text)] if m]
            not_tabular(findings, ids)
        return False


_CLI = {"dataset": "datagouv dataset get"}
"""The ``datagouv`` command standing for a step, when the CLI is offered."""


def _labelled(label: str, *lines: str) -> Call:
    return Call(EXECUTE_PYTHON, {"code": f"# {label}\n" + program(*lines)})


def listed_titles(text: str) -> list[str]:
    """The titles an MCP or web search result lists."""
    return [item.title for item in numbered_items(text)]


def listed_texts(text: str) -> list[str]:
    """What an MCP search result shows of each item: title, tags, organization, description."""
    return [f"{item.title} {listing_text(item)}" for item in numbered_items(text)]


def row_titles(text: str) -> list[str]:
    """The titles a search program printed (``id | title | ...`` rows)."""
    return [row[1] for row in pipe_rows(text) if len(row) > 1]
