"""Static extraction of catalog calls from agent code and shell commands.

Nothing here runs the code. Python cells are parsed with :mod:`ast` and walked in execution order
with a tiny constant evaluator, so URLs built from literals, f-strings, concatenation,
``str.format``, ``params={...}`` dicts, ``base_url=`` clients and simple loops over literal lists
are recovered. Shell commands are split with :mod:`shlex`; ``datagouv`` CLI invocations, ``curl``/
``wget``/httpie URLs and ``python -c`` / heredoc code are extracted.

The output is a list of events in source order (:class:`HttpRequest`, :class:`ClientEvent`,
:class:`CliInvocation`); the mapper turns them into semantic action instances with the registry.
Parts of a value that cannot be known statically are replaced by :data:`SENTINEL`.

Deliberate limits (documented so nobody expects more): ``except`` handlers are not walked (they
run only when the ``try`` body failed); ``while`` bodies and loops over unknown iterables are
walked once; only literal lists, tuples, ``range()`` and names bound to them are expanded (at most
:data:`MAX_LOOP_EXPANSION` items); user functions are inlined at their call sites up to
:data:`MAX_INLINE_DEPTH` levels; class bodies and lambdas are not walked.
"""

from __future__ import annotations

import ast
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias
from urllib.parse import urlencode, urljoin

from datagouv_eval_pipeline.base.vocabulary import TABULAR_OPERATORS

SENTINEL = "\uffff"
"""Marks a part of a string whose value is unknown statically (never occurs in real URLs)."""

MAX_LOOP_EXPANSION = 20
MAX_INLINE_DEPTH = 3
_MAX_STEPS = 5000  # statement visits per analysis: bounds nested loop expansion

_URL_IN_TEXT = re.compile(r"""https?://[^\s'"<>`)\]}]+""", re.IGNORECASE)
_HTTP_VERBS = frozenset({"get", "post", "put", "patch", "delete", "head", "options"})
_HTTP_MODULES = frozenset({"requests", "httpx", "aiohttp"})
_HTTP_CLIENT_CTORS = frozenset(
    {
        "requests.Session",
        "requests.session",
        "httpx.Client",
        "httpx.AsyncClient",
        "aiohttp.ClientSession",
    }
)
_FILE_READERS = frozenset(
    {
        "pandas.read_csv",
        "pandas.read_json",
        "pandas.read_excel",
        "pandas.read_parquet",
        "pandas.read_table",
        "pandas.read_html",
        "pandas.read_xml",
        "pandas.read_fwf",
        "geopandas.read_file",
        "polars.read_csv",
        "polars.read_json",
        "polars.read_parquet",
        "polars.read_excel",
        "urllib.request.urlopen",
        "urllib.request.urlretrieve",
        "wget.download",
    }
)
_URL_KEYWORDS = ("url", "filepath_or_buffer", "io", "path_or_buf", "source", "filename", "path")
_SQL_CALLS = frozenset({"sql", "query", "execute", "read_csv", "read_csv_auto", "read_parquet"})
_SHELL_CALLS = frozenset(
    {
        "subprocess.run",
        "subprocess.call",
        "subprocess.check_call",
        "subprocess.check_output",
        "subprocess.Popen",
        "subprocess.getoutput",
        "os.system",
        "os.popen",
    }
)
# Calls that never fetch the URLs they are given (printing, string handling, containers).
_INERT_CALLS = frozenset(
    {
        "print", "len", "str", "repr", "isinstance", "format", "join", "replace", "split",
        "strip", "rstrip", "lstrip", "startswith", "endswith", "append", "extend", "add",
        "update", "write", "info", "debug", "warning", "error", "exception", "display",
        "Markdown", "urlparse", "urlsplit", "urljoin", "urlencode", "quote", "dumps", "set",
        "list", "dict", "tuple", "sorted", "enumerate", "zip", "lower", "upper", "encode",
    }
)  # fmt: skip
_INERT_MODULES = frozenset({"logging", "json", "re", "urllib.parse", "os", "pathlib"})
_CLIENT_MODULE = "datagouv"
_CLIENT_CLASSES = ("Client", "Dataset", "Resource", "Organization", "Topic")
# Object identity arguments of each client constructor (and Client.<factory>), in order.
_CLIENT_IDS: dict[str, tuple[str, ...]] = {
    "Client": (),
    "Dataset": ("dataset_id",),
    "Resource": ("resource_id", "dataset_id"),
    "Organization": ("organization_id",),
    "Topic": ("topic_id",),
}
_CLIENT_FACTORIES = {
    "dataset": "Dataset",
    "resource": "Resource",
    "organization": "Organization",
    "topic": "Topic",
}
# datagouv-client Resource.rows operators (symbols and names) → Tabular API operator.
_CLIENT_OPERATORS = {
    "==": "exact",
    "!=": "differs",
    ">": "strictly_greater",
    ">=": "greater",
    "<": "strictly_less",
    "<=": "less",
}


# ---------------------------------------------------------------------------------------------
# Public data types.


@dataclass(frozen=True)
class ClientSpec:
    """One ``datagouv`` client call that performs a semantic action (from the registry).

    Attributes:
        target: ``"Dataset"`` (constructor) or ``"Resource.rows"`` (member).
        kind: ``constructor``, ``method``, ``property`` or ``download_url`` (an attribute holding
            a file URL, credited only when that URL is fetched).
        args: Constructors/factories: semantic names of the positional arguments.
            Members: the object ids the instance carries.
        action: The semantic action.
    """

    target: str
    kind: str
    args: tuple[str | None, ...]
    action: str


@dataclass(frozen=True)
class HttpRequest:
    """An HTTP request found in code or a command.

    Attributes:
        method: Upper-case HTTP method.
        url: The URL; unknown parts are :data:`SENTINEL`.
        params: Query parameters given apart from the URL.
        via: What issued it (``requests.get``, ``curl``, ...).
        line: 1-based line in the cell (0 when unknown).
    """

    method: str
    url: str
    params: tuple[tuple[str, str], ...] = ()
    via: str = ""
    line: int = 0


@dataclass(frozen=True)
class ClientEvent:
    """A ``datagouv`` Python client call that performs an action.

    Attributes:
        target: The client member, e.g. ``Resource.rows``.
        action: The semantic action.
        args: Semantic arguments known statically.
        line: 1-based line in the cell.
    """

    target: str
    action: str
    args: dict[str, Any]
    line: int = 0


@dataclass(frozen=True)
class CliInvocation:
    """A ``datagouv`` CLI invocation.

    Attributes:
        executable: The executable name as typed.
        words: Positional words after the executable (options removed).
        help: Whether ``--help``/``-h`` was given (prints help, performs nothing).
        line: 1-based line in the cell (0 when unknown).
    """

    executable: str
    words: tuple[str, ...]
    help: bool = False
    line: int = 0


Event: TypeAlias = HttpRequest | ClientEvent | CliInvocation


@dataclass
class CodeAnalysis:
    """What one code cell or command does, statically.

    Attributes:
        events: Catalog-relevant events in execution order.
        parsed: Whether the input could be parsed (``False`` for a Python syntax error).
        parse_error: The parse error message.
        unresolved_requests: HTTP calls whose URL could not be determined.
        uses_client: Whether the ``datagouv`` client library is used.
        opaque_urls: URLs passed to calls the analyser does not know (a helper from another
            module, an unknown client); they may be requests, so a classifier should look.
    """

    events: list[Event] = field(default_factory=list)
    parsed: bool = True
    parse_error: str = ""
    unresolved_requests: int = 0
    uses_client: bool = False
    opaque_urls: list[str] = field(default_factory=list)

    def extend(self, other: CodeAnalysis) -> None:
        """Append another analysis (a nested shell or Python snippet)."""
        self.events.extend(other.events)
        self.unresolved_requests += other.unresolved_requests
        self.uses_client = self.uses_client or other.uses_client
        self.opaque_urls.extend(other.opaque_urls)


# ---------------------------------------------------------------------------------------------
# Static values.


@dataclass(frozen=True)
class _Module:
    name: str


@dataclass(frozen=True)
class _Func:
    qualname: str


@dataclass(frozen=True)
class _ClientClass:
    name: str


@dataclass(frozen=True)
class _Obj:
    cls: str
    ids: tuple[tuple[str, str], ...] = ()

    def get(self, name: str) -> str | None:
        for key, value in self.ids:
            if key == name:
                return value
        return None


@dataclass(frozen=True)
class _ObjList:
    element: _Obj


@dataclass(frozen=True)
class _HttpClient:
    base_url: str | None


@dataclass(frozen=True)
class _ResourceFile:
    """``Resource.url``: the resource's file URL, unknown statically but known to be its file."""

    obj: _Obj


@dataclass
class SessionState:
    """Interpreter state carried from one cell to the next within a trace (sandboxes persist)."""

    env: dict[str, Any] = field(default_factory=dict)
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = field(default_factory=dict)
    shell_env: dict[str, str] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    """Scripts written by heredoc redirections (``cat > x.py <<EOF``), by path."""
    environ: dict[str, str] = field(default_factory=dict)
    """Environment variables the sandbox sets (the catalog base URLs), read by Python through
    ``os.environ[...]``, ``os.environ.get`` and ``os.getenv``; the shell's ``$VAR`` reads
    ``shell_env``, which the caller seeds with the same values."""


# isinstance() targets as tuples: ``a | b`` in an expression builds a new union object at each
# call, which the AST walk does for every node.
_SCALAR_TYPES = (str, int, float, bool)
_TEXT_TYPES = (str, int, float)
_NUMBER_TYPES = (int, float)
_FUNCTION_NODES = (ast.FunctionDef, ast.AsyncFunctionDef)
_EXPR_RETURN_NODES = (ast.Expr, ast.Return)
_FOR_NODES = (ast.For, ast.AsyncFor)
_WITH_NODES = (ast.With, ast.AsyncWith)
_TUPLE_LIST_NODES = (ast.Tuple, ast.List)
_CONSTANT_NAME_NODES = (ast.Constant, ast.Name)
_COMPREHENSION_NODES = (ast.ListComp, ast.SetComp, ast.GeneratorExp)
_SEQUENCE_NODES = (ast.List, ast.Tuple, ast.Set)


_ENV_GETTERS = frozenset({"os.getenv", "os.environ.get"})


def _is_os_environ(value: Any) -> bool:
    """Whether an evaluated expression is ``os.environ`` (``import os`` or ``from os import``)."""
    if isinstance(value, _Module):
        return value.name == "os.environ"
    return isinstance(value, _Func) and value.qualname == "os.environ"


def _is_url(value: Any) -> bool:
    return isinstance(value, str) and value[:8].lower().startswith(("http://", "https://"))


def _as_text(value: Any) -> str:
    """Render a static value into a string, unknown parts as SENTINEL."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, _TEXT_TYPES):
        return str(value)
    return SENTINEL


def _known_text(value: Any) -> str | None:
    text = _as_text(value) if value is not None else SENTINEL
    return None if SENTINEL in text else text


# ---------------------------------------------------------------------------------------------
# Python analysis.


class _PythonAnalyzer:
    def __init__(self, state: SessionState, specs: Sequence[ClientSpec]) -> None:
        self.state = state
        self.env: dict[str, Any] = state.env
        self.specs: dict[str, list[ClientSpec]] = {}
        for spec in specs:
            self.specs.setdefault(spec.target, []).append(spec)
        self.result = CodeAnalysis()
        # (action, args) of property reads already seen: the library caches them per object.
        self._seen_properties: set[tuple[str, tuple[tuple[str, Any], ...]]] = set()
        self._stack: list[str] = []
        self._steps = 0

    # -- statements ------------------------------------------------------------------------------

    def block(self, body: Iterable[ast.stmt]) -> None:
        for node in body:
            self.stmt(node)

    def stmt(self, node: ast.stmt) -> None:
        self._steps += 1
        if self._steps > _MAX_STEPS:
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self.env[alias.asname] = _Module(alias.name)
                else:
                    top = alias.name.split(".", 1)[0]
                    self.env[top] = _Module(top)
                if alias.name.split(".", 1)[0] == _CLIENT_MODULE:
                    self.result.uses_client = True
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            for alias in node.names:
                bound = alias.asname or alias.name
                if module.split(".", 1)[0] == _CLIENT_MODULE and alias.name in _CLIENT_CLASSES:
                    self.env[bound] = _ClientClass(alias.name)
                    self.result.uses_client = True
                else:
                    self.env[bound] = _Func(f"{module}.{alias.name}")
        elif isinstance(node, _FUNCTION_NODES):
            self.state.functions[node.name] = node
            self.env.pop(node.name, None)
        elif isinstance(node, ast.ClassDef):
            return
        elif isinstance(node, ast.Assign):
            self.expr(node.value)
            value = self.eval(node.value)
            for target in node.targets:
                self.bind(target, value)
        elif isinstance(node, ast.AnnAssign):
            if node.value is not None:
                self.expr(node.value)
                self.bind(node.target, self.eval(node.value))
        elif isinstance(node, ast.AugAssign):
            self.expr(node.value)
            if isinstance(node.target, ast.Name) and isinstance(node.op, ast.Add):
                left = self.env.get(node.target.id)
                right = self.eval(node.value)
                if isinstance(left, str) or isinstance(right, str):
                    self.env[node.target.id] = _as_text(left) + _as_text(right)
                else:
                    self.env.pop(node.target.id, None)
            else:
                self.bind(node.target, None)
        elif isinstance(node, _EXPR_RETURN_NODES):
            if node.value is not None:
                self.expr(node.value)
        elif isinstance(node, ast.If):
            self.expr(node.test)
            self.block(node.body)
            self.block(node.orelse)
        elif isinstance(node, _FOR_NODES):
            self.expr(node.iter)
            self.loop(node.target, node.iter, node.body)
            self.block(node.orelse)
        elif isinstance(node, ast.While):
            self.expr(node.test)
            self.block(node.body)
        elif isinstance(node, _WITH_NODES):
            for item in node.items:
                self.expr(item.context_expr)
                if item.optional_vars is not None:
                    self.bind(item.optional_vars, self.eval(item.context_expr))
            self.block(node.body)
        elif isinstance(node, ast.Try):
            self.block(node.body)
            self.block(node.orelse)
            self.block(node.finalbody)
        elif isinstance(node, ast.Match):
            self.expr(node.subject)
            for case in node.cases:
                self.block(case.body)

    def loop(self, target: ast.expr, iterable: ast.expr, body: list[ast.stmt]) -> None:
        items = self.iter_items(iterable)
        if items is not None:
            for item in items[:MAX_LOOP_EXPANSION]:
                self.bind(target, item)
                self.block(body)
            return
        source = self.eval(iterable)
        self.bind(target, source.element if isinstance(source, _ObjList) else None)
        self.block(body)

    def iter_items(self, iterable: ast.expr) -> list[Any] | None:
        if (
            isinstance(iterable, ast.Call)
            and isinstance(iterable.func, ast.Name)
            and iterable.func.id == "range"
            and iterable.func.id not in self.env
        ):
            bounds = [self.eval(arg) for arg in iterable.args]
            if bounds and all(isinstance(b, int) and not isinstance(b, bool) for b in bounds):
                numbers = list(range(*bounds))
                return numbers if len(numbers) <= MAX_LOOP_EXPANSION else None
            return None
        value = self.eval(iterable)
        if isinstance(value, list) and 0 < len(value) <= MAX_LOOP_EXPANSION:
            return value
        if isinstance(value, dict) and 0 < len(value) <= MAX_LOOP_EXPANSION:
            return list(value)
        return None

    def bind(self, target: ast.expr, value: Any) -> None:
        if isinstance(target, ast.Name):
            if value is None:
                self.env.pop(target.id, None)
            else:
                self.env[target.id] = value
        elif isinstance(target, _TUPLE_LIST_NODES):
            values = value if isinstance(value, list) and len(value) == len(target.elts) else None
            for index, element in enumerate(target.elts):
                self.bind(element, values[index] if values is not None else None)

    # -- expressions (walked for their effects, in evaluation order) -----------------------------

    def expr(self, node: ast.expr) -> None:
        if isinstance(node, _CONSTANT_NAME_NODES):
            return  # leaves: nothing to do, and the most common nodes
        if isinstance(node, ast.Call):
            self.call(node)
        elif isinstance(node, ast.Attribute):
            self.expr(node.value)
            self.attribute(node)
        elif isinstance(node, _COMPREHENSION_NODES):
            self.comprehension(node.generators, [node.elt])
        elif isinstance(node, ast.DictComp):
            self.comprehension(node.generators, [node.key, node.value])
        elif isinstance(node, ast.Lambda):
            return
        else:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.expr(child)
                elif isinstance(child, ast.keyword):
                    self.expr(child.value)

    def comprehension(self, generators: list[ast.comprehension], elements: list[ast.expr]) -> None:
        saved = dict(self.env)
        first = generators[0]
        self.expr(first.iter)
        items = self.iter_items(first.iter) if len(generators) == 1 else None
        runs: list[Any] = items if items is not None else [None]
        for item in runs[:MAX_LOOP_EXPANSION]:
            if items is not None:
                self.bind(first.target, item)
            else:
                source = self.eval(first.iter)
                self.bind(first.target, source.element if isinstance(source, _ObjList) else None)
            for element in elements:
                self.expr(element)
        self.env.clear()
        self.env.update(saved)

    def attribute(self, node: ast.Attribute) -> None:
        if not isinstance(node.ctx, ast.Load):
            return
        receiver = self.eval(node.value)
        if isinstance(receiver, _Obj):
            self.client_member(receiver, node.attr, "property", node, None)

    def call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute):
            self.expr(func.value)
        elif not isinstance(func, ast.Name):
            self.expr(func)
        for arg in node.args:
            self.expr(arg.value if isinstance(arg, ast.Starred) else arg)
        for keyword in node.keywords:
            self.expr(keyword.value)
        self.handle_call(node)

    def handle_call(self, node: ast.Call) -> None:
        func = node.func
        line = getattr(node, "lineno", 0)
        user_function = isinstance(func, ast.Name) and func.id not in self.env
        if user_function and isinstance(func, ast.Name) and func.id in self.state.functions:
            self.inline(self.state.functions[func.id], node)
            return
        callee = self.eval(func)
        receiver = self.eval(func.value) if isinstance(func, ast.Attribute) else None
        attr = func.attr if isinstance(func, ast.Attribute) else None
        # datagouv client
        if isinstance(callee, _ClientClass):
            self.result.uses_client = True
            if self._keyword_false(node, "fetch"):
                return
            self.client_constructor(callee.name, node, line)
            return
        if isinstance(receiver, _Obj) and attr is not None:
            self.client_member(receiver, attr, "method", node, node)
            return
        qualname = self.qualname(func)
        # shell from Python
        if qualname in _SHELL_CALLS and node.args:
            command = self.eval(node.args[0])
            if isinstance(command, list):
                words = [_as_text(word) for word in command]
                text = shlex.join(words)
            else:
                text = _as_text(command) if command is not None else ""
            if text and text != SENTINEL:
                nested = analyze_shell(text, self.state, list(self._all_specs()))
                for event in nested.events:
                    self.result.events.append(_with_line(event, line))
                self.result.unresolved_requests += nested.unresolved_requests
            return
        # HTTP
        self.http_call(node, qualname, receiver, attr, line)

    def _all_specs(self) -> Iterable[ClientSpec]:
        for specs in self.specs.values():
            yield from specs

    @staticmethod
    def _keyword_false(node: ast.Call, name: str) -> bool:
        return any(
            kw.arg == name and isinstance(kw.value, ast.Constant) and kw.value.value is False
            for kw in node.keywords
        )

    def http_call(
        self, node: ast.Call, qualname: str | None, receiver: Any, attr: str | None, line: int
    ) -> None:
        method = "GET"
        url_node: ast.expr | None = None
        strong = False
        base_url: str | None = None
        verb = attr if attr is not None else (qualname.rsplit(".", 1)[-1] if qualname else None)
        module_verb = (
            qualname is not None
            and "." in qualname
            and qualname.split(".", 1)[0] in _HTTP_MODULES
            and qualname.rsplit(".", 1)[-1] in (_HTTP_VERBS | {"request", "stream"})
        )
        client_verb = isinstance(receiver, _HttpClient) and verb in (
            _HTTP_VERBS | {"request", "stream"}
        )
        if module_verb or client_verb:
            strong = True
            if isinstance(receiver, _HttpClient):
                base_url = receiver.base_url
            if verb in ("request", "stream"):
                method_value = self.eval(node.args[0]) if node.args else self._kw(node, "method")
                method = str(method_value).upper() if isinstance(method_value, str) else "GET"
                url_node = node.args[1] if len(node.args) > 1 else self._kw_node(node, "url")
            else:
                method = (verb or "get").upper()
                url_node = node.args[0] if node.args else self._kw_node(node, "url")
        elif qualname in _FILE_READERS or (
            qualname is not None and qualname.rsplit(".", 1)[-1] in {"urlopen", "urlretrieve"}
        ):
            strong = True
            url_node = node.args[0] if node.args else self._first_kw_node(node, _URL_KEYWORDS)
        elif attr in _SQL_CALLS or (qualname or "").rsplit(".", 1)[-1] in _SQL_CALLS:
            if node.args:
                text = self.eval(node.args[0])
                if isinstance(text, str) and not _is_url(text):
                    for url in _URL_IN_TEXT.findall(text):
                        via = qualname or f"?.{attr}"
                        self.result.events.append(HttpRequest("GET", url, (), via, line))
                    return
            url_node = node.args[0] if node.args else None
        elif verb in _HTTP_VERBS or verb in {"download", "fetch", "open_url"}:
            method = verb.upper() if verb in _HTTP_VERBS else "GET"
            url_node = node.args[0] if node.args else self._kw_node(node, "url")
        else:
            self.note_opaque(node, qualname, attr)
            return
        if url_node is None:
            if strong:
                self.result.unresolved_requests += 1
            return
        value = self.eval(url_node)
        if isinstance(value, _ResourceFile):
            self.fetch_resource_file(value.obj, line)
            return
        url = value if isinstance(value, str) else None
        relative = url is not None and not _is_url(url) and not url.startswith(SENTINEL)
        if url is not None and relative and base_url is not None:
            url = base_url.rstrip("/") + "/" + url.lstrip("/")
        if url is None or not _is_url(url):
            # A fully known non-URL string is a local path: no request at all.
            if strong and (url is None or SENTINEL in url):
                self.result.unresolved_requests += 1
            return
        params = self.params(self._kw(node, "params"))
        via = qualname or (f"?.{attr}" if attr else "")
        self.result.events.append(HttpRequest(method, url, params, via, line))

    def note_opaque(self, node: ast.Call, qualname: str | None, attr: str | None) -> None:
        """Remember URLs handed to calls we cannot interpret (they might fetch them)."""
        name = attr or (qualname.rsplit(".", 1)[-1] if qualname else "")
        if name in _INERT_CALLS or (qualname or "").split(".", 1)[0] in _INERT_MODULES:
            return
        values = [self.eval(arg) for arg in node.args if not isinstance(arg, ast.Starred)]
        values += [self.eval(kw.value) for kw in node.keywords]
        for value in values:
            if _is_url(value):
                self.result.opaque_urls.append(value)

    @staticmethod
    def params(value: Any) -> tuple[tuple[str, str], ...]:
        items: list[tuple[Any, Any]]
        if isinstance(value, dict):
            items = list(value.items())
        elif isinstance(value, list):
            items = [
                (pair[0], pair[1]) for pair in value if isinstance(pair, list) and len(pair) == 2
            ]
        else:
            return ()
        result: list[tuple[str, str]] = []
        for key, item in items:
            if isinstance(item, list):
                result.extend((str(key), _as_text(element)) for element in item)
            elif item is not None:
                result.append((str(key), _as_text(item)))
        return tuple(result)

    def _kw_node(self, node: ast.Call, name: str) -> ast.expr | None:
        for keyword in node.keywords:
            if keyword.arg == name:
                return keyword.value
        return None

    def _first_kw_node(self, node: ast.Call, names: Sequence[str]) -> ast.expr | None:
        for name in names:
            found = self._kw_node(node, name)
            if found is not None:
                return found
        return None

    def _kw(self, node: ast.Call, name: str) -> Any:
        found = self._kw_node(node, name)
        return self.eval(found) if found is not None else None

    def inline(self, function: ast.FunctionDef | ast.AsyncFunctionDef, node: ast.Call) -> None:
        if function.name in self._stack or len(self._stack) >= MAX_INLINE_DEPTH:
            return
        saved = self.env
        local = dict(saved)
        params = function.args.posonlyargs + function.args.args
        defaults = function.args.defaults
        for index, param in enumerate(params):
            local.pop(param.arg, None)
            default_index = index - (len(params) - len(defaults))
            if default_index >= 0:
                default = self.eval(defaults[default_index])
                if default is not None:
                    local[param.arg] = default
        for param, kw_default in zip(
            function.args.kwonlyargs, function.args.kw_defaults, strict=False
        ):
            local.pop(param.arg, None)
            if kw_default is not None:
                default = self.eval(kw_default)
                if default is not None:
                    local[param.arg] = default
        for param, arg in zip(params, node.args, strict=False):
            if isinstance(arg, ast.Starred):
                break
            value = self.eval(arg)
            if value is None:
                local.pop(param.arg, None)
            else:
                local[param.arg] = value
        for keyword in node.keywords:
            if keyword.arg is not None:
                value = self.eval(keyword.value)
                if value is None:
                    local.pop(keyword.arg, None)
                else:
                    local[keyword.arg] = value
        self._stack.append(function.name)
        self.env = local
        try:
            self.block(function.body)
        finally:
            self.env = saved
            self._stack.pop()

    # -- datagouv client -------------------------------------------------------------------------

    def client_constructor(self, cls: str, node: ast.Call, line: int) -> None:
        obj = self.make_obj(cls, node)
        for spec in self.specs.get(cls, []):
            if spec.kind == "constructor":
                args = {name: obj.get(name) for name in spec.args if name and obj.get(name)}
                self.result.events.append(ClientEvent(cls, spec.action, args, line))

    def make_obj(self, cls: str, node: ast.Call) -> _Obj:
        names = _CLIENT_IDS.get(cls, ())
        ids: dict[str, str] = {}
        for name, arg in zip(names, node.args, strict=False):
            text = _known_text(self.eval(arg))
            if text is not None and text.strip():
                ids[name] = text.strip()
        for keyword in node.keywords:
            target = names[0] if keyword.arg == "id" and names else keyword.arg
            if target in names:
                text = _known_text(self.eval(keyword.value))
                if text is not None and text.strip():
                    ids[target] = text.strip()
        return _Obj(cls, tuple(sorted(ids.items())))

    def client_member(
        self, obj: _Obj, member: str, kind: str, node: ast.AST, call: ast.Call | None
    ) -> None:
        line = getattr(node, "lineno", 0)
        if obj.cls == "Client" and member in _CLIENT_FACTORIES and call is not None:
            if self._keyword_false(call, "fetch"):
                return
            target_cls = _CLIENT_FACTORIES[member]
            made = self.make_obj(target_cls, call)
            for spec in self.specs.get(f"Client.{member}", []):
                made_args = {n: made.get(n) for n in spec.args if n and made.get(n)}
                event = ClientEvent(f"Client.{member}", spec.action, made_args, line)
                self.result.events.append(event)
            return
        target = f"{obj.cls}.{member}"
        for spec in self.specs.get(target, []):
            if spec.kind != kind:
                continue
            args: dict[str, Any] = {
                name: obj.get(name) for name in spec.args if name and obj.get(name)
            }
            if call is not None and member == "rows":
                filters = self.client_filters(call)
                if filters:
                    args["filters"] = filters
            if kind == "property":
                key = (spec.action, tuple(sorted(args.items())))
                if key in self._seen_properties:
                    continue  # the library caches property values: one fetch per object
                self._seen_properties.add(key)
            self.result.events.append(ClientEvent(target, spec.action, args, line))

    def fetch_resource_file(self, obj: _Obj, line: int) -> None:
        """A request on ``resource.url``: the client's ``download_url`` entries apply."""
        for spec in self.specs.get(f"{obj.cls}.url", []):
            if spec.kind == "download_url":
                args = {name: obj.get(name) for name in spec.args if name and obj.get(name)}
                self.result.events.append(ClientEvent(f"{obj.cls}.url", spec.action, args, line))

    def client_filters(self, call: ast.Call) -> str | None:
        node = call.args[0] if call.args else self._kw_node(call, "filters")
        if node is None:
            return None
        value = self.eval(node)
        if not isinstance(value, list):
            return None
        terms: list[str] = []
        for item in value:
            if not isinstance(item, list) or len(item) not in (2, 3):
                return None
            column, operator = _known_text(item[0]), _known_text(item[1])
            if column is None or operator is None:
                return None
            name = _CLIENT_OPERATORS.get(operator, operator)
            if name == "sort":
                continue
            if name not in TABULAR_OPERATORS:
                return None
            if len(item) == 3:
                operand = _known_text(item[2])
                if operand is None:
                    return None
                terms.append(f"{column}__{name}={operand}")
            else:
                terms.append(f"{column}__{name}")
        return "&".join(terms) or None

    # -- evaluation (pure) -----------------------------------------------------------------------

    def qualname(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            bound = self.env.get(node.id)
            if isinstance(bound, _Module):
                return bound.name
            if isinstance(bound, _Func):
                return bound.qualname
            return node.id if bound is None else None
        if isinstance(node, ast.Attribute):
            receiver = self.eval(node.value)
            if isinstance(receiver, _Module):
                return f"{receiver.name}.{node.attr}"
            if isinstance(receiver, _Func):
                return f"{receiver.qualname}.{node.attr}"
        return None

    def eval(self, node: ast.expr | None) -> Any:
        if node is None:
            return None
        if isinstance(node, ast.Constant):
            value = node.value
            return value if isinstance(value, _SCALAR_TYPES) else None
        if isinstance(node, ast.JoinedStr):
            parts: list[str] = []
            for piece in node.values:
                if isinstance(piece, ast.Constant):
                    parts.append(str(piece.value))
                elif isinstance(piece, ast.FormattedValue):
                    inner = self.eval(piece.value)
                    parts.append(_as_text(inner) if inner is not None else SENTINEL)
            return "".join(parts)
        if isinstance(node, ast.Name):
            return self.env.get(node.id)
        if isinstance(node, ast.BinOp):
            return self.binop(node)
        if isinstance(node, _SEQUENCE_NODES):
            return [self.eval(element) for element in node.elts]
        if isinstance(node, ast.Dict):
            mapping: dict[str, Any] = {}
            for key_node, value_node in zip(node.keys, node.values, strict=False):
                key_value = self.eval(key_node) if key_node is not None else None
                if isinstance(key_value, str):
                    mapping[key_value] = self.eval(value_node)
            return mapping
        if isinstance(node, ast.Attribute):
            return self.eval_attribute(node)
        if isinstance(node, ast.Subscript):
            container = self.eval(node.value)
            index = self.eval(node.slice)
            if isinstance(container, list) and isinstance(index, int):
                return container[index] if -len(container) <= index < len(container) else None
            if isinstance(container, dict) and isinstance(index, str):
                return container.get(index)
            if isinstance(container, _ObjList):
                return container.element
            if isinstance(index, str) and _is_os_environ(container):
                return self.state.environ.get(index)
            return None
        if isinstance(node, ast.Call):
            return self.eval_call(node)
        if isinstance(node, ast.Await):
            return self.eval(node.value)
        return None

    def binop(self, node: ast.BinOp) -> Any:
        left, right = self.eval(node.left), self.eval(node.right)
        if isinstance(node.op, ast.Add):
            if isinstance(left, str) or isinstance(right, str):
                return (_as_text(left) if left is not None else SENTINEL) + (
                    _as_text(right) if right is not None else SENTINEL
                )
            if isinstance(left, list) and isinstance(right, list):
                return left + right
            if isinstance(left, _NUMBER_TYPES) and isinstance(right, _NUMBER_TYPES):
                return left + right
            return None
        if isinstance(node.op, ast.Mod) and isinstance(left, str):
            operands = right if isinstance(right, list) else [right]
            pieces = iter(operands)

            def substitute(_: re.Match[str]) -> str:
                operand = next(pieces, None)
                return _as_text(operand) if operand is not None else SENTINEL

            return re.sub(r"%[sdrif]", substitute, left)
        return None

    def eval_attribute(self, node: ast.Attribute) -> Any:
        receiver = self.eval(node.value)
        if isinstance(receiver, _Module):
            if receiver.name.split(".", 1)[0] == _CLIENT_MODULE and node.attr in _CLIENT_CLASSES:
                return _ClientClass(node.attr)
            return _Module(f"{receiver.name}.{node.attr}")
        if isinstance(receiver, _Obj):
            return _client_attribute(receiver, node.attr)
        return None

    def eval_call(self, node: ast.Call) -> Any:
        func = node.func
        callee = self.eval(func)
        if isinstance(callee, _ClientClass):
            return self.make_obj(callee.name, node)
        if isinstance(func, ast.Attribute):
            receiver = self.eval(func.value)
            if isinstance(receiver, _Obj) and receiver.cls == "Client":
                target = _CLIENT_FACTORIES.get(func.attr)
                return self.make_obj(target, node) if target else None
            if isinstance(receiver, str):
                return self.str_method(receiver, func.attr, node)
        qualname = self.qualname(func)
        if qualname is None:
            return None
        if qualname in _HTTP_CLIENT_CTORS:
            base = self._kw(node, "base_url")
            if base is None and qualname == "aiohttp.ClientSession" and node.args:
                base = self.eval(node.args[0])
            return _HttpClient(base if isinstance(base, str) else None)
        short = qualname.rsplit(".", 1)[-1]
        if short == "Request" and qualname.startswith(("urllib", "Request")):
            return self.eval(node.args[0]) if node.args else self._kw(node, "url")
        if qualname == "str" and node.args:
            value = self.eval(node.args[0])
            return _as_text(value) if value is not None else None
        if short == "urljoin" and len(node.args) == 2:
            base, tail = self.eval(node.args[0]), self.eval(node.args[1])
            if isinstance(base, str) and isinstance(tail, str):
                return urljoin(base, tail)
            return None
        if qualname in ("os.path.join", "posixpath.join") and node.args:
            parts = [self.eval(arg) for arg in node.args]
            return "/".join(_as_text(p) if p is not None else SENTINEL for p in parts)
        if short == "urlencode" and node.args:
            value = self.eval(node.args[0])
            if isinstance(value, dict):
                return urlencode({k: _as_text(v) for k, v in value.items()})
            return None
        if qualname == "dict":
            return {kw.arg: self.eval(kw.value) for kw in node.keywords if kw.arg is not None}
        if qualname in ("list", "tuple") and node.args:
            value = self.eval(node.args[0])
            return value if isinstance(value, list) else None
        if qualname in _ENV_GETTERS and node.args:
            name = self.eval(node.args[0])
            if not isinstance(name, str):
                return None
            if name in self.state.environ:
                return self.state.environ[name]
            return self.eval(node.args[1]) if len(node.args) > 1 else self._kw(node, "default")
        return None

    def str_method(self, receiver: str, method: str, node: ast.Call) -> Any:
        args = [self.eval(arg) for arg in node.args]
        if method == "format":
            keywords = {kw.arg: self.eval(kw.value) for kw in node.keywords if kw.arg}
            position = iter(args)

            def field_value(match: re.Match[str]) -> str:
                name = match.group(1)
                if name == "":
                    value = next(position, None)
                elif name.isdigit():
                    value = args[int(name)] if int(name) < len(args) else None
                else:
                    value = keywords.get(name)
                return _as_text(value) if value is not None else SENTINEL

            return re.sub(r"\{([A-Za-z0-9_]*)(?:[!:][^{}]*)?\}", field_value, receiver)
        if method in ("strip", "rstrip", "lstrip"):
            chars = args[0] if args and isinstance(args[0], str) else None
            return str(getattr(receiver, method)(chars))
        if method in ("lower", "upper"):
            return str(getattr(receiver, method)())
        if method == "replace" and len(args) >= 2 and all(isinstance(a, str) for a in args[:2]):
            return receiver.replace(str(args[0]), str(args[1]))
        if method == "join" and args and isinstance(args[0], list):
            return receiver.join(_as_text(p) if p is not None else SENTINEL for p in args[0])
        return None


def _client_attribute(obj: _Obj, attr: str) -> Any:
    """Static type flow through the datagouv client objects."""
    if obj.cls == "Dataset" and attr == "resources":
        dataset_id = obj.get("dataset_id")
        ids = (("dataset_id", dataset_id),) if dataset_id else ()
        return _ObjList(_Obj("Resource", ids))
    if obj.cls == "Resource" and attr == "dataset":
        dataset_id = obj.get("dataset_id")
        return _Obj("Dataset", (("dataset_id", dataset_id),) if dataset_id else ())
    if obj.cls == "Dataset" and attr == "organization":
        return _Obj("Organization")
    if obj.cls in ("Organization", "Topic") and attr == "datasets":
        return _ObjList(_Obj("Dataset"))
    if obj.cls == "Resource" and attr == "url":
        return _ResourceFile(obj)
    if attr == "id":
        names = _CLIENT_IDS.get(obj.cls, ())
        return obj.get(names[0]) if names else None
    if attr == "dataset_id":
        return obj.get("dataset_id")
    return None


def _with_line(event: Event, line: int) -> Event:
    if isinstance(event, HttpRequest):
        return HttpRequest(event.method, event.url, event.params, event.via, line)
    if isinstance(event, CliInvocation):
        return CliInvocation(event.executable, event.words, event.help, line)
    return event


_MAGIC_LINE = re.compile(r"^(\s*)([!%])(.*)$")
_AST_FLAGS = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT


def analyze_python(
    code: str, state: SessionState | None = None, specs: Sequence[ClientSpec] = ()
) -> CodeAnalysis:
    """Extract catalog events from a Python cell.

    Args:
        code: The cell's source. IPython ``!shell`` lines and ``%%bash``/``%%sh`` cells are
            analysed as shell commands; other ``%magic`` lines are ignored. Top-level ``await``
            is accepted (notebook-style sandboxes allow it).
        state: Interpreter state carried across the cells of one trace (mutated).
        specs: The client calls that perform actions (from the registry).

    Returns:
        The events in execution order. A cell that does not parse has ``parsed=False`` and no
        events: Python runs nothing from a file with a syntax error.
    """
    session = state if state is not None else SessionState()
    first, _, rest = code.lstrip().partition("\n")
    if first.startswith("%%"):
        magic_name = first[2:].split()
        if magic_name and (magic_name[0] in ("bash", "sh") or magic_name[:2] == ["script", "bash"]):
            return analyze_shell(rest, session, specs)
    shell_lines: dict[int, str] = {}
    source = code
    if "!" in code or "%" in code:
        lines = code.split("\n")
        for index, line in enumerate(lines):
            magic = _MAGIC_LINE.match(line)
            if magic:
                if magic.group(2) == "!":
                    shell_lines[index + 1] = magic.group(3)
                lines[index] = magic.group(1) + "pass"
        source = "\n".join(lines)
    try:
        tree = compile(source, "<cell>", "exec", _AST_FLAGS, dont_inherit=True)
    except (SyntaxError, ValueError) as error:
        return CodeAnalysis(parsed=False, parse_error=f"{type(error).__name__}: {error}")
    except RecursionError:
        # CPython itself may run such code; we cannot read it, so say so rather than crash.
        return CodeAnalysis(parsed=False, parse_error="RecursionError: code nested too deeply")
    analyzer = _PythonAnalyzer(session, specs)
    try:
        _walk_cell(analyzer, tree, shell_lines, session, specs)
    except RecursionError:
        analyzer.result.unresolved_requests += 1  # partly read: leave the call to a classifier
    return analyzer.result


def _walk_cell(
    analyzer: _PythonAnalyzer,
    tree: Any,
    shell_lines: dict[int, str],
    session: SessionState,
    specs: Sequence[ClientSpec],
) -> None:
    if shell_lines:
        # Interleave shell magics with Python statements by line.
        for node in tree.body:
            if node.lineno in shell_lines:
                command = shell_lines.pop(node.lineno)
                analyzer.result.extend(_shell_at(command, session, specs, node.lineno))
            analyzer.stmt(node)
        for number, command in shell_lines.items():  # magics nested inside blocks
            analyzer.result.extend(_shell_at(command, session, specs, number))
    else:
        analyzer.block(tree.body)


def _shell_at(
    command: str, state: SessionState, specs: Sequence[ClientSpec], line: int
) -> CodeAnalysis:
    nested = analyze_shell(command, state, specs)
    nested.events = [_with_line(event, line) for event in nested.events]
    return nested


# ---------------------------------------------------------------------------------------------
# Shell analysis.

_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
_HOSTLIKE = re.compile(r"^[A-Za-z0-9.-]+\.[A-Za-z]{2,}(:\d+)?/")
_SEPARATORS = frozenset(";&|")
_WRAPPERS = frozenset({"sudo", "time", "nohup", "command", "exec", "env", "xargs"})
_KEYWORDS = frozenset({"then", "do", "else", "elif", "if", "while", "until", "!", "{", "}"})
_CLOSERS = frozenset({"fi", "done", "esac"})
_CURL_VALUE_OPTIONS = frozenset(
    {
        "-X", "--request", "-H", "--header", "-d", "--data", "--data-raw", "--data-binary",
        "--data-urlencode", "-o", "--output", "-u", "--user", "-A", "--user-agent", "-e",
        "--referer", "-w", "--write-out", "-m", "--max-time", "--connect-timeout", "--retry",
        "-F", "--form", "-b", "--cookie", "-c", "--cookie-jar", "-x", "--proxy", "--url", "-T",
        "--upload-file", "-r", "--range", "--retry-delay", "--retry-max-time", "-K", "--config",
        "--cacert", "--cert", "--key", "-E", "--limit-rate", "-z", "--resolve",
        "--max-filesize", "-Y", "-y", "--output-dir",
    }
)  # fmt: skip
_CURL_DATA_OPTIONS = frozenset({"-d", "--data", "--data-raw", "--data-binary", "--data-urlencode"})
_WGET_VALUE_OPTIONS = frozenset(
    {
        "-O", "--output-document", "-o", "--output-file", "-P", "--directory-prefix", "-U",
        "--user-agent", "--header", "-t", "--tries", "-T", "--timeout", "-e", "--execute",
        "--method", "--body-data", "--post-data", "-i", "--input-file", "-Q", "--quota", "-w",
        "--wait", "-a", "--append-output",
    }
)  # fmt: skip
_CLI_VALUE_OPTIONS = frozenset(
    {
        "--set", "--organization-id", "--owner-id", "--environment", "--api-key",
        "--file-to-upload", "--url",
    }
)  # fmt: skip
_PYTHON_EXECUTABLES = re.compile(r"^(python|python3|python3\.\d+|uv run python|ipython)$")


def _unquoted_newlines_to_semicolons(text: str) -> str:
    """Turn unquoted newlines into ``;`` and drop unquoted ``#`` comments."""
    out: list[str] = []
    quote: str | None = None
    escaped = False
    in_comment = False
    previous = "\n"
    for char in text:
        if in_comment:
            if char == "\n":
                in_comment = False
                out.append(" ; ")
            previous = char
            continue
        if quote is None and not escaped and char == "#" and previous in " \t\n;":
            in_comment = True
            continue
        previous = char
        if escaped:
            out.append(char)
            escaped = False
            continue
        if char == "\\" and quote != "'":
            escaped = True
            out.append(char)
            continue
        if quote is None and char in "'\"":
            quote = char
        elif quote is not None and char == quote:
            quote = None
        if char == "\n" and quote is None:
            out.append(" ; ")
        else:
            out.append(char)
    return "".join(out)


def _extract_heredocs(command: str) -> tuple[str, list[str]]:
    lines = command.split("\n")
    kept: list[str] = []
    bodies: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        found = _HEREDOC.search(line)
        if found is None:
            kept.append(line)
            index += 1
            continue
        delimiter = found.group(2)
        body: list[str] = []
        index += 1
        while index < len(lines) and lines[index].strip() != delimiter:
            body.append(lines[index])
            index += 1
        index += 1  # skip the delimiter line
        kept.append(line[: found.start()] + f" __HEREDOC_{len(bodies)}__ " + line[found.end() :])
        bodies.append("\n".join(body))
    return "\n".join(kept), bodies


_TOKEN = re.compile(
    r"""(?P<word>(?:[^\s'"\\;&|()<>]+|'[^']*'|"(?:[^"\\]|\\.)*"|\\.)+)|(?P<op>[;&|()<>]+)|(?P<bad>['"])"""
)
_WORD_PIECE = re.compile(r"""'([^']*)'|"((?:[^"\\]|\\.)*)"|\\(.)|([^'"\\]+)""")


def _unquote_word(word: str) -> str:
    if not any(char in word for char in "'\"\\"):
        return word
    parts: list[str] = []
    for single, double, escaped, plain in _WORD_PIECE.findall(word):
        if plain:
            parts.append(plain)
        elif escaped:
            parts.append(escaped)
        elif double:
            parts.append(re.sub(r'\\([\\"$`])', r"\1", double))
        else:
            parts.append(single)
    return "".join(parts)


def _tokens(command: str) -> list[str]:
    """Split a command line like a POSIX shell would (quotes, escapes, operators)."""
    text = _unquoted_newlines_to_semicolons(command.replace("\\\n", " "))
    tokens: list[str] = []
    for found in _TOKEN.finditer(text):
        if found.group("bad") is not None:
            # An unbalanced quote: fall back to shlex's error-tolerant whitespace split.
            return _shlex_tokens(text)
        word = found.group("word")
        tokens.append(_unquote_word(word) if word is not None else found.group("op"))
    return tokens


def _shlex_tokens(text: str) -> list[str]:
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""  # comments were removed before, quote-aware
    try:
        return list(lexer)
    except ValueError:
        return text.split()


@dataclass
class _Segment:
    words: list[str]
    stdout: str | None = None  # target of a `>` / `>>` redirection


def _segments(tokens: list[str]) -> list[_Segment]:
    segments: list[_Segment] = []
    current = _Segment([])
    redirect: str | None = None
    for token in tokens:
        if redirect is not None:
            if redirect in (">", ">>"):
                current.stdout = token
            redirect = None
            continue
        if token and all(char in _SEPARATORS for char in token):
            if current.words:
                segments.append(current)
            current = _Segment([])
            continue
        if token in ("(", ")"):
            continue
        if token and all(char in "<>&" for char in token):
            if token != "<<":
                redirect = token  # the next word is a redirection target, not an argument
            if current.words and current.words[-1].isdigit():
                current.words.pop()  # the fd number of `2>`
            continue
        current.words.append(token)
    if current.words:
        segments.append(current)
    return segments


def _expand(word: str, env: dict[str, str]) -> str:
    if "$" not in word:
        return word

    def value(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        return env.get(name, SENTINEL)

    return _VARIABLE.sub(value, word)


def _looks_like_url(word: str) -> bool:
    return _is_url(word) or bool(_HOSTLIKE.match(word)) or word.startswith(SENTINEL)


class _ShellAnalyzer:
    def __init__(
        self,
        state: SessionState,
        specs: Sequence[ClientSpec],
        heredocs: list[str],
        executables: frozenset[str],
    ) -> None:
        self.state = state
        self.env = state.shell_env
        self.specs = specs
        self.heredocs = heredocs
        self.executables = executables
        self.result = CodeAnalysis()

    def run(self, segments: list[_Segment]) -> None:
        index = 0
        while index < len(segments):
            words = segments[index].words
            if len(words) >= 3 and words[0] == "for" and words[2] == "in":
                end = self._loop_end(segments, index)
                body = segments[index + 1 : end]
                values = [_expand(word, self.env) for word in words[3:]][:MAX_LOOP_EXPANSION]
                for value in values or [SENTINEL]:
                    self.env[words[1]] = value
                    self.run(body)
                self.env.pop(words[1], None)
                index = end + 1
                continue
            self.segment(segments[index])
            index += 1

    @staticmethod
    def _loop_end(segments: list[_Segment], start: int) -> int:
        depth = 0
        for index in range(start + 1, len(segments)):
            head = segments[index].words[0] if segments[index].words else ""
            if head == "for":
                depth += 1
            if head == "done":
                if depth == 0:
                    return index
                depth -= 1
        return len(segments)

    def segment(self, segment: _Segment) -> None:
        words = segment.words
        while words:
            head = words[0]
            if head in _CLOSERS:
                return
            assignment = _ASSIGNMENT.match(head)
            if assignment is not None:
                self.env[assignment.group(1)] = _expand(assignment.group(2), self.env)
                words = words[1:]
            elif head == "timeout":
                words = words[2:]
            elif head in _KEYWORDS or head in _WRAPPERS or head == "export":
                words = words[1:]
            else:
                break
        if not words:
            return
        program = words[0].rsplit("/", 1)[-1]
        arguments = words[1:]
        if program in ("cat", "tee") and segment.stdout:
            for word in arguments:
                marker = re.fullmatch(r"__HEREDOC_(\d+)__", word)
                if marker is not None:
                    self.state.files[segment.stdout] = self.heredocs[int(marker.group(1))]
            return
        if program in self.executables:
            self.cli(program, arguments)
        elif program == "curl":
            self.curl(arguments)
        elif program == "wget":
            self.wget(arguments)
        elif program in ("http", "https", "xh"):
            self.httpie(program, arguments)
        elif _PYTHON_EXECUTABLES.match(program):
            self.python(arguments)

    def cli(self, program: str, arguments: list[str]) -> None:
        words: list[str] = []
        wants_help = False
        skip = False
        for word in arguments:
            if skip:
                skip = False
                continue
            if word in ("-h", "--help"):
                wants_help = True
            elif word in _CLI_VALUE_OPTIONS:
                skip = True
            elif word.startswith("-"):
                continue
            else:
                words.append(_expand(word, self.env))
        self.result.events.append(CliInvocation(program, tuple(words), wants_help))

    def _add_urls(
        self, urls: list[str], method: str, params: list[tuple[str, str]], via: str
    ) -> None:
        if not urls:
            self.result.unresolved_requests += 1
            return
        for url in urls:
            full = url if _is_url(url) or url.startswith(SENTINEL) else "https://" + url
            if full.startswith(SENTINEL):
                self.result.unresolved_requests += 1
                continue
            self.result.events.append(HttpRequest(method, full, tuple(params), via))

    def curl(self, arguments: list[str]) -> None:
        method: str | None = None
        get_mode = False
        data: list[str] = []
        urls: list[str] = []
        index = 0
        while index < len(arguments):
            word = _expand(arguments[index], self.env)
            if word in _CURL_VALUE_OPTIONS:
                following = arguments[index + 1] if index + 1 < len(arguments) else ""
                value = _expand(following, self.env)
                if word in ("-X", "--request"):
                    method = value.upper()
                elif word in _CURL_DATA_OPTIONS:
                    data.append(value)
                elif word == "--url":
                    urls.append(value)
                index += 2
                continue
            if word.startswith("-X") and len(word) > 2 and not word.startswith("--"):
                method = word[2:].upper()
            elif word in ("-G", "--get"):
                get_mode = True
            elif word in ("-I", "--head"):
                method = "HEAD"
            elif not word.startswith("-") and _looks_like_url(word):
                urls.append(word)
            index += 1
        params: list[tuple[str, str]] = []
        if get_mode:
            for item in data:
                for pair in item.split("&"):
                    key, _, value = pair.partition("=")
                    params.append((key, value))
        resolved = method or ("POST" if data and not get_mode else "GET")
        self._add_urls(urls, resolved, params, "curl")

    def wget(self, arguments: list[str]) -> None:
        method = "GET"
        urls: list[str] = []
        index = 0
        while index < len(arguments):
            word = _expand(arguments[index], self.env)
            if word in _WGET_VALUE_OPTIONS:
                value = arguments[index + 1] if index + 1 < len(arguments) else ""
                if word == "--method":
                    method = value.upper()
                elif word in ("--post-data", "--body-data"):
                    method = "POST"
                index += 2
                continue
            if not word.startswith("-") and _looks_like_url(word):
                urls.append(word)
            index += 1
        self._add_urls(urls, method, [], "wget")

    def httpie(self, program: str, arguments: list[str]) -> None:
        method = "GET"
        urls: list[str] = []
        params: list[tuple[str, str]] = []
        for raw in arguments:
            word = _expand(raw, self.env)
            if word.startswith("-"):
                continue
            if word.isupper() and word.isalpha() and not urls:
                method = word
            elif not urls and _looks_like_url(word):
                urls.append(word)
            elif "==" in word:
                key, _, value = word.partition("==")
                params.append((key, value))
        self._add_urls(urls, method, params, program)

    def python(self, arguments: list[str]) -> None:
        code: str | None = None
        for index, word in enumerate(arguments):
            if word == "-c" and index + 1 < len(arguments):
                code = arguments[index + 1]
                break
            marker = re.fullmatch(r"__HEREDOC_(\d+)__", word)
            if marker is not None:
                code = self.heredocs[int(marker.group(1))]
                break
            if word in self.state.files:
                code = self.state.files[word]
                break
        if code is not None:
            self.result.extend(analyze_python(code, self.state, self.specs))


def analyze_shell(
    command: str,
    state: SessionState | None = None,
    specs: Sequence[ClientSpec] = (),
    cli_executables: frozenset[str] = frozenset({"datagouv", "datagouv-cli"}),
) -> CodeAnalysis:
    """Extract catalog events from a shell command line (or a small script).

    Args:
        command: The command text; ``;``, ``&&``, ``||``, pipes, newlines, ``for ... do ... done``
            loops, ``VAR=value`` assignments and heredocs are understood.
        state: State carried across the calls of one trace (mutated).
        specs: The client calls that perform actions, for embedded Python.
        cli_executables: Names of the ``datagouv`` CLI executable.

    Returns:
        The events in order.
    """
    session = state if state is not None else SessionState()
    text, heredocs = _extract_heredocs(command)
    analyzer = _ShellAnalyzer(session, specs, heredocs, cli_executables)
    analyzer.run(_segments(_tokens(text)))
    return analyzer.result


def urls_in_text(text: str) -> list[str]:
    """Every http(s) URL in free text (used as a fallback when code does not parse)."""
    return _URL_IN_TEXT.findall(text)
