"""Offline baseline agents: deterministic policies driven through pydantic-ai's ``FunctionModel``.

They are **not LLMs**. Each reads the question and the tool schemas the agent really offers
(``AgentInfo.function_tools``), makes real tool calls through the real toolsets, and builds its
final answer only from what the tools returned. Their scores therefore differ for real reasons
(how far they follow the catalog chain, which tool surface the MCP version offers) and give a
floor that LLM agents should beat.

* ``baseline-oneshot`` (needs ``mcp`` or ``web_search``): one search, answers with the first
  result.
* ``baseline-thorough`` (needs ``mcp``; with ``web_search`` only: search then fetch): search →
  dataset info → resources → resource info → data, with a filter derived from the question when
  it can; dataservices and metrics when the question asks for them.
* ``baseline-coder`` (needs ``code`` or ``python-sdk``): writes Python against the REST and
  Tabular APIs, and uses ``datagouv`` commands when ``datagouv-cli`` is there.

No baseline reads the instructions, so a cell with ``skills`` is skipped for them, as are cells
without the capabilities a policy needs (``unsupported`` gives the reason).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import ToolDefinition

from datagouv_eval_pipeline.agents.output import FinalAnswer

NOT_AN_LLM = "deterministic baseline policy, not an LLM"

# ---------------------------------------------------------------------------------- text

_STOPWORD_TEXT = """
    a ai aie aient aies ait alors as au aucun aucune aupres aura aurai auraient aurais aurait
    aussi autre autres aux avais avait avant avec avez aviez avoir avons ayant bien bon bonjour
    ca car ce ceci cela celle celles celui cependant certain certains ces cet cette ceux chaque
    chez ci comme comment concernant d dans de des deja depuis dire dit doit donc dont du elle
    elles en encore entre es est et etaient etais etait etant ete etre eu eux faire fait faut
    font hors ici il ils j je jusqu l la le les leur leurs lui m ma mais me meme memes mes moi
    moins mon n ne ni nos notre nous on ont ou par parce pas peu peut peuvent peux plus plutot
    pour pourquoi pouvez pouvoir puis qu quand que quel quelle quelles quels qui quoi s sa sans
    se selon ses si sinon soit son sont sous sur t ta te tes toi ton toujours tous tout toute
    toutes tres tu un une unes uns vers voici voila vos votre vous y aimerais aimerions
    voudrais voudrions souhaite souhaiterais cherche cherchons recherche trouver trouve trouvez
    donner donnez dites savoir connaitre obtenir obtenu recuperer verifier utiliser existe
    existent exact exacte idealement possible merci svp prepare prepare redige travaille dois
    doit devons besoin veux voulons afin ainsi exemple etc combien nombre beaucoup liste
    chiffre chiffres quelles lesquels laquelle lequel the of and or to in for on with is are
    what which how many much do does can fr fichier fichiers fais suis sommes
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
"""Words that carry no search meaning (French and English function words, question verbs and
a few filler words)."""

_MONTHS = {
    "janvier": 1,
    "fevrier": 2,
    "mars": 3,
    "avril": 4,
    "mai": 5,
    "juin": 6,
    "juillet": 7,
    "aout": 8,
    "septembre": 9,
    "octobre": 10,
    "novembre": 11,
    "decembre": 12,
}
_DATE_OPERATORS = {
    "avant": "strictly_less",
    "apres": "strictly_greater",
    "depuis": "greater",
    "partir": "greater",
    "jusqu": "less",
}
_QUANTITY = re.compile(r"\b(combien|nombre|total|quel est le chiffre|how many)\b")
_API_WORDS = re.compile(r"\b(api|apis|service web|interface de programmation|webservice)\b")
_METRICS_WORDS = re.compile(
    r"\b(visite|visites|telechargement|telechargements|consulte|frequentation)\b"
)
_PREPOSITIONS = frozenset({"à", "a", "de", "du", "d'", "d’"})
_PLACE_NAME = re.compile(r"[A-ZÀ-Ý][a-zà-ÿ]+(?:-[A-ZÀ-Ý]?[a-zà-ÿ]+)*")


def fold(text: str) -> str:
    """Lower case without accents (``Équipements`` → ``equipements``)."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).lower()


def keywords(question: str, limit: int = 12) -> str:
    """The search words of a question: folded, without stop words, first ``limit`` kept."""
    words: list[str] = []
    for word in re.findall(r"[a-z0-9]+", fold(question)):
        if word in _STOPWORDS or (len(word) < 3 and not word.isdigit()) or word in words:
            continue
        if word.isdigit() and len(word) != 4:
            continue  # keep years, drop day numbers and quantities
        words.append(word)
    return " ".join(words[:limit])


def is_quantitative(question: str) -> bool:
    """Whether the question asks for a count or a figure."""
    return bool(_QUANTITY.search(fold(question)))


def asks_for_api(question: str) -> bool:
    """Whether the question asks for an API."""
    return bool(_API_WORDS.search(fold(question)))


def asks_for_metrics(question: str) -> bool:
    """Whether the question asks for visits or downloads."""
    return bool(_METRICS_WORDS.search(fold(question)))


@dataclass(frozen=True)
class DateBound:
    """A date condition read from the question (``avant le 28 juin 2012``).

    Attributes:
        operator: Tabular operator (``strictly_less``, ``greater``...).
        value: ISO date.
        creation: The question is about creation or publication dates.
    """

    operator: str
    value: str
    creation: bool


def date_bound(question: str) -> DateBound | None:
    """The first ``avant/après/depuis <date>`` condition of the question, if any."""
    folded = fold(question)
    pattern = re.compile(
        r"\b(avant|apres|depuis|partir|jusqu)\w*\s+(?:du\s+|le\s+|au\s+|'au\s+)?"
        r"(?:(\d{4})-(\d{2})-(\d{2})|(\d{1,2})(?:er)?\s+(" + "|".join(_MONTHS) + r")\s+(\d{4}))"
    )
    match = pattern.search(folded)
    if match is None:
        return None
    word = match.group(1)
    if match.group(2):
        value = f"{match.group(2)}-{match.group(3)}-{match.group(4)}"
    else:
        value = f"{match.group(7)}-{_MONTHS[match.group(6)]:02d}-{int(match.group(5)):02d}"
    creation = bool(re.search(r"\b(publi|cre[ea]|ouvert|mis en ligne)", folded))
    return DateBound(_DATE_OPERATORS[word], value, creation)


@dataclass(frozen=True)
class Place:
    """A place named in the question.

    Attributes:
        name: As written (``Toulouse``).
        department: The question calls it a department (``département du Gers``).
    """

    name: str
    department: bool


def place(question: str) -> Place | None:
    """The first capitalised place name after ``à/de/du/d'`` in the question, if any."""
    words = re.findall(r"[\wÀ-ÿ’'-]+", question)
    for index in range(1, len(words)):
        word = words[index]
        head, _, tail = word.partition("'") if "'" in word else word.partition("’")
        if tail and head.lower() == "d" and _PLACE_NAME.fullmatch(tail):
            previous, name = words[index - 1], tail
        elif words[index - 1].lower() in _PREPOSITIONS and _PLACE_NAME.fullmatch(word):
            previous, name = words[index - 2] if index > 1 else "", word
        else:
            continue
        if fold(name) in {"france", "etat", "republique"}:
            continue
        return Place(name, department=fold(previous).startswith("departement"))
    return None


def month_asked(question: str) -> str | None:
    """``YYYY-MM`` of a ``<month> <year>`` in the question (``mai 2026`` → ``2026-05``)."""
    match = re.search(r"\b(" + "|".join(_MONTHS) + r")\s+(\d{4})\b", fold(question))
    if match is None:
        return None
    return f"{match.group(2)}-{_MONTHS[match.group(1)]:02d}"


# ---------------------------------------------------------------------------------- history


@dataclass(frozen=True)
class Observation:
    """A tool call the policy made and what came back.

    Attributes:
        tool: Tool name.
        args: Arguments sent.
        text: The result text (or the error text).
        failed: Whether the tool reported a failure.
    """

    tool: str
    args: Mapping[str, Any]
    text: str
    failed: bool


def question_of(messages: Sequence[ModelMessage]) -> str:
    """The user's question: the first user prompt of the conversation."""
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    return part.content
    return ""


def observations_of(
    messages: Sequence[ModelMessage], ignore: Collection[str] = ()
) -> list[Observation]:
    """The tool calls made so far, in order, with their results."""
    calls: list[ToolCallPart] = []
    results: dict[str, tuple[str, bool]] = {}
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolCallPart) and part.tool_name not in ignore:
                calls.append(part)
            elif isinstance(part, ToolReturnPart):
                content = (
                    part.content
                    if isinstance(part.content, str)
                    else json.dumps(part.content, ensure_ascii=False, default=str)
                )
                results[part.tool_call_id] = (content, part.outcome != "success")
            elif isinstance(part, RetryPromptPart):  # pragma: no cover - legacy shape
                results[part.tool_call_id] = (str(part.content), True)
    return [
        Observation(
            call.tool_name,
            call.args_as_dict(),
            *results.get(call.tool_call_id, ("", True)),
        )
        for call in calls
    ]


# ---------------------------------------------------------------------------------- tools


@dataclass(frozen=True)
class ToolSurface:
    """The tools the agent offers, looked up by role."""

    tools: Mapping[str, ToolDefinition]

    @classmethod
    def of(cls, info: AgentInfo) -> ToolSurface:
        """The function tools of a request."""
        return cls({tool.name: tool for tool in info.function_tools})

    def has(self, name: str) -> bool:
        """Whether a tool of that name is offered."""
        return name in self.tools

    def params(self, name: str) -> tuple[set[str], set[str]]:
        """(all parameter names, required ones) of a tool."""
        schema = self.tools[name].parameters_json_schema
        return set(schema.get("properties") or {}), set(schema.get("required") or [])

    def args(self, name: str, values: Mapping[str, Any]) -> dict[str, Any] | None:
        """Arguments for ``name`` from ``values``, keeping only parameters the schema declares.

        Returns None when a required parameter has no value (the call cannot be made).
        """
        if name not in self.tools:
            return None
        known, required = self.params(name)
        if required - {key for key, value in values.items() if value is not None}:
            return None
        return {key: value for key, value in values.items() if key in known and value is not None}


@dataclass(frozen=True)
class Call:
    """The policy's next step: call a tool."""

    tool: str
    args: dict[str, Any]


Step = Call | FinalAnswer


class BaselinePolicy(Protocol):
    """A deterministic agent policy."""

    @property
    def name(self) -> str:
        """The model name in ``models.yml``."""
        ...

    @property
    def label(self) -> str:
        """What the policy does, saying it is not an LLM."""
        ...

    def unsupported(self, capabilities: Collection[str]) -> str | None:
        """Why the policy cannot run with these capabilities, or None."""
        ...

    def decide(self, question: str, seen: Sequence[Observation], tools: ToolSurface) -> Step:
        """The next step given everything seen so far."""
        ...


def _skills_reason(name: str, capabilities: Collection[str]) -> str | None:
    if "skills" in capabilities:
        return f"{name} does not read instructions, so the skills document would have no effect"
    return None


# ---------------------------------------------------------------------------------- parsing

_HEX_ID = r"[0-9a-f]{24}"
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


@dataclass(frozen=True)
class Listed:
    """One item of a numbered listing in a tool result."""

    title: str
    id: str | None
    url: str | None
    fields: Mapping[str, str] = field(default_factory=dict)


def numbered_items(text: str) -> list[Listed]:
    """Items of ``1. Title`` listings with indented ``Key: value`` lines (MCP result layout)."""
    items: list[Listed] = []
    blocks = re.split(r"(?m)^\s{0,2}(?=\d+\.\s)", text)
    for block in blocks:
        head = re.match(r"\d+\.\s+(.*)", block)
        if head is None:
            continue
        fields: dict[str, str] = {}
        for line in block.splitlines()[1:]:
            key, sep, value = line.strip().partition(": ")
            if sep and key and key not in fields:
                fields[key] = value.strip()
        item_id = fields.get("Resource ID") or fields.get("ID")
        url = fields.get("URL")
        if url is None:
            bare = re.search(r"(?m)^\s+(https?://\S+)\s*$", block)
            url = bare.group(1) if bare else None
        items.append(Listed(head.group(1).strip(), item_id, url, fields))
    return items


def field_value(text: str, key: str) -> str | None:
    """The value of a ``Key: value`` line."""
    match = re.search(rf"(?m)^\s*{re.escape(key)}:\s*(.+?)\s*$", text)
    return match.group(1) if match else None


def total_rows(text: str) -> int | None:
    """``Total rows (Tabular API): N`` (or ``Total rows: N``) of a data result."""
    match = re.search(r"Total rows(?: \(Tabular API\))?:\s*([\d,\s]+)", text)
    if match is None:
        return None
    digits = re.sub(r"\D", "", match.group(1))
    return int(digits) if digits else None


def preview_rows(text: str) -> tuple[list[str], list[dict[str, str]]]:
    """(columns, rows) of a data result (``Columns:`` line and ``Row N:`` blocks)."""
    columns_line = field_value(text, "Columns")
    columns = [c.strip() for c in columns_line.split(", ")] if columns_line else []
    rows: list[dict[str, str]] = []
    current: dict[str, str] | None = None
    for line in text.splitlines():
        if re.match(r"\s*Row \d+:\s*$", line):
            current = {}
            rows.append(current)
        elif current is not None and line.startswith("  "):
            key, sep, value = line.strip().partition(": ")
            if sep:
                current[key] = value
        elif current is not None and not line.strip():
            current = None
    return columns, rows


@dataclass(frozen=True)
class DerivedFilter:
    """A Tabular filter derived from the question and a preview of the data."""

    column: str
    operator: str
    value: str

    def describe(self) -> str:
        """``column operator value`` in words."""
        return f"{self.column} {self.operator} {self.value}"


def derive_filter(
    question: str, columns: Sequence[str], rows: Sequence[Mapping[str, Any]]
) -> DerivedFilter | None:
    """A filter for the question on a table, or None when none can be derived.

    A place (``à Toulouse``, ``du Gers``) filters the commune or department name column, in the
    case the preview shows; otherwise a date bound (``avant le 28 juin 2012``) filters a date
    column (the creation date first when the question is about publication).
    """
    sample = rows[0] if rows else {}
    where = place(question)
    if where is not None:
        pattern = (
            r"dep.*(nom|lib)|(nom|lib).*dep"
            if where.department
            else (r"commune|ville|localite|municipal")
        )
        for column in columns:
            folded = fold(column)
            if not re.search(pattern, folded) or re.search(r"code|cp\b|insee", folded):
                continue
            value = str(sample.get(column, ""))
            if value and re.fullmatch(r"[\d\s.,-]+", value):
                continue
            name = where.name.upper() if value and value.isupper() else where.name
            return DerivedFilter(column, "exact", name)
    bound = date_bound(question)
    if bound is not None:
        dated = [c for c in columns if re.match(r"\d{4}-\d{2}-\d{2}", str(sample.get(c, "")))] or [
            c for c in columns if re.search(r"date|_at$|created|modified", fold(c))
        ]
        if bound.creation:
            dated.sort(key=lambda c: 0 if re.search(r"creat|publi", fold(c)) else 1)
        if dated:
            return DerivedFilter(dated[0], bound.operator, bound.value)
    return None


def metrics_line(text: str, month: str | None) -> str | None:
    """``visits, downloads`` of a month in a ``get_metrics`` table (latest month if None)."""
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.split("|")]
        is_month = len(cells) >= 3 and re.fullmatch(r"\d{4}-\d{2}", cells[0])
        if is_month and (month is None or cells[0] == month):
            visits = re.sub(r"\D", "", cells[1])
            downloads = re.sub(r"\D", "", cells[2])
            return f"{cells[0]} : {visits} visites et {downloads} téléchargements"
    return None


# ---------------------------------------------------------------------------------- answers


@dataclass
class Findings:
    """What a policy learnt, turned into the final answer."""

    lines: list[str] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)

    def cite(self, url: str | None, *ids: str | None) -> None:
        """Remember a URL and ids the answer relies on."""
        if url and url not in self.urls:
            self.urls.append(url)
        for item in ids:
            if item and item not in self.ids:
                self.ids.append(item)

    def answer(self, declined_text: str) -> FinalAnswer:
        """The final answer; declined when nothing was found."""
        if not self.lines:
            return FinalAnswer(answer=declined_text, declined=True)
        return FinalAnswer(
            answer="\n".join(self.lines), declined=False, cited_urls=self.urls, ids_used=self.ids
        )


NOTHING_FOUND = (
    "Je n'ai trouvé aucun jeu de données correspondant à cette demande sur data.gouv.fr."
)


def _last(seen: Sequence[Observation], tool: str) -> Observation | None:
    for observation in reversed(seen):
        if observation.tool == tool:
            return observation
    return None


def _calls(seen: Sequence[Observation], tool: str) -> list[Observation]:
    return [observation for observation in seen if observation.tool == tool]


# ---------------------------------------------------------------------------------- oneshot


@dataclass(frozen=True)
class OneShotPolicy:
    """Search once and answer with the first result."""

    name: str = "baseline-oneshot"
    label: str = f"{NOT_AN_LLM}: one search, answers with the first result"

    def unsupported(self, capabilities: Collection[str]) -> str | None:
        """Needs ``mcp`` or ``web_search``; never reads skills."""
        if not {"mcp", "web_search"} & set(capabilities):
            return f"{self.name} needs the mcp or web_search capability to search"
        return _skills_reason(self.name, capabilities)

    def decide(self, question: str, seen: Sequence[Observation], tools: ToolSurface) -> Step:
        """Search, then answer from the first hit."""
        search = "search_datasets" if tools.has("search_datasets") else "web_search"
        if not seen:
            args = tools.args(search, {"query": keywords(question)})
            if args is None:
                return FinalAnswer(answer="Aucun outil de recherche disponible.", declined=True)
            return Call(search, args)
        first = seen[0]
        if first.failed:
            return FinalAnswer(answer=f"La recherche a échoué : {first.text[:300]}", declined=True)
        items = numbered_items(first.text)
        if not items:
            return FinalAnswer(answer=NOTHING_FOUND, declined=True)
        top = items[0]
        findings = Findings()
        findings.lines.append(
            f"Le jeu de données le plus pertinent trouvé sur data.gouv.fr est « {top.title} »"
            + (f" : {top.url}" if top.url else ".")
        )
        findings.cite(top.url, top.id)
        return findings.answer(NOTHING_FOUND)


# ---------------------------------------------------------------------------------- thorough


@dataclass(frozen=True)
class ThoroughPolicy:
    """Follow the catalog chain: search, dataset, resources, resource, data (and APIs, metrics)."""

    name: str = "baseline-thorough"
    label: str = (
        f"{NOT_AN_LLM}: search → dataset → resources → resource → data, filter derived from "
        "the question"
    )
    max_resource_probes: int = 3

    def unsupported(self, capabilities: Collection[str]) -> str | None:
        """Needs ``mcp`` (or ``web_search``); never reads skills."""
        if not {"mcp", "web_search"} & set(capabilities):
            return f"{self.name} needs the mcp or web_search capability"
        return _skills_reason(self.name, capabilities)

    def decide(self, question: str, seen: Sequence[Observation], tools: ToolSurface) -> Step:
        """The next step of the chain (see the module docstring)."""
        if tools.has("search_datasets"):
            return self._mcp(question, seen, tools)
        return self._web(question, seen, tools)

    # -- web search only: search, fetch the first page, answer from it
    def _web(self, question: str, seen: Sequence[Observation], tools: ToolSurface) -> Step:
        search = _last(seen, "web_search")
        if search is None:
            args = tools.args("web_search", {"query": keywords(question)})
            if args is None:
                return FinalAnswer(answer="Aucun outil de recherche disponible.", declined=True)
            return Call("web_search", args)
        items = [] if search.failed else numbered_items(search.text)
        if not items:
            return FinalAnswer(answer=NOTHING_FOUND, declined=True)
        top = items[0]
        page = _last(seen, "http_fetch")
        if page is None and top.url and tools.has("http_fetch"):
            return Call("http_fetch", {"url": top.url})
        findings = Findings()
        findings.lines.append(f"Source trouvée sur data.gouv.fr : « {top.title} » ({top.url}).")
        if page is not None and not page.failed:
            found = re.search(_HEX_ID, page.text)
            summary = " ".join(page.text.split("\n", 2)[-1].split())[:400]
            findings.lines.append(f"Extrait de la page : {summary}")
            findings.cite(top.url, found.group(0) if found else None)
        else:
            findings.cite(top.url)
        return findings.answer(NOTHING_FOUND)

    # -- MCP
    def _mcp(self, question: str, seen: Sequence[Observation], tools: ToolSurface) -> Step:
        query = keywords(question)
        search = _last(seen, "search_datasets")
        if search is None:
            args = tools.args("search_datasets", {"query": query})
            return Call("search_datasets", args or {"query": query})
        datasets = [] if search.failed else [i for i in numbered_items(search.text) if i.id]
        dataset = datasets[0] if datasets else None
        if dataset is not None and dataset.id:
            step = self._dataset_chain(question, dataset.id, seen, tools)
            if step is not None:
                return step
        if asks_for_api(question) and tools.has("search_dataservices"):
            step = self._dataservice_chain(query, seen, tools)
            if step is not None:
                return step
        return self._final(question, dataset, seen)

    def _dataset_chain(
        self, question: str, dataset_id: str, seen: Sequence[Observation], tools: ToolSurface
    ) -> Call | None:
        for tool in ("get_dataset_info", "list_dataset_resources"):
            if tools.has(tool) and _last(seen, tool) is None:
                return Call(tool, {"dataset_id": dataset_id})
        resources = self._resources(seen)
        probes = _calls(seen, "get_resource_info")
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
            step = self._data(question, dataset_id, chosen, resources, seen, tools)
            if step is not None:
                return step
        wants_metrics = asks_for_metrics(question) and tools.has("get_metrics")
        if wants_metrics and _last(seen, "get_metrics") is None:
            args = tools.args("get_metrics", {"dataset_id": dataset_id})
            if args is not None:
                return Call("get_metrics", args)
        return None

    @staticmethod
    def _resources(seen: Sequence[Observation]) -> list[Listed]:
        listing = _last(seen, "list_dataset_resources")
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
        resources: Sequence[Listed],
        seen: Sequence[Observation],
        tools: ToolSurface,
    ) -> Call | None:
        if tools.has("query_resource_data"):
            if resource_id is None:
                return None
            queries = _calls(seen, "query_resource_data")
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
                        "page_size": 20,
                    }
                    args = tools.args("query_resource_data", values)
                    if args is not None:
                        return Call("query_resource_data", args)
            return None
        if tools.has("query_dataset_data") and _last(seen, "query_dataset_data") is None:
            args = tools.args(
                "query_dataset_data", {"question": question, "dataset_id": dataset_id}
            )
            if args is not None:
                return Call("query_dataset_data", args)
        return None

    def _dataservice_chain(
        self, query: str, seen: Sequence[Observation], tools: ToolSurface
    ) -> Call | None:
        search = _last(seen, "search_dataservices")
        if search is None:
            args = tools.args("search_dataservices", {"query": query})
            return Call("search_dataservices", args) if args is not None else None
        services = [] if search.failed else [i for i in numbered_items(search.text) if i.id]
        if not services:
            return None
        service_id = services[0].id
        for tool in ("get_dataservice_info", "get_dataservice_openapi_spec"):
            if tools.has(tool) and _last(seen, tool) is None:
                return Call(tool, {"dataservice_id": service_id})
        return None

    def _final(
        self, question: str, dataset: Listed | None, seen: Sequence[Observation]
    ) -> FinalAnswer:
        findings = Findings()
        if dataset is not None:
            info = _last(seen, "get_dataset_info")
            url = (
                field_value(info.text, "URL") if info and not info.failed else None
            ) or dataset.url
            findings.lines.append(
                f"Jeu de données : « {dataset.title} » ({url}), identifiant {dataset.id}."
            )
            findings.cite(url, dataset.id)
            self._data_findings(question, seen, findings)
            metrics = _last(seen, "get_metrics")
            if metrics is not None and not metrics.failed:
                line = metrics_line(metrics.text, month_asked(question))
                if line:
                    findings.lines.append(f"Statistiques de fréquentation, {line}.")
        services = _last(seen, "search_dataservices")
        if services is not None and not services.failed:
            listed = [i for i in numbered_items(services.text) if i.id]
            if listed:
                service = listed[0]
                info = _last(seen, "get_dataservice_info")
                spec = field_value(info.text, "OpenAPI/Swagger spec") if info else None
                base = field_value(info.text, "Base API URL") if info else None
                text = f"API : « {service.title} » ({service.url})"
                if base:
                    text += f", adresse de base {base}"
                if spec:
                    text += f", spécification OpenAPI {spec}"
                findings.lines.append(text + ".")
                findings.cite(service.url, service.id)
        return findings.answer(NOTHING_FOUND)

    @staticmethod
    def _data_findings(question: str, seen: Sequence[Observation], findings: Findings) -> None:
        probes = [p for p in _calls(seen, "get_resource_info") if not p.failed]
        queries = [q for q in _calls(seen, "query_resource_data") if not q.failed]
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
            last = queries[-1]
            total = total_rows(last.text)
            column = last.args.get("filter_column")
            if total is not None and column:
                findings.lines.append(
                    f"En interrogeant l'API tabulaire avec le filtre {column} "
                    f"{last.args.get('filter_operator', 'exact')} {last.args.get('filter_value')}"
                    f", on obtient {total} lignes."
                )
            elif total is not None:
                findings.lines.append(
                    f"Le fichier compte {total} lignes (je n'ai pas pu déduire de filtre de la "
                    "question)."
                )
        dataset_query = _last(seen, "query_dataset_data")
        if dataset_query is not None and not dataset_query.failed:
            total = total_rows(dataset_query.text)
            if total is not None:
                findings.lines.append(
                    f"Le premier fichier interrogeable compte {total} lignes au total (l'outil "
                    "de cette version ne permet pas de filtrer)."
                )


# ---------------------------------------------------------------------------------- coder


@dataclass(frozen=True)
class ApiBases:
    """Base URLs the coder reads from the ``execute_python`` tool description."""

    api: str
    tabular: str
    metrics: str | None

    @classmethod
    def from_description(cls, description: str) -> ApiBases | None:
        """Parse ``- main API …: URL`` style lines; None when the main API is not given."""

        def url_after(label: str) -> str | None:
            match = re.search(rf"(?m)^- {label}[^:]*:\s*(https?://\S+)", description)
            return match.group(1) if match else None

        api, tabular = url_after("main API"), url_after("Tabular API")
        if api is None or tabular is None:
            return None
        return cls(api=api, tabular=tabular, metrics=url_after("Metrics API"))


def _program(*lines: str) -> str:
    return "\n".join(["import httpx", "", *lines]) + "\n"


@dataclass(frozen=True)
class CoderPolicy:
    """Write Python against the REST and Tabular APIs (``datagouv`` commands when available)."""

    name: str = "baseline-coder"
    label: str = f"{NOT_AN_LLM}: writes Python against the REST and Tabular APIs"

    def unsupported(self, capabilities: Collection[str]) -> str | None:
        """Needs ``code`` (or ``python-sdk``); never reads skills."""
        if not {"code", "python-sdk"} & set(capabilities):
            return f"{self.name} needs the code capability to run Python"
        return _skills_reason(self.name, capabilities)

    def decide(self, question: str, seen: Sequence[Observation], tools: ToolSurface) -> Step:
        """The next program to run, or the answer."""
        if not tools.has("execute_python"):
            return FinalAnswer(answer="Aucun outil d'exécution de code disponible.", declined=True)
        bases = ApiBases.from_description(tools.tools["execute_python"].description or "")
        if bases is None:
            return FinalAnswer(answer="Les adresses des API ne sont pas indiquées.", declined=True)
        steps = [s for s in seen if s.tool in ("execute_python", "execute_cli")]
        query = keywords(question)
        if not steps:
            return self._run(
                _program(
                    f"r = httpx.get({bases.api + '1/datasets/'!r}, "
                    f"params={{'q': {query!r}, 'page_size': 5}}, timeout=30)",
                    "r.raise_for_status()",
                    "for d in r.json()['data']:",
                    "    print(d['id'], '|', d['title'], '|', d['page'])",
                )
            )
        datasets = _pipe_rows(steps[0].text) if not steps[0].failed else []
        if not datasets:
            return self._api_or_final(question, query, bases, steps, None, tools)
        dataset_id, title, page = (datasets[0] + ["", "", ""])[:3]
        if len(steps) == 1:
            if tools.has("execute_cli"):
                return Call("execute_cli", {"command": f"datagouv dataset get {dataset_id}"})
            return self._run(
                _program(
                    f"url = {bases.api + '1/datasets/' + dataset_id + '/'!r}",
                    "d = httpx.get(url, timeout=30).json()",
                    "print(d['title'], '|', d['page'])",
                    "for r in d['resources']:",
                    "    print(r['id'], '|', r['title'], '|', r['format'])",
                )
            )
        resources = _resources_of(steps[1])
        done = len(steps)
        if is_quantitative(question) and resources and done == 2:
            return self._run(
                _program(
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
            resource_id, columns, rows = _tabular_preview(probe.text)
            derived = derive_filter(question, columns, rows) if resource_id else None
            if resource_id and derived is not None:
                return self._run(
                    _program(
                        f"url = {bases.tabular + 'resources/' + resource_id + '/data/'!r}",
                        f"params = {{{derived.column + '__' + derived.operator!r}: "
                        f"{derived.value!r}, 'page_size': 1}}",
                        "r = httpx.get(url, params=params, timeout=30)",
                        "r.raise_for_status()",
                        "print('total', r.json()['meta']['total'])",
                    )
                )
        final = self._api_or_final(question, query, bases, steps, (dataset_id, title, page), tools)
        return final

    @staticmethod
    def _run(code: str) -> Call:
        return Call("execute_python", {"code": code})

    def _api_or_final(
        self,
        question: str,
        query: str,
        bases: ApiBases,
        steps: Sequence[Observation],
        dataset: tuple[str, str, str] | None,
        tools: ToolSurface,
    ) -> Step:
        wants_api = asks_for_api(question)
        api_steps = [s for s in steps if "dataservices" in str(s.args.get("code", ""))]
        if wants_api and not api_steps:
            return self._run(
                _program(
                    f"r = httpx.get({bases.api + '1/dataservices/'!r}, "
                    f"params={{'q': {query!r}, 'page_size': 3}}, timeout=30)",
                    "r.raise_for_status()",
                    "for s in r.json()['data']:",
                    "    print(s['id'], '|', s['title'], '|', s.get('base_api_url'), '|', "
                    "s.get('machine_documentation_url'))",
                )
            )
        findings = Findings()
        if dataset is not None:
            dataset_id, title, page = dataset
            findings.lines.append(
                f"Jeu de données : « {title} » ({page}), identifiant {dataset_id}."
            )
            findings.cite(page, dataset_id)
            totals = [
                s for s in steps if s.tool == "execute_python" and s.text.startswith("total ")
            ]
            if totals:
                count = re.sub(r"\D", "", totals[-1].text.split()[1])
                program = str(totals[-1].args.get("code", ""))
                condition = re.search(r"params = \{'([^']+)': '([^']*)'", program)
                described = f" ({condition.group(1)} = {condition.group(2)})" if condition else ""
                findings.lines.append(
                    f"D'après l'API tabulaire, {count} lignes correspondent{described}."
                )
            elif len(steps) > 2 and is_quantitative(question):
                resource_id, _, _ = _tabular_preview(steps[2].text)
                total = re.search(r"total (\d+)", steps[2].text)
                if resource_id and total:
                    findings.lines.append(
                        f"Le fichier {resource_id} compte {total.group(1)} lignes (aucun filtre "
                        "déduit de la question)."
                    )
                    findings.cite(None, resource_id)
        if api_steps and not api_steps[0].failed:
            services = _pipe_rows(api_steps[0].text)
            if services:
                service = (services[0] + ["", "", "", ""])[:4]
                findings.lines.append(
                    f"API : « {service[1]} », adresse de base {service[2]}, documentation "
                    f"{service[3]} (identifiant {service[0]})."
                )
                findings.cite(None, service[0])
        return findings.answer(NOTHING_FOUND)


def _pipe_rows(text: str) -> list[list[str]]:
    return [
        [cell.strip() for cell in line.split(" | ")]
        for line in text.splitlines()
        if " | " in line and not line.startswith("[")
    ]


def _resources_of(step: Observation) -> list[list[str]]:
    if step.failed:
        return []
    if step.tool == "execute_cli":
        try:
            body, _ = json.JSONDecoder().raw_decode(step.text, max(0, step.text.find("{")))
        except ValueError:
            return []
        if not isinstance(body, dict):
            return []
        return [
            [str(r.get("id")), str(r.get("title")), str(r.get("format"))]
            for r in body.get("resources") or []
        ]
    return [row for row in _pipe_rows(step.text)[1:] if re.fullmatch(_UUID, row[0])]


def _tabular_preview(text: str) -> tuple[str | None, list[str], list[dict[str, Any]]]:
    found = re.search(rf"resource ({_UUID}) total \d+", text)
    if found is None:
        return None, [], []
    rows: list[dict[str, Any]] = []
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                import ast

                row = ast.literal_eval(line)
            except (ValueError, SyntaxError):
                continue
            if isinstance(row, dict):
                rows.append({k: v for k, v in row.items() if k != "__id"})
    columns = list(rows[0]) if rows else []
    return found.group(1), columns, rows


# ---------------------------------------------------------------------------------- model

POLICIES: Mapping[str, BaselinePolicy] = {
    policy.name: policy for policy in (OneShotPolicy(), ThoroughPolicy(), CoderPolicy())
}
"""The offline models of ``models.yml`` by name."""


def get_policy(name: str) -> BaselinePolicy:
    """The policy of an offline model.

    Raises:
        KeyError: For an unknown name (the message lists the known ones).
    """
    try:
        return POLICIES[name]
    except KeyError:
        raise KeyError(f"no baseline policy is named {name!r}; known: {sorted(POLICIES)}") from None


def policy_model(policy: BaselinePolicy) -> FunctionModel:
    """A pydantic-ai model that runs ``policy`` (tool calls and the structured final answer)."""

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        outputs = {tool.name for tool in info.output_tools}
        seen = observations_of(messages, ignore=outputs)
        step = policy.decide(question_of(messages), seen, ToolSurface.of(info))
        call_id = f"call_{len(seen) + 1}"
        if isinstance(step, Call):
            return ModelResponse(parts=[ToolCallPart(step.tool, step.args, tool_call_id=call_id)])
        if not info.output_tools:  # pragma: no cover - the runner always sets the output type
            raise RuntimeError("the agent has no output tool for the final answer")
        return ModelResponse(
            parts=[
                ToolCallPart(
                    info.output_tools[0].name, step.model_dump(mode="json"), tool_call_id=call_id
                )
            ]
        )

    return FunctionModel(respond, model_name=policy.name)
