"""The deterministic action mapper: literal tool calls → semantic action instances.

``map_trace`` reads every call of a trace once, in order, and decides its category, its error
flag and the action instances it performed, using only the registry and static analysis (no LLM).
Calls it cannot decide are listed in :attr:`TraceMapping.unmapped_call_ids` for a later
classifier; calls that deliberately perform no action (a web search, local analysis, a write
command) are *decided*, not unmapped.

Rules, by tool kind:

* **MCP tools** (a name the registry knows, or one of ``mcp_tool_names``): the registry resolves
  the tool at the trace's ``mcp_version``; arguments are renamed to semantic names. Confidence 1.0.
  A trace without ``mcp_version`` is matched across all versions (confidence 0.9, with a warning).
  A version label that is not PEP 440 raises :class:`UnknownVersionError`.
* **Shell tools**: ``datagouv`` CLI commands (confidence 0.9), ``curl``/``wget``/httpie URLs and
  ``python -c``/heredoc code, see :mod:`code_calls`. A CLI invocation the result shows failing
  with a usage error (missing or extra argument, unknown option or command) ran nothing: it
  yields no instance (see :func:`usage_errors`; an error is attributed to the invocation of
  that command whose arguments do not fit it, else to the first one still unattributed).
  When the call records the HTTP requests it sent (the sandbox's proxy sees the CLI's library
  too), each invocation is given the requests it sent (:meth:`_TraceMapper.attribute_wire`):
  the command still decides its actions (``display`` shows no resource list), each action takes
  its arguments from the request that performed it and is errored on that request's status
  alone (an action no request performed is errored when an earlier request or the command
  failed), an invocation that sent nothing ran nothing, and the other requests (curl, wget,
  embedded Python) are mapped as Python ones are, below.
* **URLs are production URLs** (offline the twin answers for them behind the hostname front);
  traces recorded before that are read through their ``provenance.base_urls`` (:mod:`aliases`).
* **Python tools**: when the call records the HTTP requests its program sent
  (``ToolCall.http_requests``, seen by the sandbox's proxy), those are mapped with their exact
  arguments, each errored on its own status (>= 400, or no answer), and the code is not read
  for requests (``if False: requests.get(…)`` never ran; a local exception after a successful
  request errors nothing; the same request repeated right after it failed is a retry, one
  attempt with its last status). Otherwise, statically: URLs requested through
  ``requests``/``httpx``/``urllib``/``pandas.read_*`` and ``datagouv`` client calls, in source
  order (0.9; 0.8 when part of a URL was unresolved).
* **Web search tools**: category ``web_search``, no action.
* **Web fetch tools**: a data.gouv.fr API URL *is* a REST call (category ``datagouv_api_http``,
  0.9); a catalog web page (dataset/dataservice page, search page) is credited with 0.7 and stays
  ``web_page_fetch``; other pages perform no action.
* A URL outside the catalog that an earlier result listed as a resource's file (``URL:`` after
  ``Resource ID:``, or ``{"id", "url", "format"}`` JSON) is ``get.data`` on that resource (0.85);
  one listed as a dataservice's OpenAPI spec is ``get.dataservice.openapi_spec`` (0.85).

Error detection (:func:`detect_error`), first rule that fires:

1. ``ToolCall.error`` is true.
2. The result, after leading whitespace, starts with ``Error`` (any case; covers FastMCP's
   ``Error executing tool``), ``[error]`` (sandbox timeouts) or ``❌``.
3. It starts with ``[stderr]`` (no stdout) and mentions a failure: traceback, error, exception,
   not found, no such file, permission denied, fatal, failed, ``curl: (N)``. Plain stderr chatter
   (curl/wget progress meters) is not an error.
4. It contains a Python traceback header anywhere, or a line starting with ``SyntaxError:`` /
   ``IndentationError:`` (``python -c`` prints those without a traceback header).
5. It contains a Tabular API failure notice of the MCP server (resource not found in the Tabular
   API, temporarily unavailable, returned HTTP, rejected the request, ``Error querying resource``)
   or a line starting with ``Error fetching`` (per-section metrics/spec failures).
6. It shows a command-line usage error as click and Typer print it (a ``Usage:`` line, then
   ``Try '<command> --help' for help.``, then an ``Error: …`` line or an ``Error`` panel), e.g.
   ``datagouv dataset get`` without its id (exit code 2).
7. Its first or last 2 000 characters show an HTTP error status line (``404 Not Found``,
   ``500 Internal Server Error``, ...) or ``command not found``.
8. Common phrasings and the twin's own texts at every MCP release: the first line opens (after
   symbols such as ``⛔`` or ``**``) with a failure phrase (``Service unavailable (503)``,
   ``Request failed``, ``HTTP 502``, ``Erreur``, ``Connection refused``, ``Timeout``…) or shows
   a 4xx/5xx code with an error phrase; a one-line result (300 characters at most) says the
   object does not exist (``Dataset 'x' not found``, ``introuvable``, ``n'existe pas``); the
   result is a JSON error body (an ``error``/``errors``
   key without ``data``, or a 4xx/5xx ``status``/``code``); a line starts with ``❌`` (the
   releases' failed-read marker, after the tool's header lines); or a line reads
   ``⚠️ Resource … not available via Tabular API`` (a Tabular 404 before v0.2.24). Indented
   lines are one resource of a multi-resource exploration and do not count.

Empty results are not errors. Not flagged on purpose: ``⚠️ Large dataset``, ``⚠️ No rows
available`` and ``⚠️ Not available via Tabular API`` (informational MCP notices).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from datagouv_eval_pipeline.core.semantic.aliases import UrlAliases, sandbox_environ
from datagouv_eval_pipeline.core.semantic.code_calls import (
    SENTINEL,
    ClientEvent,
    CliInvocation,
    CodeAnalysis,
    HttpRequest,
    SessionState,
    analyze_python,
    analyze_shell,
    urls_in_text,
)
from datagouv_eval_pipeline.core.semantic.instances import ActionInstance, CallCategory
from datagouv_eval_pipeline.core.semantic.registry import (
    ActionRegistry,
    UrlMatch,
    load_registry,
    parse_version,
)
from datagouv_eval_pipeline.core.traces import ToolCall, Trace

CONFIDENCE_MCP = 1.0
CONFIDENCE_MCP_UNVERSIONED = 0.9
CONFIDENCE_PARSED = 0.9
CONFIDENCE_LINKED_URL = 0.85
CONFIDENCE_UNPARSED_CODE = 0.6


_CATEGORIES = tuple(CallCategory)  # iterating the enum class itself is slow


class MappingStatus(StrEnum):
    """Whether the deterministic mapper decided a call."""

    MAPPED = "mapped"
    """At least one action instance."""
    NO_ACTION = "no_action"
    """Decided: the call performs no semantic action (web search, local analysis, a write...)."""
    UNMAPPED = "unmapped"
    """Undecided: left for a classifier (unknown tool, unmatched catalog URL, dynamic URL...)."""


@dataclass(frozen=True)
class CallMapping:
    """How one literal call was mapped.

    Attributes:
        call_id: The tool call id.
        tool_name: The literal tool name.
        category: How the call reached the catalog (or did not).
        status: Mapped, deliberately no action, or left unmapped.
        instances: The action instances, in execution order.
        confidence: Highest instance confidence; 1.0 for a decided no-action call; 0.0 unmapped.
        errored: Whether the call failed (see :func:`detect_error`).
        error_reason: Which error rule fired (empty when not errored).
        reason: Why this mapping.
    """

    call_id: str
    tool_name: str
    category: CallCategory
    status: MappingStatus
    instances: tuple[ActionInstance, ...]
    confidence: float
    errored: bool
    error_reason: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "call_id": self.call_id,
            "tool_name": self.tool_name,
            "category": self.category.value,
            "status": self.status.value,
            "confidence": self.confidence,
            "errored": self.errored,
            "error_reason": self.error_reason,
            "reason": self.reason,
            "instances": [instance_to_dict(instance) for instance in self.instances],
        }


@dataclass(frozen=True)
class TraceMapping:
    """The mapping of a whole trace.

    Attributes:
        calls: One mapping per tool call, in trace order.
        registry_version: The registry's version label (provenance).
        mcp_version: The MCP version used for resolution (``None``: matched across versions).
        warnings: Notices about the mapping itself (missing version, tool not at this version...).
    """

    calls: tuple[CallMapping, ...]
    registry_version: str
    mcp_version: str | None
    warnings: tuple[str, ...] = ()
    _instances: tuple[ActionInstance, ...] = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        flat = tuple(instance for call in self.calls for instance in call.instances)
        object.__setattr__(self, "_instances", flat)

    @property
    def instances(self) -> list[ActionInstance]:
        """Every action instance, in call order then execution order (the source for metrics)."""
        return list(self._instances)

    @property
    def counts(self) -> dict[CallCategory, int]:
        """Literal calls per category (every category present, zeros included)."""
        result = dict.fromkeys(_CATEGORIES, 0)
        for call in self.calls:
            result[call.category] += 1
        return result

    @property
    def mapped_fraction(self) -> float | None:
        """Share of calls decided deterministically (mapped or no action); None without calls."""
        if not self.calls:
            return None
        decided = sum(1 for call in self.calls if call.status is not MappingStatus.UNMAPPED)
        return decided / len(self.calls)

    @property
    def mapped_fraction_reason(self) -> str:
        """Why :attr:`mapped_fraction` is ``None`` (empty when it is defined)."""
        return "" if self.calls else "the trace has no tool calls"

    @property
    def action_fraction(self) -> float | None:
        """Share of calls with at least one action instance; ``None`` without calls."""
        if not self.calls:
            return None
        return sum(1 for call in self.calls if call.instances) / len(self.calls)

    @property
    def unmapped_call_ids(self) -> list[str]:
        """Ids of the calls left for a classifier, in trace order."""
        return [call.call_id for call in self.calls if call.status is MappingStatus.UNMAPPED]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (what the ``action_mappings`` stage stores)."""
        return {
            "registry_version": self.registry_version,
            "mcp_version": self.mcp_version,
            "warnings": list(self.warnings),
            "mapped_fraction": self.mapped_fraction,
            "counts": {category.value: count for category, count in self.counts.items()},
            "calls": [call.to_dict() for call in self.calls],
        }


def instance_to_dict(instance: ActionInstance) -> dict[str, Any]:
    """A JSON-ready dict of one instance."""
    return {
        "action": instance.action,
        "args": dict(instance.args),
        "source_call_id": instance.source_call_id,
        "source_tool": instance.source_tool,
        "category": instance.category.value,
        "confidence": instance.confidence,
        "errored": instance.errored,
        "reason": instance.reason,
    }


# ---------------------------------------------------------------------------------------------
# Fast construction. A frozen dataclass's ``__init__`` sets each field through
# ``object.__setattr__``; filling ``__dict__`` directly builds the very same object about twice
# as fast, and a trace builds one ``CallMapping`` and about one ``ActionInstance`` per call.
# Used only while the classes stay plain (dict-backed, no ``__post_init__``, these fields).

_INSTANCE_FIELDS = (
    "action",
    "args",
    "source_call_id",
    "source_tool",
    "category",
    "confidence",
    "errored",
    "reason",
)
_CALL_MAPPING_FIELDS = (
    "call_id",
    "tool_name",
    "category",
    "status",
    "instances",
    "confidence",
    "errored",
    "error_reason",
    "reason",
)


def _dict_backed(cls: type, names: tuple[str, ...]) -> bool:
    return (
        tuple(f.name for f in fields(cls) if f.init) == names
        and len(fields(cls)) == len(names)
        and not hasattr(cls, "__post_init__")
        and "__slots__" not in cls.__dict__
    )


_new = object.__new__
_FAST_INSTANCE = _dict_backed(ActionInstance, _INSTANCE_FIELDS)
_FAST_CALL_MAPPING = _dict_backed(CallMapping, _CALL_MAPPING_FIELDS)


def _instance(
    action: str,
    args: dict[str, Any],
    source_call_id: str,
    source_tool: str,
    category: CallCategory,
    confidence: float,
    errored: bool,
    reason: str,
) -> ActionInstance:
    """``ActionInstance(...)`` with positional fields, built without running ``__init__``."""
    if not _FAST_INSTANCE:
        return ActionInstance(
            action, args, source_call_id, source_tool, category, confidence, errored, reason
        )
    instance: ActionInstance = _new(ActionInstance)
    instance.__dict__.update(
        action=action,
        args=args,
        source_call_id=source_call_id,
        source_tool=source_tool,
        category=category,
        confidence=confidence,
        errored=errored,
        reason=reason,
    )
    return instance


def _call_mapping(
    call_id: str,
    tool_name: str,
    category: CallCategory,
    status: MappingStatus,
    instances: tuple[ActionInstance, ...],
    confidence: float,
    errored: bool,
    error_reason: str,
    reason: str,
) -> CallMapping:
    """``CallMapping(...)``, built without running ``__init__`` (see above)."""
    if not _FAST_CALL_MAPPING:
        return CallMapping(
            call_id,
            tool_name,
            category,
            status,
            instances,
            confidence,
            errored,
            error_reason,
            reason,
        )
    mapping: CallMapping = _new(CallMapping)
    mapping.__dict__.update(
        call_id=call_id,
        tool_name=tool_name,
        category=category,
        status=status,
        instances=instances,
        confidence=confidence,
        errored=errored,
        error_reason=error_reason,
        reason=reason,
    )
    return mapping


# ---------------------------------------------------------------------------------------------
# Errors.

_STDERR_FAILURE = re.compile(
    r"traceback|error|exception|not found|no such file|permission denied|fatal|failed|"
    r"curl: \(\d+\)",
    re.IGNORECASE,
)
_TABULAR_FAILURES = (
    "This resource ID was not found in the Tabular API",
    "The Tabular API is temporarily unavailable",
    "The Tabular API returned HTTP",
    "The Tabular API rejected the request",
    "Error querying resource",
)
# Lower-case phrases; plain substring tests are several times faster than one regex here.
_HTTP_ERROR_PHRASES = (
    "400 bad request",
    "401 unauthorized",
    "403 forbidden",
    "404 not found",
    "410 gone",
    "429 too many requests",
    "500 internal server error",
    "502 bad gateway",
    "503 service unavailable",
    "504 gateway time",
    "command not found",
)
# Every phrase above contains one of these needles, so these scans rule them all out (most
# results). Each needle comes with a letter of it that is rare in prose: a one-character search
# (memchr) for it is ~10x cheaper than the scan it can skip.
_HTTP_ERROR_GATES: tuple[tuple[str, str], ...] = (
    ("f", " not found"),
    ("q", "request"),
    ("y", "gateway"),
    ("z", "unauthorized"),
    ("b", "forbidden"),
    ("g", "410 gone"),
    ("v", "internal server error"),
    ("v", "service unavailable"),
)
if not all(letter in needle for letter, needle in _HTTP_ERROR_GATES) or not all(
    any(needle in phrase for _, needle in _HTTP_ERROR_GATES) for phrase in _HTTP_ERROR_PHRASES
):
    raise RuntimeError("_HTTP_ERROR_GATES must cover every phrase of _HTTP_ERROR_PHRASES")
# Common phrasings of a failure opening a result, after any leading symbols (``⛔``, ``**``;
# not a quote or bracket, so a JSON key or a CSV header is not one): ``Service unavailable
# (503)``, ``Request failed: …``, ``HTTP 502``, ``Erreur : …``.
_FIRST_LINE_FAILURE = re.compile(
    r"[^\w\s\"'{}\[\]<>()]*\s*(?:errors?\b|erreurs?\b|exception\b|failed\b|failure\b|[eé]chec\b|fatal\b"
    r"|service (?:unavailable|indisponible)|internal server error|bad gateway"
    r"|gateway time-?out|too many requests|not found\b|forbidden\b|unauthori[sz]ed\b"
    r"|bad request\b|request failed|la requ[eê]te a [eé]chou[eé]|connection (?:refused|reset"
    r"|error|timed out|aborted)|timed out\b|time-?out\b|http (?:error|[45]\d\d)\b"
    r"|status(?: code)?\s*:?\s*[45]\d\d\b)",
    re.IGNORECASE,
)
# A one-line answer saying the object asked for does not exist: ``Dataset 'x' not found``.
_NOT_FOUND = re.compile(
    r"\bnot found\b|\bdoes not exist\b|\bintrouvable\b|\bn['’]existe pas\b|\bnon trouv[ée]",
    re.IGNORECASE,
)
_NOT_FOUND_MAX = 300
_STATUS_CODE = re.compile(r"(?<![\w.,])[45]\d\d(?![\w.,])")
_STATUS_PHRASE = re.compile(
    r"service unavailable|internal server error|bad gateway|gateway time-?out|too many requests"
    r"|not found|forbidden|unauthori[sz]ed|bad request|\bgone\b|\berror\b|\berreur\b",
    re.IGNORECASE,
)
# The MCP releases report a failed read with a line starting with ``❌`` after the tool's header
# lines (``❌ Tabular API error (HTTP 503: …)``, ``❌ Error querying resource``); ``⚠️`` lines
# are notices. Indented ones belong to one resource of a multi-resource exploration
# (``query_dataset_data``), whose other resources may have answered: not the call's failure.
_FAILURE_LINE = re.compile(r"^❌", re.MULTILINE)
# Before v0.2.24, ``query_resource_data`` reported a Tabular 404 as this (unindented) line.
_TABULAR_MISSING = re.compile(r"^⚠️?[ \t]*Resource \S+ not available via Tabular API", re.M)
_JSON_ERROR_MAX = 20_000


def _json_error(text: str) -> str:
    """The reason a result that is a JSON object is an error body ("" when it is not one)."""
    if len(text) > _JSON_ERROR_MAX:
        return ""
    try:
        body = json.loads(text)
    except ValueError:
        return ""
    if not isinstance(body, dict):
        return ""
    if ("error" in body or "errors" in body) and not body.get("data"):
        return "the result is a JSON error body"
    status = body.get("status", body.get("code"))
    if isinstance(status, int) and 400 <= status < 600:
        return f"the result is a JSON body with status {status}"
    return ""


_ERROR_FETCHING = re.compile(r"^\s*Error fetching", re.MULTILINE)
_SYNTAX_ERROR = re.compile(r"^\s*(?:SyntaxError|IndentationError): ", re.MULTILINE)
# A click/Typer usage error: the usage line, the ``Try '<command> --help'`` hint, then an
# ``Error: <message>`` line (click) or a boxed ``Error`` panel (Typer). Nothing ran.
_USAGE_ERROR = re.compile(
    r"^[ \t]*Usage: [^\n]*\n"
    r"[ \t]*Try '(?P<command>[^'\n]+?) (?:--help|-h)' for help\.[ \t]*\n"
    r"(?:[ \t]*\n)*"
    r"[ \t]*(?:Error: (?P<message>[^\n]*)"
    r"|╭─+ Error\b[^\n]*\n[ \t]*│[ \t]*(?P<panel>[^\n]*?)[ \t]*│)",
    re.MULTILINE,
)
_USAGE_HINT = "' for help."


@dataclass(frozen=True)
class UsageError:
    """A command-line usage error printed in a result (the command ran nothing).

    Attributes:
        command: The command words of the ``Try '… --help'`` hint, executable first
            (``("datagouv", "dataset", "get")``).
        message: The error message (``Missing argument 'ID'.``).
    """

    command: tuple[str, ...]
    message: str


def usage_errors(result: str) -> list[UsageError]:
    """The click/Typer usage errors printed in a tool result, in order."""
    if _USAGE_HINT not in result:
        return []
    return [
        UsageError(
            tuple(found.group("command").split()),
            (found.group("message") or found.group("panel") or "").strip(),
        )
        for found in _USAGE_ERROR.finditer(result)
    ]


_TRACEBACK = "Traceback (most recent call last)"


def detect_error(call: ToolCall) -> tuple[bool, str]:
    """Decide whether a call failed, and which rule says so (see the module docstring).

    Returns:
        ``(errored, reason)``; the reason is empty when not errored.
    """
    return _detect(call.error, call.result)


def _wire_requests(call: ToolCall) -> list[tuple[HttpRequest, int]] | None:
    """The call's recorded HTTP requests as events with their status; None to read the code.

    None when nothing was recorded, or when the proxy saw only TLS tunnels (a live run passes
    hosts through without looking inside): then static analysis is all there is.
    """
    recorded = call.http_requests
    if recorded is None:
        return None
    visible = [r for r in recorded if r.method != "CONNECT"]
    if recorded and not visible:
        return None
    events: list[tuple[HttpRequest, int]] = []
    previous: tuple[str, str] | None = None
    for request in visible:
        parts = urlsplit(request.url)
        url = urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
        params = tuple(parse_qsl(parts.query, keep_blank_values=True))
        sent = (HttpRequest(request.method, url, params, "wire"), request.status)
        key = (request.method, request.url)
        if events and previous == key and _failed(events[-1][1]):
            # The same request again right after it failed is a retry (datagouv-client retries
            # 5 times): one attempt, with the status it ended with.
            events[-1] = sent
        else:
            events.append(sent)
        previous = key
    return events


def _failed(status: int) -> bool:
    """Whether a request recorded on the wire failed (an error status, or no answer)."""
    return status == 0 or status >= 400


def _detect(error: bool, result: str) -> tuple[bool, str]:
    """:func:`detect_error` on a call's ``error`` flag and ``result`` text."""
    if error:
        return True, "the tool reported an error"
    text = result.lstrip()
    if not text:
        return False, ""
    head = text[:16].lower()
    if head.startswith("error"):
        return True, "result starts with 'Error'"
    if head.startswith("[error]"):
        return True, "result starts with '[error]'"
    if text.startswith("❌"):
        return True, "result starts with '❌'"
    if head.startswith("[stderr]") and _STDERR_FAILURE.search(text[:4000]):
        return True, "stderr-only output reporting a failure"
    first = text[: text.find("\n")] if "\n" in text[:400] else text[:400]
    if _FIRST_LINE_FAILURE.match(first):
        return True, "the first line reports a failure"
    if text[0] == "{" and (reason := _json_error(text)):
        return True, reason
    if len(text) <= _NOT_FOUND_MAX and "\n" not in text.rstrip() and _NOT_FOUND.search(text):
        return True, "a one-line result says the object does not exist"
    if "❌" in text and _FAILURE_LINE.search(text):
        return True, "a line starts with '❌'"
    if "via Tabular API" in text and _TABULAR_MISSING.search(text):
        return True, "Tabular API failure notice: 'Resource … not available via Tabular API'"
    # Rules 4 and 5 are case-sensitive and every marker holds "(" (the traceback header), "Error"
    # or "Tabular API": a one-character search (memchr) rules most results out before any scan.
    if "(" in text and _TRACEBACK in text:
        return True, "Python traceback in result"
    has_error = "E" in text and "Error" in text
    if (
        has_error
        and ("SyntaxError" in text or "IndentationError" in text)
        and _SYNTAX_ERROR.search(text)
    ):
        return True, "Python syntax error in result"
    if has_error or ("P" in text and "Tabular API" in text):
        for notice in _TABULAR_FAILURES:
            if notice in text:
                return True, f"Tabular API failure notice: {notice!r}"
    if has_error and "Error fetching" in text and _ERROR_FETCHING.search(text):
        return True, "a section failed ('Error fetching ...')"
    if has_error and _USAGE_HINT in text and _USAGE_ERROR.search(text):
        return True, "command-line usage error ('Usage: ...' then an error)"
    edges = text if len(text) <= 4000 else text[:2000] + "\n" + text[-2000:]
    # Rule 6 pre-check: a phrase is ASCII and only ASCII characters lower-case into ASCII letters
    # (besides U+0130 and the Kelvin sign, which cannot form a phrase), so dropping non-ASCII
    # characters before lower() loses no occurrence; the non-ASCII lower() is ~5x slower.
    folded = (edges if edges.isascii() else edges.encode("ascii", "ignore").decode()).lower()
    for letter, needle in _HTTP_ERROR_GATES:
        if letter in folded and needle in folded:
            lowered = edges.lower()  # a gate matched: the exact rule decides (and names it)
            for phrase in _HTTP_ERROR_PHRASES:
                if phrase in lowered:
                    return True, f"error status in output: {phrase!r}"
            break
    if _STATUS_CODE.search(first) and _STATUS_PHRASE.search(first):
        return True, "the first line shows an HTTP error status"
    return False, ""


# ---------------------------------------------------------------------------------------------
# Links from earlier results (resource file URLs, OpenAPI spec URLs).


def _normalise_url(url: str) -> str:
    text = url.strip().split("#", 1)[0]
    text = re.sub(r"^https?://", "", text, flags=re.IGNORECASE)
    return text.rstrip("/").lower()


_JSON_CONTAINERS = (dict, list)  # a tuple: ``dict | list`` builds a union object at each call


class _ResultLinks:
    """URL → (action, args) learnt from the results of earlier calls, built lazily."""

    def __init__(self) -> None:
        self._pending: list[tuple[str, dict[str, Any]]] = []
        self._index: dict[str, tuple[str, dict[str, Any]]] = {}

    def add(self, result: str, hints: dict[str, Any]) -> None:
        if result:
            self._pending.append((result, hints))

    def lookup(self, url: str) -> tuple[str, dict[str, Any]] | None:
        if self._pending:
            for result, hints in self._pending:
                self._scan(result, hints)
            self._pending.clear()
        return self._index.get(_normalise_url(url))

    def _put(self, url: str, action: str, args: dict[str, Any]) -> None:
        if url.lower().startswith(("http://", "https://")):
            self._index.setdefault(_normalise_url(url), (action, args))

    def _scan(self, result: str, hints: dict[str, Any]) -> None:
        stripped = result.lstrip()
        if stripped[:1] in ("{", "[") and len(stripped) < 5_000_000:
            with contextlib.suppress(ValueError):
                self._walk(json.loads(stripped), 0)
        if "Resource ID:" in result or "OpenAPI/Swagger spec:" in result or hints:
            self._scan_lines(result, hints)

    def _walk(self, node: Any, depth: int) -> None:
        if depth > 8:
            return
        if isinstance(node, dict):
            ident = node.get("id")
            if isinstance(ident, str):
                url = node.get("url")
                if isinstance(url, str) and any(k in node for k in ("format", "filetype", "mime")):
                    self._put(url, "get.data", {"resource_id": ident})
                spec = node.get("machine_documentation_url")
                if isinstance(spec, str):
                    self._put(spec, "get.dataservice.openapi_spec", {"dataservice_id": ident})
            for value in node.values():
                if isinstance(value, _JSON_CONTAINERS):
                    self._walk(value, depth + 1)
        elif isinstance(node, list):
            for value in node[:10_000]:
                if isinstance(value, _JSON_CONTAINERS):
                    self._walk(value, depth + 1)

    def _scan_lines(self, result: str, hints: dict[str, Any]) -> None:
        resource_id: str | None = hints.get("resource_id")
        object_id: str | None = hints.get("dataservice_id")
        for raw in result.splitlines():
            line = raw.strip()
            if line.startswith("Resource ID:"):
                resource_id = line.split(":", 1)[1].strip() or None
            elif line.startswith("ID:"):
                object_id = line.split(":", 1)[1].strip() or None
            elif line.startswith(("URL:", "url:")) and resource_id:
                self._put(line.split(":", 1)[1].strip(), "get.data", {"resource_id": resource_id})
            elif line.startswith("OpenAPI/Swagger spec:") and object_id:
                spec = line.split(":", 1)[1].strip()
                self._put(spec, "get.dataservice.openapi_spec", {"dataservice_id": object_id})


# ---------------------------------------------------------------------------------------------
# The mapper.

# Actions whose id an earlier result can supply for a URL (file URLs, spec URLs).
_LINK_KEYS = {"get.data": "resource_id", "get.dataservice.openapi_spec": "dataservice_id"}

# Enum members as module constants: a global lookup is cheaper than the class attribute.
_MCP_TOOL = CallCategory.MCP_TOOL
_MAPPED = MappingStatus.MAPPED
_NO_ACTION = MappingStatus.NO_ACTION
_UNMAPPED = MappingStatus.UNMAPPED

# Results of these actions name the object whose file/spec URLs they list.
_HINT_ACTIONS = frozenset({"get.resource.info", "get.dataservice.info"})
_HINT_KEYS = frozenset({"resource_id", "dataservice_id"})

_CATEGORY_PRIORITY = (
    CallCategory.DATAGOUV_CLI,
    CallCategory.PYTHON_CLIENT,
    CallCategory.DATAGOUV_API_HTTP,
    CallCategory.WEB_PAGE_FETCH,
    CallCategory.FILE_LOAD_EXTERNAL,
)


# Stands for a CLI invocation already mapped from the requests it sent (``help`` keeps it out
# of the usage-error attribution).
_SENT = CliInvocation("", (), help=True)


@dataclass
class _Outcome:
    instances: list[ActionInstance] = field(default_factory=list)
    catalog_unmatched: list[str] = field(default_factory=list)
    external: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    undecided: list[str] = field(default_factory=list)


class _TraceMapper:
    def __init__(
        self,
        trace: Trace,
        registry: ActionRegistry,
        mcp_version: str | None,
        cli_version: str | None,
        client_version: str | None,
        mcp_tool_names: Collection[str] | None,
        aliases: UrlAliases,
        base_urls: Mapping[str, str] | None,
    ) -> None:
        self.trace = trace
        self.aliases = aliases
        self.registry = registry
        self.mcp_version = mcp_version
        self.cli_version = cli_version
        self.specs = registry.client_specs(client_version)
        known = registry.mcp_tool_names()
        self.mcp_names = known | frozenset(mcp_tool_names) if mcp_tool_names else known
        environ = sandbox_environ(base_urls)
        self.state = SessionState(shell_env=dict(environ), environ=environ)
        self.links = _ResultLinks()
        self.warnings: list[str] = []
        self._warned_unversioned = False

    def run(self) -> TraceMapping:
        calls = [self.map_call(call) for call in self.trace.tool_calls]
        return TraceMapping(
            tuple(calls), self.registry.version, self.mcp_version, tuple(self.warnings)
        )

    def map_call(self, call: ToolCall) -> CallMapping:
        # Fields are read once: attribute access on a pydantic model goes through __getattr__.
        name = call.name
        result = call.result
        errored, error_reason = _detect(call.error, result)
        registry = self.registry
        if name in self.mcp_names:
            mapping = self.map_mcp(call, name, errored, error_reason)
        elif name in registry.python_tools:
            keys = registry.data.capability_tools.python.argument_keys
            code = _first_text(call.arguments, keys)
            mapping = self.map_code(call, "python", code, errored, error_reason)
        elif name in registry.shell_tools:
            keys = registry.data.capability_tools.shell.argument_keys
            command = _first_text(call.arguments, keys)
            mapping = self.map_code(call, "shell", command, errored, error_reason)
        elif name in registry.web_search_tools:
            mapping = _decided(call, CallCategory.WEB_SEARCH, errored, error_reason, "web search")
        elif name in registry.web_fetch_tools:
            mapping = self.map_fetch(call, errored, error_reason)
        else:
            mapping = _call_mapping(
                call.id,
                name,
                CallCategory.UNCLASSIFIED,
                MappingStatus.UNMAPPED,
                (),
                0.0,
                errored,
                error_reason,
                f"tool {name!r} is neither an MCP tool the registry knows nor a capability tool",
            )
        hints: dict[str, Any] = {}
        for instance in mapping.instances:
            if instance.action in _HINT_ACTIONS:
                for key, value in instance.args.items():
                    if key in _HINT_KEYS:
                        hints[key] = value
        self.links.add(result, hints)
        return mapping

    # -- MCP ------------------------------------------------------------------------------------

    def map_mcp(self, call: ToolCall, name: str, errored: bool, error_reason: str) -> CallMapping:
        version = self.mcp_version
        confidence = CONFIDENCE_MCP
        if version is None:
            confidence = CONFIDENCE_MCP_UNVERSIONED
            if not self._warned_unversioned:
                self.warnings.append(
                    "the trace has no mcp_version: MCP tools were matched across all versions"
                )
                self._warned_unversioned = True
        arguments = call.arguments
        resolution = self.registry.resolve_mcp_call(name, version, arguments)
        actions = resolution.actions
        reason = resolution.reason
        if not actions:
            status = _NO_ACTION if resolution.known else _UNMAPPED
            if not resolution.known:
                self.warnings.append(reason)
            return _call_mapping(
                call.id,
                name,
                _MCP_TOOL,
                status,
                (),
                1.0 if resolution.known else 0.0,
                errored,
                error_reason,
                reason,
            )
        args = self.registry.semantic_args("mcp", arguments)
        call_id = call.id
        if len(actions) == 1:  # the usual case: ``args`` is fresh, no copy needed
            instances: tuple[ActionInstance, ...] = (
                _instance(actions[0], args, call_id, name, _MCP_TOOL, confidence, errored, reason),
            )
        else:
            instances = tuple(
                _instance(action, dict(args), call_id, name, _MCP_TOOL, confidence, errored, reason)
                for action in actions
            )
        return _call_mapping(
            call_id, name, _MCP_TOOL, _MAPPED, instances, confidence, errored, error_reason, reason
        )

    # -- code and shell --------------------------------------------------------------------------

    def map_code(
        self, call: ToolCall, kind: str, text: str, errored: bool, error_reason: str
    ) -> CallMapping:
        if kind == "python":
            analysis = analyze_python(text, self.state, self.specs)
        else:
            analysis = analyze_shell(text, self.state, self.specs, self.registry.cli_executables)
        outcome = _Outcome()
        ceiling = 1.0
        if not analysis.parsed:
            syntax_error = "SyntaxError" in call.result or "IndentationError" in call.result
            if errored or syntax_error:
                # CPython runs nothing from a cell with a syntax error.
                return _call_mapping(
                    call.id,
                    call.name,
                    CallCategory.PYTHON_LOCAL_ANALYSIS,
                    MappingStatus.NO_ACTION,
                    (),
                    1.0,
                    True,
                    error_reason or "Python syntax error",
                    f"code does not parse ({analysis.parse_error}); nothing ran",
                )
            # The sandbox ran it anyway (not plain CPython?): fall back to the URLs in the text.
            ceiling = CONFIDENCE_UNPARSED_CODE
            analysis = CodeAnalysis(
                events=[HttpRequest("GET", url, (), "text") for url in urls_in_text(text)]
            )
        external_category = CallCategory.FILE_LOAD_EXTERNAL
        wire = _wire_requests(call)
        cli_sent: dict[int, list[tuple[HttpRequest, int]]] | None = None
        if wire is not None and kind == "shell":
            # The shell's curl/wget/python requests and the CLI's own (its library's) all went
            # through the proxy: each CLI invocation gets the requests it sent, the rest are
            # mapped as the plain requests they were.
            static_urls = {
                _normalise_url(e.url) for e in analysis.events if isinstance(e, HttpRequest)
            }
            analysis = dataclasses.replace(
                analysis,
                events=[e for e in analysis.events if isinstance(e, CliInvocation)],
                unresolved_requests=0,
                opaque_urls=[],
            )
            cli_sent, order = self.attribute_wire(analysis, wire, static_urls)
            for item in order:  # in the order things were sent
                if isinstance(item, int):
                    event = analysis.events[item]
                    assert isinstance(event, CliInvocation)
                    # It sent requests: it was no usage error.
                    self.resolve_cli(call, event, outcome, errored, ceiling, None, cli_sent[item])
                else:
                    request, status = item
                    self.resolve_request(
                        call,
                        request,
                        outcome,
                        external_category,
                        _failed(status),
                        ceiling,
                        wire_status=status,
                    )
            # What is left sent nothing: help, usage errors, commands that never ran.
            analysis = dataclasses.replace(
                analysis,
                events=[
                    event if index not in cli_sent else _SENT
                    for index, event in enumerate(analysis.events)
                ],
            )
        elif wire is not None:
            # What reached the wire is what ran, with its exact arguments and status: it
            # replaces the static reading of the code's HTTP requests and client calls
            # (whose requests are on the wire too). Each request is errored on its own status.
            analysis = dataclasses.replace(
                analysis,
                events=[e for e in analysis.events if isinstance(e, CliInvocation)],
                unresolved_requests=0,
                opaque_urls=[],
            )
            for request, status in wire:
                self.resolve_request(
                    call,
                    request,
                    outcome,
                    external_category,
                    _failed(status),
                    ceiling,
                    wire_status=status,
                )
        failed_cli = self.usage_failures(analysis, call.result)
        for index, event in enumerate(analysis.events):
            if event is _SENT:
                continue
            if isinstance(event, HttpRequest):
                self.resolve_request(call, event, outcome, external_category, errored, ceiling)
            elif isinstance(event, ClientEvent):
                outcome.instances.append(
                    ActionInstance(
                        action=event.action,
                        args=dict(event.args),
                        source_call_id=call.id,
                        source_tool=call.name,
                        category=CallCategory.PYTHON_CLIENT,
                        confidence=min(CONFIDENCE_PARSED, ceiling),
                        errored=errored,
                        reason=f"datagouv client {event.target} (line {event.line})",
                    )
                )
            elif isinstance(event, CliInvocation):
                usage = failed_cli.get(index) if failed_cli else None
                sent = None if cli_sent is None else cli_sent.get(index, [])
                self.resolve_cli(call, event, outcome, errored, ceiling, usage, sent)
        return self.finish(call, analysis, outcome, errored, error_reason)

    def attribute_wire(
        self,
        analysis: CodeAnalysis,
        wire: list[tuple[HttpRequest, int]],
        static_urls: Collection[str],
    ) -> tuple[dict[int, list[tuple[HttpRequest, int]]], list[int | tuple[HttpRequest, int]]]:
        """Which recorded requests each CLI invocation sent (by event index), and in what order.

        Returns:
            The requests of each invocation that sent any, and the order of things sent: an
            event index at an invocation's first request, a request of its own otherwise.

        The invocations of one command line run one after the other, and each read command
        first requests its object by the id it was given. A request goes, in this order, to:
        the next invocation (from the current one on) whose id is in its path; a request the
        command line names literally (curl, wget); the next invocation not yet started whose id
        is unknown statically (``$ID``) and whose command performs an action the URL matches;
        the current invocation when it already sent one (its follow-ups, e.g. the file of
        ``resource download``). Anything else is a request of its own.
        """
        invocations: list[tuple[int, str | None, frozenset[str]]] = []
        for index, event in enumerate(analysis.events):
            if not isinstance(event, CliInvocation) or event.help:
                continue
            match = self.registry.match_cli(event.words, self.cli_version)
            if match is None or not match.command:
                continue
            rest = event.words[len(match.command.split()) :]
            ident = rest[0] if rest else None
            if ident is not None and SENTINEL in ident:
                ident = None
            actions = frozenset(action for action, _ in match.actions)
            invocations.append((index, ident, actions))
        sent: dict[int, list[tuple[HttpRequest, int]]] = {}
        order: list[int | tuple[HttpRequest, int]] = []
        current = 0
        for request, status in wire:
            path = urlsplit(request.url).path
            target: int | None = None
            for position in range(current, len(invocations)):
                ident = invocations[position][1]
                if ident is not None and f"/{ident}" in path:
                    target = position
                    break
            if target is None and _normalise_url(request.url) in static_urls:
                order.append((request, status))
                continue
            if target is None:
                matched = {
                    found.action
                    for found in self.registry.match_url(
                        self.aliases.resolve(request.url), request.method, request.params
                    ).actions
                }
                for position in range(current, len(invocations)):
                    index, ident, actions = invocations[position]
                    if ident is None and index not in sent and actions & matched:
                        target = position
                        break
            if target is None and current < len(invocations) and invocations[current][0] in sent:
                target = current
            if target is None:
                order.append((request, status))
                continue
            current = target
            index = invocations[target][0]
            if index not in sent:
                order.append(index)
            sent.setdefault(index, []).append((request, status))
        return sent, order

    def usage_failures(self, analysis: CodeAnalysis, result: str) -> dict[int, UsageError]:
        """Which CLI invocations (by event index) the result shows failing with a usage error.

        Each error goes to an unattributed invocation of its command (or a subcommand of it):
        first one whose positional arguments do not fit the command (unknown, or not the
        registry's count), else the first one.
        """
        errors = usage_errors(result)
        if not errors:
            return {}
        pending = [
            (index, event)
            for index, event in enumerate(analysis.events)
            if isinstance(event, CliInvocation) and not event.help
        ]
        failed: dict[int, UsageError] = {}
        for error in errors:
            words = error.command[1:]  # the executable is named as typed: compare the rest
            fitting = [(i, e) for i, e in pending if e.words[: len(words)] == words]
            if not fitting:
                continue
            misfits = [(i, e) for i, e in fitting if not self.cli_arguments_fit(e)]
            chosen = (misfits or fitting)[0]
            failed[chosen[0]] = error
            pending.remove(chosen)
        return failed

    def cli_arguments_fit(self, event: CliInvocation) -> bool:
        """Whether an invocation names a known command with the positional count it takes."""
        match = self.registry.match_cli(event.words, self.cli_version)
        if match is None:
            return False
        if match.arity is None:
            return True
        return len(event.words) - len(match.command.split()) == match.arity

    def resolve_cli(
        self,
        call: ToolCall,
        event: CliInvocation,
        outcome: _Outcome,
        errored: bool,
        ceiling: float,
        usage: UsageError | None = None,
        sent: list[tuple[HttpRequest, int]] | None = None,
    ) -> None:
        """Map one CLI invocation.

        With ``sent`` (the requests it sent, when the call's wire was recorded) the command's
        actions take their arguments from the matching requests and are errored on their
        statuses alone; an invocation that sent nothing ran nothing.
        """
        shown = " ".join((event.executable, *event.words))
        if event.help:
            outcome.notes.append(f"'{shown} --help' prints help only")
            return
        if usage is not None:
            message = f" ({usage.message})" if usage.message else ""
            outcome.notes.append(f"'{shown}' failed with a usage error{message}: nothing ran")
            return
        match = self.registry.match_cli(event.words, self.cli_version)
        if match is None:
            outcome.undecided.append(f"unknown CLI command '{shown}'")
            return
        if not match.actions:
            outcome.notes.append(f"CLI '{match.command}': {match.known_no_action}")
            return
        reason = f"CLI '{event.executable} {match.command}'"
        # Per action: the arguments and statuses of the requests that performed it.
        wire_args: dict[str, dict[str, Any]] = {}
        wire_failed: dict[str, bool] = {}
        stopped = errored
        if sent is not None:
            if not sent:
                outcome.notes.append(f"'{shown}' sent no request: it never ran")
                return
            for request, status in sent:
                found = self.registry.match_url(
                    self.aliases.resolve(request.url), request.method, request.params
                )
                for performed in found.actions:
                    name = performed.action
                    wire_args.setdefault(name, dict(performed.args))
                    wire_failed[name] = wire_failed.get(name, False) or _failed(status)
            # An action no request matched (a file outside the catalog, or one never fetched)
            # failed when an earlier request failed or the command itself did.
            stopped = errored or any(_failed(status) for _, status in sent)
            reason += " (sent " + ", ".join(
                f"{request.method} {_show_url(request.url)} HTTP {status}"
                for request, status in sent[:3]
            )
            reason += ", ...)" if len(sent) > 3 else ")"
        for action, args in match.actions:
            outcome.instances.append(
                ActionInstance(
                    action=action,
                    args={**args, **wire_args.get(action, {})},
                    source_call_id=call.id,
                    source_tool=call.name,
                    category=CallCategory.DATAGOUV_CLI,
                    confidence=min(CONFIDENCE_PARSED, ceiling),
                    errored=wire_failed.get(action, stopped),
                    reason=reason,
                )
            )

    def resolve_request(
        self,
        call: ToolCall,
        event: HttpRequest,
        outcome: _Outcome,
        external_category: CallCategory,
        errored: bool,
        ceiling: float = 1.0,
        wire_status: int | None = None,
    ) -> UrlMatch:
        match = self.registry.match_url(self.aliases.resolve(event.url), event.method, event.params)
        shown = _show_url(event.url)
        if wire_status is not None:
            shown += f" (sent, HTTP {wire_status})"
        if match.actions:
            for found in match.actions:
                args = dict(found.args)
                confidence = found.confidence
                key = _LINK_KEYS.get(found.action)
                if key is not None and key not in args and event.method == "GET":
                    linked = self.links.lookup(event.url)
                    if linked is not None and linked[0] == found.action:
                        args.update(linked[1])
                        confidence = max(confidence, CONFIDENCE_LINKED_URL)
                if found.page:
                    category = CallCategory.WEB_PAGE_FETCH
                elif match.catalog:
                    category = CallCategory.DATAGOUV_API_HTTP
                else:
                    category = external_category
                outcome.instances.append(
                    ActionInstance(
                        action=found.action,
                        args=args,
                        source_call_id=call.id,
                        source_tool=call.name,
                        category=category,
                        confidence=min(confidence, ceiling),
                        errored=errored,
                        reason=f"{event.method} {shown} ~ {found.pattern}",
                    )
                )
            return match
        if match.catalog:
            outcome.catalog_unmatched.append(f"{event.method} {shown}")
            return match
        linked = self.links.lookup(event.url) if event.method == "GET" else None
        if linked is not None:
            action, args = linked
            outcome.instances.append(
                ActionInstance(
                    action=action,
                    args=dict(args),
                    source_call_id=call.id,
                    source_tool=call.name,
                    category=external_category,
                    confidence=min(CONFIDENCE_LINKED_URL, ceiling),
                    errored=errored,
                    reason=f"GET {shown}: URL listed for {action} {args} in an earlier result",
                )
            )
            return match
        outcome.external.append(f"{event.method} {shown}")
        return match

    def finish(
        self,
        call: ToolCall,
        analysis: CodeAnalysis,
        outcome: _Outcome,
        errored: bool,
        error_reason: str,
    ) -> CallMapping:
        instances = tuple(outcome.instances)
        opaque_catalog = [
            url
            for url in analysis.opaque_urls
            if self.registry.match_url(self.aliases.resolve(url)).catalog
        ]
        if opaque_catalog:
            shown = ", ".join(_show_url(url) for url in opaque_catalog[:3])
            outcome.undecided.append(f"catalog URL(s) passed to unknown calls: {shown}")
        if analysis.unresolved_requests:
            outcome.undecided.append(f"{analysis.unresolved_requests} request(s) with dynamic URL")
        if outcome.catalog_unmatched:
            outcome.undecided.append(
                "catalog URL(s) matching no endpoint: " + ", ".join(outcome.catalog_unmatched[:3])
            )
        if instances:
            categories = {instance.category for instance in instances}
            category = next(c for c in _CATEGORY_PRIORITY if c in categories)
            status = MappingStatus.MAPPED
            confidence = max(instance.confidence for instance in instances)
            reason = f"{len(instances)} action instance(s)"
        else:
            has_cli = any(isinstance(event, CliInvocation) for event in analysis.events)
            if has_cli:
                category = CallCategory.DATAGOUV_CLI
            elif analysis.uses_client:
                category = CallCategory.PYTHON_CLIENT
            elif outcome.catalog_unmatched or opaque_catalog:
                category = CallCategory.DATAGOUV_API_HTTP
            elif outcome.external or analysis.unresolved_requests:
                category = CallCategory.FILE_LOAD_EXTERNAL
            else:
                category = CallCategory.PYTHON_LOCAL_ANALYSIS
            if outcome.undecided:
                status = MappingStatus.UNMAPPED
                confidence = 0.0
                reason = "undecided: " + "; ".join(outcome.undecided)
            else:
                status = MappingStatus.NO_ACTION
                confidence = 1.0
                if outcome.external:
                    outcome.notes.append("external URL(s): " + ", ".join(outcome.external[:3]))
                reason = "; ".join(outcome.notes) or "no catalog access"
        if instances and (outcome.undecided or outcome.notes):
            reason += " (" + "; ".join(outcome.undecided + outcome.notes) + ")"
        return _call_mapping(
            call.id,
            call.name,
            category,
            status,
            instances,
            confidence,
            errored,
            error_reason,
            reason,
        )

    # -- web fetch -------------------------------------------------------------------------------

    def map_fetch(self, call: ToolCall, errored: bool, error_reason: str) -> CallMapping:
        keys = self.registry.data.capability_tools.web_fetch.argument_keys
        url = _first_text(call.arguments, keys)
        method = str(call.arguments.get("method") or "GET").upper()
        if not url:
            return _call_mapping(
                call.id,
                call.name,
                CallCategory.WEB_PAGE_FETCH,
                MappingStatus.UNMAPPED,
                (),
                0.0,
                errored,
                error_reason,
                "fetch call without a URL argument",
            )
        outcome = _Outcome()
        event = HttpRequest(method, url, (), call.name)
        match = self.resolve_request(call, event, outcome, CallCategory.WEB_PAGE_FETCH, errored)
        instances = tuple(outcome.instances)
        if instances:
            categories = {instance.category for instance in instances}
            category = next(c for c in _CATEGORY_PRIORITY if c in categories)
            return _call_mapping(
                call.id,
                call.name,
                category,
                MappingStatus.MAPPED,
                instances,
                max(instance.confidence for instance in instances),
                errored,
                error_reason,
                instances[0].reason,
            )
        if match.catalog and _is_api_url(self.aliases.resolve(url), match.family):
            return _call_mapping(
                call.id,
                call.name,
                CallCategory.DATAGOUV_API_HTTP,
                MappingStatus.UNMAPPED,
                (),
                0.0,
                errored,
                error_reason,
                f"catalog API URL matching no endpoint: {method} {_show_url(url)}",
            )
        return _decided(
            call,
            CallCategory.WEB_PAGE_FETCH,
            errored,
            error_reason,
            f"web page {_show_url(url)} (browsing is not a catalog action)",
        )


def _is_api_url(url: str, family: str | None) -> bool:
    if family not in (None, "main"):
        return True
    return "/api/" in url


def _decided(
    call: ToolCall, category: CallCategory, errored: bool, error_reason: str, reason: str
) -> CallMapping:
    status = MappingStatus.NO_ACTION
    return _call_mapping(
        call.id, call.name, category, status, (), 1.0, errored, error_reason, reason
    )


def _first_text(arguments: Mapping[str, Any], keys: Collection[str]) -> str:
    for key in keys:
        value = arguments.get(key)
        if isinstance(value, str):
            return value
    strings = [value for value in arguments.values() if isinstance(value, str)]
    return strings[0] if len(strings) == 1 else ""


def _show_url(url: str) -> str:
    text = url.replace(SENTINEL, "{?}")
    return text if len(text) <= 160 else text[:157] + "..."


def map_trace(
    trace: Trace,
    registry: ActionRegistry | None = None,
    *,
    mcp_version: str | None = None,
    cli_version: str | None = None,
    client_version: str | None = None,
    mcp_tool_names: Collection[str] | None = None,
    base_urls: Mapping[str, str] | None = None,
) -> TraceMapping:
    """Map every call of a trace to semantic action instances, deterministically.

    Args:
        trace: The trace (arguments are already dicts).
        registry: The action registry; the packaged one when omitted.
        mcp_version: Overrides ``trace.mcp_version``.
        cli_version: The ``datagouv`` CLI version, when known (``None`` accepts every entry).
        client_version: The ``datagouv-client`` version, when known.
        mcp_tool_names: The server's tool list, when known: unknown tools in it are categorised
            ``mcp_tool`` (and left unmapped) instead of ``unclassified``.
        base_urls: The catalog base URLs the agent was given (field → URL, the keys of
            ``production.PRODUCTION_BASE_URLS``); overrides ``trace.provenance.base_urls``.
            URLs under them are matched as the production URLs they stand for, and the
            sandbox's base-URL environment variables (``os.environ["DATAGOUV_API_URL"]``,
            ``$DATAGOUV_TABULAR_API_URL``) resolve to them; without any, to the production
            base URLs (see :mod:`aliases`).

    Raises:
        UnknownVersionError: When a given version label is not PEP 440 (e.g. ``"local"``).
    """
    active = registry if registry is not None else load_registry()
    version = mcp_version if mcp_version is not None else trace.mcp_version
    if version is not None:
        parse_version(version)
    if cli_version is not None:
        parse_version(cli_version, "datagouv CLI version")
    recorded = base_urls if base_urls is not None else trace.provenance.base_urls
    aliases = UrlAliases.for_trace(recorded)
    mapper = _TraceMapper(
        trace, active, version, cli_version, client_version, mcp_tool_names, aliases, recorded
    )
    return mapper.run()
