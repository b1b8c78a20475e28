"""Deterministic answer checks: tools, value, citation, behaviour and grounded ids.

Each check passes (True), fails (False) or does not apply (None), always with a reason. Definitions
and their limits are in ``docs/metrics.md``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from datagouv_eval_pipeline.base.text import fold_fast
from datagouv_eval_pipeline.core.metrics.catalog import CatalogLookup, ObjectKind
from datagouv_eval_pipeline.core.metrics.places import DEPARTEMENTS
from datagouv_eval_pipeline.core.metrics.statements import Entity, find_statement
from datagouv_eval_pipeline.core.semantic import (
    ActionInstance,
    CallCategory,
    UrlAliases,
    detect_error,
)
from datagouv_eval_pipeline.core.tasks import (
    ExpectedBehaviour,
    ExpectedSource,
    ExpectedValue,
    Reference,
    SourceType,
    TaskSpec,
)
from datagouv_eval_pipeline.core.traces import ToolCall, Trace

CHECK_NAMES: tuple[str, ...] = ("tools", "value", "citation", "behaviour", "grounded_ids")


@dataclass(frozen=True, slots=True)
class CheckResult:
    """Outcome of one answer check.

    Attributes:
        passed: True or False, or None when the check does not apply.
        reason: Why it passed, failed or does not apply.
        details: JSON-serialisable evidence (what was expected, what was found).
    """

    passed: bool | None
    reason: str
    details: Mapping[str, Any] = field(default_factory=dict)


# --- tools -------------------------------------------------------------------------------------

#: The ways of reaching the catalog, and the call categories that belong to each.
FAMILY_OF_CATEGORY: dict[CallCategory, str] = {
    CallCategory.MCP_TOOL: "mcp",
    CallCategory.DATAGOUV_CLI: "cli",
    CallCategory.DATAGOUV_API_HTTP: "api",
    CallCategory.PYTHON_CLIENT: "api",
}
#: Families each capability grants (``datagouv-cli`` runs inside ``code``, which grants ``api``).
FAMILIES_OF_CAPABILITY: dict[str, frozenset[str]] = {
    "mcp": frozenset({"mcp"}),
    "code": frozenset({"api"}),
    "datagouv-cli": frozenset({"cli"}),
}
#: The CLI only fetches one object by id: it cannot search, profile, read metrics or dataservices.
CLI_ACTIONS: frozenset[str] = frozenset(
    {"get.dataset.info", "get.dataset.resources", "get.resource.info", "get.data"}
)


def _family_can(family: str, action: str, mcp_actions: Collection[str] | None) -> bool:
    if family == "cli":
        return action in CLI_ACTIONS
    if family == "mcp":
        return mcp_actions is None or action in mcp_actions
    return True


def tools_check(
    task: TaskSpec,
    trace: Trace,
    instances: Sequence[ActionInstance],
    mcp_actions: Collection[str] | None = None,
) -> CheckResult:
    """Check that every required action the trace's tools could perform was performed with them.

    The families available to the trace are those its capabilities grant (``mcp`` → MCP tools,
    ``code`` → the HTTP API or Python client, ``datagouv-cli`` → the CLI) plus any family its calls
    actually used. For each distinct action name required by the minimal tier, the expected
    families are the available ones able to perform it: the CLI cannot search, profile, read
    metrics or reach dataservices, and the MCP server only performs ``mcp_actions`` (the actions
    its version has tools for; None = all). The check passes when every action with at least one
    expected family has a non-errored instance whose call category belongs to one of them.
    """
    required = sorted({action.name for action in task.chain("minimal").required_actions})
    if not required:
        return CheckResult(None, "the minimal tier requires no actions")
    capabilities = sorted({cap.strip().lower().replace("_", "-") for cap in trace.capabilities})
    available: set[str] = set()
    for capability in capabilities:
        available |= FAMILIES_OF_CAPABILITY.get(capability, frozenset())
    performed: dict[str, set[str]] = {}
    for instance in instances:
        family = FAMILY_OF_CATEGORY.get(instance.category)
        if family is None:
            continue
        available.add(family)
        if not instance.errored:
            families = performed.get(instance.action)
            if families is None:
                performed[instance.action] = {family}
            else:
                families.add(family)
    expected = {
        name: sorted(family for family in available if _family_can(family, name, mcp_actions))
        for name in required
    }
    unreachable = [name for name, families in expected.items() if not families]
    reachable = {name: families for name, families in expected.items() if families}
    details: dict[str, Any] = {
        "capabilities": capabilities,
        "available_families": sorted(available),
        "expected": reachable,
        "performed": {name: sorted(families) for name, families in sorted(performed.items())},
        "unreachable": unreachable,
    }
    if not reachable:
        return CheckResult(
            None,
            f"no tool family available to the trace (capabilities {capabilities}) can perform "
            "the required actions",
            details,
        )
    missing = [
        name
        for name, families in reachable.items()
        if not performed.get(name, set()) & set(families)
    ]
    details["missing"] = missing
    if missing:
        return CheckResult(False, f"required actions not performed: {', '.join(missing)}", details)
    return CheckResult(True, "every reachable required action was performed", details)


# --- value -------------------------------------------------------------------------------------


_YEAR_IN = re.compile(r"(?<!\d)(?:19|20)\d\d(?!\d)")


def value_entities(expected: ExpectedValue) -> tuple[Entity, ...]:
    """What an expected value must be stated about (see :func:`find_statement`).

    ``expected.about`` when the spec gives it; otherwise derived: the years in the value's name
    and its recompute filter values (``datasets_before_2012_06_28``, ``Période = 2026-04``), the
    département of an exact filter on a département column (``dep_code = 32`` → Gers or 32) and
    the commune of an exact filter on a commune-name column (``new_name = Auch``). A filter on a
    commune *code* names no place by itself: such a spec gives ``about``.
    """
    if expected.about is not None:
        return tuple(Entity("about", tuple(names)) for names in expected.about)
    years = set(_YEAR_IN.findall(expected.name))
    places: list[Entity] = []
    for row_filter in expected.recompute.filters if expected.recompute else []:
        value = str(row_filter.value).strip()
        years.update(_YEAR_IN.findall(value))
        if row_filter.operator != "exact" or not value:
            continue
        column = fold_fast(row_filter.column)
        code = value.zfill(2).upper() if value.isdigit() else value.upper()
        if "dep" in column and code in DEPARTEMENTS:
            places.append(Entity("place", (DEPARTEMENTS[code], value)))
        elif ("commune" in column or column.endswith("name")) and not value.isdigit():
            places.append(Entity("place", (value,)))
    if years:
        places.append(Entity("year", tuple(sorted(years))))
    return tuple(places)


def value_check(
    task: TaskSpec, trace: Trace, references: Mapping[str, Reference] | None = None
) -> CheckResult:
    """Check that each expected value is stated in the answer, about what the question asks.

    An expected value with a reference (recomputed from the catalog the run used, see
    :mod:`datagouv_eval_pipeline.core.tasks.references`) is compared with the reference, not with
    the
    spec's literal. Numbers are read with :mod:`datagouv_eval_pipeline.core.metrics.numbers` (French
    and English formats); a number counts when :func:`find_statement` says it is stated about
    the value's entities (:func:`value_entities`), not negated nor retracted, and not drowned
    among many figures of the same kind. Does not apply when the task states no value or
    expects a decline.
    """
    if task.expected_behaviour == ExpectedBehaviour.DECLINE:
        return CheckResult(None, "the task expects a decline")
    if not task.expected_values:
        return CheckResult(None, "the task states no expected value")
    values: dict[str, float] = {}
    for expected in task.expected_values:
        ref = (references or {}).get(expected.name)
        values[expected.name] = ref.effective if ref is not None else expected.value
    found: dict[str, str | None] = {}
    why: dict[str, str] = {}
    expected_json: dict[str, dict[str, Any]] = {}
    for expected in task.expected_values:
        ref = (references or {}).get(expected.name)
        value = values[expected.name]
        entities = value_entities(expected)
        others = [other for name, other in values.items() if name != expected.name]
        statement = find_statement(
            trace.answer, value, expected.tolerance, entities=entities, others=others
        )
        found[expected.name] = statement.stated.text if statement.stated else None
        why[expected.name] = statement.reason
        entry: dict[str, Any] = {
            "value": value,
            "tolerance": expected.tolerance,
            "about": [list(entity.names) for entity in entities],
            "outcome": statement.outcome.value,
            "reason": statement.reason,
        }
        if statement.candidates:
            entry["candidates"] = list(statement.candidates)
        if ref is not None:
            entry.update(
                spec_value=ref.spec_value,
                source=ref.source if ref.value is not None else "task spec",
                reference_error=ref.error,
            )
        expected_json[expected.name] = entry
    missing = [name for name, text in found.items() if text is None]
    details = {"expected": expected_json, "found": found}
    if missing:
        listed = "; ".join(f"{name} ({why[name]})" for name in missing)
        return CheckResult(False, f"not stated as asked: {listed}", details)
    return CheckResult(True, "every expected value is stated about what the task asks", details)


# --- citation ----------------------------------------------------------------------------------

# A URL: ``(?:https?://|www\.)[^\s<>()\[\]{}"'`«»]+`` under IGNORECASE, spelt out (IGNORECASE
# also lets "s" match U+017F). It is only tried where a URL can start (see extract_urls).
_URL = re.compile(r"(?:[hH][tT][tT][pP][sS\u017f]?://|[wW][wW][wW]\.)[^\s<>()\[\]{}\"'`«»]+")
_CATALOG_URL = re.compile(
    r"^(?:https?://)?(?:www\.)?data\.gouv\.fr/(?:(?:fr|en|es)/)?(datasets|dataservices)/([^/?#\s]+)",
    re.IGNORECASE,
)


def extract_urls(text: str) -> list[str]:
    """Return the URLs in a text, without trailing punctuation."""
    # Same matches as _URL.finditer(text), ~3x cheaper: a URL starts 4 or 5 characters before a
    # "://" or 2 before a "w." / "W." (www.), and str.find reaches those in C where the regex
    # engine would test every character; the pattern is then only tried there, left to right,
    # skipping starts inside the previous URL.
    starts: list[int] = []
    for needle, offsets in (("://", (5, 4)), ("w.", (2,)), ("W.", (2,))):
        found = text.find(needle)
        while found >= 0:
            starts.extend(found - offset for offset in offsets)
            found = text.find(needle, found + 1)
    urls: list[str] = []
    end = 0
    for start in sorted(starts):
        if start < end:  # also skips negative starts
            continue
        match = _URL.match(text, start)
        if match is not None:
            urls.append(match.group(0).rstrip(".,;:!?"))
            end = match.end()
    return urls


# A Markdown inline link ``[text](target "title")``, a reference link ``[text][label]`` with its
# definition ``[label]: target``, and an HTML anchor ``<a href="target">text</a>``.
_MD_LINK = re.compile(
    r"\[([^\]\n]*)\]\(\s*<?([^()\s<>]+(?:\([^()\s]*\)[^()\s<>]*)*)>?"
    r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)"
)
_MD_REF_LINK = re.compile(r"\[([^\]\n]*)\]\[([^\]\n]*)\]")
_MD_REF_DEF = re.compile(r"^[ \t]{0,3}\[([^\]\n]+)\]:[ \t]*<?([^\s>]+)>?[^\n]*$", re.MULTILINE)
_HTML_LINK = re.compile(
    r"<a\b[^>]*?\bhref\s*=\s*(?:\"([^\"]*)\"|'([^']*)'|([^\s>]+))[^>]*>.*?</a\s*>",
    re.IGNORECASE | re.DOTALL,
)


def _link_targets(text: str) -> str:
    """``text`` with every Markdown or HTML link replaced by its target.

    A link's text is what the reader sees, its target where the click goes: only the target is
    cited (``[https://www.data.gouv.fr/datasets/x](https://example.org)`` cites example.org).
    """
    if "](" not in text and "][" not in text and "]:" not in text and "href" not in text.lower():
        return text
    labels = {
        match.group(1).strip().casefold(): match.group(2) for match in _MD_REF_DEF.finditer(text)
    }
    text = _HTML_LINK.sub(
        lambda match: f" {match.group(1) or match.group(2) or match.group(3) or ''} ", text
    )
    text = _MD_LINK.sub(lambda match: f" {match.group(2)} ", text)

    def _reference(match: re.Match[str]) -> str:
        label = (match.group(2) or match.group(1)).strip().casefold()
        return f" {labels.get(label, '')} "

    # A definition line is not shown: its target is cited where a link uses it.
    return _MD_REF_LINK.sub(_reference, _MD_REF_DEF.sub(" ", text))


def answer_urls(text: str) -> list[str]:
    """The URLs an answer text cites: link targets (never link texts) and bare URLs."""
    return extract_urls(_link_targets(text))


def _kind(source: ExpectedSource) -> str:
    return "datasets" if source.type == SourceType.DATASET else "dataservices"


def _source_names(
    source: ExpectedSource,
    catalog: CatalogLookup | None,
    aliases: Mapping[str, Iterable[str]] | None,
) -> set[str]:
    """The names an expected source may be cited by: its id, and its slug from the catalog."""
    names = {source.id.casefold()}
    if source.slug:
        names.add(source.slug.casefold())
    if catalog is not None:
        kind: ObjectKind = "dataset" if source.type == SourceType.DATASET else "dataservice"
        found = catalog.resolve(kind, source.id)
        if found is not None:
            names.add(found.id.casefold())
            if found.slug:
                names.add(found.slug.casefold())
    names |= {alias.casefold() for alias in (aliases or {}).get(source.id, ())}
    return names


def citation_check(
    task: TaskSpec,
    trace: Trace,
    aliases: Mapping[str, Iterable[str]] | None = None,
    *,
    catalog: CatalogLookup | None = None,
) -> CheckResult:
    """Check that the answer cites a URL and, when the task names sources, one of them.

    URLs come from ``trace.cited_urls`` when the agent gave structured citations, else from the
    answer text (:func:`answer_urls`: a Markdown or HTML link cites its target, not its text).
    An expected source is cited by ``https://www.data.gouv.fr/datasets/{id or slug}``
    (``/dataservices/{id}`` for a dataservice), with or without ``www.`` and a ``/fr/`` prefix;
    the twin's page URLs count as the data.gouv.fr pages they stand for.

    The slug of a source comes from the catalog record itself: ``source.slug`` (filled from the
    catalog by the scoring stage), ``catalog`` (a cited slug is resolved to its id) and
    ``aliases`` (id → slugs given by the caller). It is never learnt from the trace: a slug
    printed next to the expected id in a tool result may be another dataset's. Does not apply
    when the task expects a decline.
    """
    if task.expected_behaviour == ExpectedBehaviour.DECLINE:
        return CheckResult(None, "the task expects a decline")
    structured = trace.cited_urls is not None
    urls = list(trace.cited_urls or []) if structured else answer_urls(trace.answer)
    origin = "structured cited_urls" if structured else "the answer text"
    details: dict[str, Any] = {"urls": urls, "origin": origin}
    if not urls:
        return CheckResult(False, f"no URL in {origin}", details)
    if not task.expected_sources:
        return CheckResult(True, "a URL is cited and the task names no expected source", details)
    cited_paths: set[tuple[str, str]] = set()
    # A run against the twin cites the twin's page URLs: read them as the data.gouv.fr pages they
    # stand for (the base URLs the run was given are in its provenance).
    resolve = UrlAliases.for_trace(trace.provenance.base_urls).resolve
    for url in urls:
        match = _CATALOG_URL.match(resolve(url.strip()))
        if match:
            cited_paths.add((match.group(1).lower(), match.group(2).casefold()))
    cited: list[str] = []
    names_of: dict[str, list[str]] = {}
    for source in task.expected_sources:
        names = _source_names(source, catalog, aliases)
        names_of[source.id] = sorted(names)
        kind = _kind(source)
        if any((kind, name) in cited_paths for name in names):
            cited.append(source.id)
    details["expected"] = [source.id for source in task.expected_sources]
    details["accepted_names"] = names_of
    details["cited"] = cited
    if not cited:
        return CheckResult(
            False, "no expected source's data.gouv.fr URL (by id or slug) is cited", details
        )
    return CheckResult(True, f"cites {len(cited)} of {len(task.expected_sources)} sources", details)


# --- behaviour ---------------------------------------------------------------------------------

#: Phrases (accents removed, lower case, straight apostrophes) that say the agent declines or found
#: nothing suitable. Only used when the trace has no structured ``declined`` flag.
DECLINE_PHRASES: tuple[str, ...] = (
    "je n'ai pas trouve",
    "je n'ai trouve aucun",
    "je n'ai trouve aucune",
    "je ne trouve pas",
    "je ne peux pas repondre",
    "je ne suis pas en mesure",
    "impossible de repondre",
    "impossible de trouver",
    "aucun jeu de donnees ne",
    "aucune donnee ne",
    "il n'existe pas de jeu de donnees",
    "il n'y a pas de jeu de donnees",
    "n'est pas disponible sur data.gouv.fr",
    "ne sont pas disponibles sur data.gouv.fr",
    "i could not find",
    "i couldn't find",
    "i did not find",
    "i didn't find",
    "i cannot answer",
    "i can't answer",
    "i am unable to",
    "i'm unable to",
    "there is no dataset",
    "no dataset on data.gouv.fr",
    "is not available on data.gouv.fr",
)


# Space-free pieces of the phrases ("gates"). Collapsing whitespace neither creates nor breaks a
# space-free substring, so a phrase whose gate is absent before the collapse cannot occur after
# it: most answers need 13 short scans instead of 25, and no split/join.
_DECLINE_GATES: tuple[str, ...] = (
    "n'ai",
    "trouve",
    "repondre",
    "mesure",
    "aucun",
    "n'existe",
    "n'y",
    "disponible",
    "find",
    "answer",
    "unable",
    "dataset",
    "available",
)


def _gate_phrases(gates: tuple[str, ...], phrases: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """Each gate with the phrases it stands for, in ``phrases`` order; {} if some phrase has none.

    Computed at import from DECLINE_PHRASES, so that editing the phrases cannot make gating wrong
    (an uncovered phrase turns gating off).
    """
    covered: dict[str, list[str]] = {gate: [] for gate in gates}
    for phrase in phrases:
        gate = next((gate for gate in gates if gate in phrase), None)
        if gate is None or any(char.isspace() for char in gate):
            return {}
        covered[gate].append(phrase)
    return {gate: tuple(found) for gate, found in covered.items() if found}


_DECLINE_GATE_PHRASES = _gate_phrases(_DECLINE_GATES, DECLINE_PHRASES)


def detect_decline(answer: str) -> str | None:
    """Return the decline phrase found in an answer, or None (a heuristic; see DECLINE_PHRASES)."""
    lowered = fold_fast(answer)
    if _DECLINE_GATE_PHRASES:
        candidates = {
            phrase
            for gate, phrases in _DECLINE_GATE_PHRASES.items()
            if gate in lowered
            for phrase in phrases
        }
        if not candidates:
            return None
    else:
        candidates = set(DECLINE_PHRASES)
    folded = " ".join(lowered.split())  # = fold_spaced(answer)
    for phrase in DECLINE_PHRASES:
        if phrase in candidates and phrase in folded:
            return phrase
    return None


def behaviour_check(task: TaskSpec, trace: Trace) -> CheckResult:
    """Check that the agent declined when it should and answered when it should.

    Uses ``trace.declined`` when set; otherwise the answer is searched for a decline phrase. An
    empty answer is neither an answer nor an explained decline, so it fails.
    """
    expected = task.expected_behaviour
    details: dict[str, Any] = {"expected": expected.value}
    if trace.declined is not None:
        declined = trace.declined
        details["source"] = "structured declined flag"
    elif not trace.answer.strip():
        details["source"] = "empty answer"
        return CheckResult(False, "the answer is empty: neither an answer nor a decline", details)
    else:
        phrase = detect_decline(trace.answer)
        declined = phrase is not None
        details["source"] = "decline-phrase heuristic"
        details["phrase"] = phrase
    details["declined"] = declined
    should_decline = expected == ExpectedBehaviour.DECLINE
    if declined == should_decline:
        return CheckResult(True, "declined as expected" if declined else "answered", details)
    if declined:
        return CheckResult(False, "declined a question it should have answered", details)
    return CheckResult(False, "answered a question it should have declined", details)


# --- grounded ids ------------------------------------------------------------------------------

# A 24-hex object id or a UUID, not glued to a letter or digit:
# ``(?<![0-9a-z])(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{24})
# (?![0-9a-z])`` under IGNORECASE, spelt out: IGNORECASE makes [0-9a-z] also match U+0130, U+0131,
# U+017F and U+212A, and [0-9a-f] match exactly [0-9a-fA-F].
_HEX = "[0-9a-fA-F]"
_SPECIAL_ALNUM = ("\u0130", "\u0131", "\u017f", "\u212a")
_ALNUM = "[0-9a-zA-Z" + "".join(_SPECIAL_ALNUM) + "]"
_CATALOG_ID = re.compile(
    rf"(?<!{_ALNUM})(?:{_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}|{_HEX}{{24}})"
    rf"(?!{_ALNUM})"
)
# Character classes for the fast scan in catalog_ids: hex digit -> h, other ASCII letter or
# digit -> a, "-" stays, anything else (non-ASCII included, once encoded as "?") -> space.
_ID_CLASSES = bytes(
    ord("h")
    if chr(code) in "0123456789abcdefABCDEF"
    else ord("a")
    if chr(code).isascii() and chr(code).isalnum()
    else code
    if chr(code) == "-"
    else ord(" ")
    for code in range(256)
)
_HEX_CLASS_RUN = re.compile(rb"h*")


def catalog_ids(text: str) -> set[str]:
    """Return the catalog ids (24-hex object ids and UUIDs) in a text, lower-cased."""
    if not text.isascii() and any(char in text for char in _SPECIAL_ALNUM):
        return {match.group(0).lower() for match in _CATALOG_ID.finditer(text)}
    # Same result as _CATALOG_ID.finditer, ~10x cheaper: a match starts a run of 8+ hex digits
    # (inside a run, the previous character is alphanumeric). Each character becomes one byte of
    # its class, bytes.find locates those runs in C, and the pattern is tried at their starts
    # only; the regex engine would test every character.
    classes = text.encode("ascii", "replace").translate(_ID_CLASSES)
    found: set[str] = set()
    position = 0
    while (start := classes.find(b"hhhhhhhh", position)) >= 0:
        match = _CATALOG_ID.match(text, start)
        if match is not None:
            found.add(match.group(0).lower())
            position = match.end()
        else:
            run = _HEX_CLASS_RUN.match(classes, start)
            position = run.end() if run is not None else start + 8
    return found


def call_evidence(call: ToolCall) -> str:
    """What a call's result shows, echoes left out ("" for a failed call).

    A failed call (:func:`~datagouv_eval_pipeline.core.semantic.detect_error`) shows nothing: its
    message echoes what it was asked (``Error: Dataset with ID '…' not found``); except a
    Python traceback after recorded requests that all succeeded (the agent's parsing raised
    after printing what they answered). In a successful
    call's result, the catalog ids of the call's own arguments (its code included) are echoes
    and are blanked, unless the call looked them up: a recorded HTTP request that succeeded
    (status below 400) has the id in its URL, or, when no request was recorded, the result
    holds other catalog ids besides them (a lookup answers with the object's resources or
    organization; ``print('<id>')`` or ``No datasets found for query: '<id>'`` does not).
    """
    result = call.result
    requests = [r for r in call.http_requests or [] if r.method != "CONNECT"]
    if detect_error(call)[0] and not (
        # The agent's own code raised after every request it sent succeeded: what it printed
        # before the traceback came from those answers.
        requests and all(0 < r.status < 400 for r in requests) and _TRACEBACK in result
    ):
        return ""
    own = catalog_ids(json.dumps(call.arguments, ensure_ascii=False, default=str))
    if not own:
        return result
    lowered = result.lower()
    echoed = {identifier for identifier in own if identifier in lowered}
    if not echoed:
        return result
    if requests:
        looked_up = " ".join(r.url.lower() for r in requests if 0 < r.status < 400)
        echoed = {identifier for identifier in echoed if identifier not in looked_up}
    else:
        blanked = _blank(result, echoed)
        if catalog_ids(blanked) - own:
            return result
        return blanked
    return _blank(result, echoed) if echoed else result


_TRACEBACK = "Traceback (most recent call last)"


def _blank(text: str, identifiers: Iterable[str]) -> str:
    for identifier in identifiers:
        text = re.sub(re.escape(identifier), " ", text, flags=re.IGNORECASE)
    return text


def grounding_texts(task: TaskSpec, trace: Trace) -> Iterator[str]:
    """The texts an answer may take facts from: the prompt and what every tool call showed.

    Tool *arguments* are not evidence: they are what the agent wrote (its own code included), so
    an id it invented and merely tried in a call would otherwise count as seen; nor are their
    echoes in results (see :func:`call_evidence`).
    """
    yield task.prompt
    for call in trace.tool_calls:
        yield call_evidence(call)


def grounded_ids_check(task: TaskSpec, trace: Trace) -> CheckResult:
    """Check that every catalog id in the answer was seen in the prompt or a tool result.

    An id is grounded when it occurs (case-insensitively) in a tool result or the prompt (see
    :func:`grounding_texts`); an id found only in the agent's own tool arguments, or in a failed
    call's message, or echoed by the call it was given to, is not. Ids in
    the structured ``cited_urls`` count as part of the answer. Does not apply to an answer
    without ids.
    """
    answer_text = trace.answer + "\n" + "\n".join(trace.cited_urls or [])
    stated = catalog_ids(answer_text)
    if not stated:
        return CheckResult(None, "the answer states no catalog id")
    # Substring search, not a regex scan of every result: ids are long and distinctive, and this
    # keeps the check cheap on traces with large tool results.
    remaining = set(stated)
    for text in grounding_texts(task, trace):
        if not remaining:
            break
        found = {identifier for identifier in remaining if identifier in text}
        if len(found) < len(remaining):
            lowered = text.lower()
            found |= {identifier for identifier in remaining if identifier in lowered}
        remaining -= found
    ungrounded = sorted(remaining)
    details = {"stated": sorted(stated), "ungrounded": ungrounded}
    if ungrounded:
        return CheckResult(
            False,
            f"ids in no tool result nor the prompt: {', '.join(ungrounded)}",
            details,
        )
    return CheckResult(
        True, f"all {len(stated)} ids were seen in tool results or the prompt", details
    )


def answer_checks(
    task: TaskSpec,
    trace: Trace,
    instances: Sequence[ActionInstance] | None,
    aliases: Mapping[str, Iterable[str]] | None = None,
    instances_reason: str | None = None,
    mcp_actions: Collection[str] | None = None,
    catalog: CatalogLookup | None = None,
    references: Mapping[str, Reference] | None = None,
) -> dict[str, CheckResult]:
    """Run every answer check.

    Args:
        task: The task.
        trace: The run.
        instances: The mapped action instances, or None when mapping failed (``tools`` is then
            None with ``instances_reason``).
        aliases: Known slugs per expected source id, for the citation check.
        instances_reason: Why there are no instances.
        mcp_actions: Actions the trace's MCP server version can perform (None = all).
        catalog: Resolves slugs to ids for the citation check (None: ids and ``source.slug``).
        references: Recomputed expected values by name, for the value check.

    Returns:
        One result per name in :data:`CHECK_NAMES`.
    """
    if instances is None:
        tools = CheckResult(None, f"no action mapping: {instances_reason or 'unknown reason'}")
    else:
        tools = tools_check(task, trace, instances, mcp_actions)
    return {
        "tools": tools,
        "value": value_check(task, trace, references),
        "citation": citation_check(task, trace, aliases, catalog=catalog),
        "behaviour": behaviour_check(task, trace),
        "grounded_ids": grounded_ids_check(task, trace),
    }
