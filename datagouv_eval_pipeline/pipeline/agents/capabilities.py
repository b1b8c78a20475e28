"""Capability → toolset builders: what an agent is given besides the model.

Each capability of a cell becomes toolsets and/or instructions for one task run:

* ``mcp``: the MCP server of the cell's version over streamable HTTP (``MCPToolset``);
* ``code``: ``execute_python`` runs agent code in a sandbox session, ``httpx`` available,
  network limited to the catalog hosts;
* ``datagouv-cli``: ``execute_cli`` runs one ``datagouv …`` command (no shell) in the sandbox;
* ``python-sdk``: ``execute_python`` with the ``datagouv-client`` library aimed at the catalog;
* ``skills``: no tool; the skills document is injected into the instructions (pluggable);
* ``web_search``: ``web_search`` and ``http_fetch`` (offline: the twin's catalog index);
* none: no tools at all (``data_contamination``).

Tool names are the literal names ``semantic/actions.yml`` lists under ``capability_tools``.
Every toolset is wrapped in
:class:`~datagouv_eval_pipeline.pipeline.agents.recording.RecordingToolset`,
so a failing tool is a tool error the model sees, never the end of the run. The sandbox session
is opened when the run starts and closed when it ends; the MCP connections and their tool lists
are shared by every run of a cell (:class:`McpConnections`).
"""

from __future__ import annotations

import contextlib
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.toolsets import AbstractToolset, FunctionToolset

from datagouv_eval_pipeline.core.benchmark import Cell
from datagouv_eval_pipeline.pipeline.agents.recording import (
    DEFAULT_MODEL_RESULT_CHARS,
    RecordingToolset,
    RunRecorder,
    WireTextMCPToolset,
)
from datagouv_eval_pipeline.pipeline.agents.skills import SkillsInjection, skills_strategy
from datagouv_eval_pipeline.pipeline.agents.web import (
    CapabilityUnavailableError,
    DdgsSearch,
    HttpFetchTool,
    SearchBackend,
    TwinCatalogSearch,
    format_hits,
)
from datagouv_eval_pipeline.world.catalogue import TwinUrls
from datagouv_eval_pipeline.world.front import ServedHosts
from datagouv_eval_pipeline.world.sandbox import (
    ExecResult,
    SandboxBackend,
    SandboxLimits,
    SandboxSession,
)

MCP = "mcp"
CODE = "code"
DATAGOUV_CLI = "datagouv-cli"
PYTHON_SDK = "python-sdk"
SKILLS = "skills"
WEB_SEARCH = "web_search"
KNOWN_CAPABILITIES = frozenset({MCP, CODE, DATAGOUV_CLI, PYTHON_SDK, SKILLS, WEB_SEARCH})
SANDBOX_CAPABILITIES = frozenset({CODE, DATAGOUV_CLI, PYTHON_SDK})

EXECUTE_PYTHON = "execute_python"
EXECUTE_CLI = "execute_cli"
WEB_SEARCH_TOOL = "web_search"
HTTP_FETCH_TOOL = "http_fetch"

CLI_MODULE = "datagouv_eval_pipeline.world.datagouv_cli"
LIVE_CATALOG_HOSTS = (
    "www.data.gouv.fr",
    "data.gouv.fr",
    "tabular-api.data.gouv.fr",
    "metric-api.data.gouv.fr",
    "static.data.gouv.fr",
    "object.files.data.gouv.fr",
)
"""Hosts sandboxed code may reach in live mode (HTTPS)."""

_SHELL_OPERATORS = frozenset({"|", "||", "&", "&&", ";", ">", ">>", "<", "<<", "2>", "2>&1", "`"})


class UnsupportedCapabilityError(ValueError):
    """A capability name no builder knows."""


@dataclass(frozen=True)
class CatalogTarget:
    """Where the tools point: the local twin (offline) or the live data.gouv.fr.

    Agents always see the production URLs. Offline, the twin answers for them behind the
    hostname front (``datagouv_eval_pipeline.world.front``): the sandbox's proxy is that front, and
    the fetch tool goes through one.

    Attributes:
        urls: The production base URLs of the catalog services (what agents and traces see).
        offline: True for the twin: catalog URLs are served locally and nothing else is reached.
        twin_urls: The twin's own loopback URLs (its MCP endpoints); None when live.
        served: The host names the front answers for and the twin behind it; None when live.
        proxy_url: A running front over TCP for in-process clients (the fetch tool), if any.
    """

    urls: TwinUrls
    offline: bool
    twin_urls: TwinUrls | None = None
    served: ServedHosts | None = None
    proxy_url: str | None = None

    @classmethod
    def twin(cls, urls: TwinUrls, served: ServedHosts | None = None) -> CatalogTarget:
        """The twin at ``urls`` (its loopback URLs); ``served`` is asked from it if omitted."""
        from datagouv_eval_pipeline.world.api import served_by

        return cls(
            urls=TwinUrls.live(),
            offline=True,
            twin_urls=urls,
            served=served if served is not None else served_by(urls),
        )

    @classmethod
    def live(cls) -> CatalogTarget:
        """The production platform."""
        return cls(urls=TwinUrls.live(), offline=False)

    @property
    def port(self) -> int | None:
        """The twin's port (None when live)."""
        return urlsplit(self.twin_urls.site).port if self.twin_urls is not None else None

    def mcp_url(self, cell: Cell) -> str:
        """The MCP endpoint of the cell's version."""
        url = cell.mcp_url_for(self.port)
        if url is None:
            raise ValueError(f"cell {cell.key}: no MCP URL (the cell has no mcp capability)")
        return url

    def sandbox_hosts(self) -> list[str]:
        """``host:port`` entries sandboxed code may reach on the real network.

        None offline: the catalog hosts are answered by the front itself.
        """
        if self.offline:
            return []
        return [f"{host}:443" for host in LIVE_CATALOG_HOSTS]

    def sandbox_env(self) -> dict[str, str]:
        """Environment variables (production base URLs, never secrets) for sandboxed code."""
        env = {
            "DATAGOUV_SITE_URL": self.urls.site,
            "DATAGOUV_API_URL": self.urls.datagouv_api,
            "DATAGOUV_TABULAR_API_URL": self.urls.tabular_api,
            "DATAGOUV_METRICS_API_URL": self.urls.metrics_api,
        }
        if self.offline:
            # The twin answers at once; the library's 4-10 s retry waits would only slow 404s.
            env["DATAGOUV_CLI_RETRY_WAIT"] = "0"
        return env


def default_sandbox() -> SandboxBackend:
    """The local sandbox backend with the emulated ``datagouv`` command on its PATH."""
    from datagouv_eval_pipeline.world.sandbox import LocalSandbox, sandbox_library

    # Only the emulated CLI: the rest of the package (the twin, its snapshot generator, the
    # task loaders) would show agent code the expected answers.
    package = sandbox_library([CLI_MODULE])
    return LocalSandbox(python_packages=[package], commands={"datagouv": CLI_MODULE})


class McpConnections:
    """The MCP toolsets of a cell run: one connection per endpoint, shared by every task run.

    Use as an async context manager around the cell. :meth:`tool_list` fetches the server's
    tool list once per endpoint and keeps it (it is written next to the traces).
    """

    def __init__(self, *, read_timeout: float = 120.0) -> None:
        """Prepare an empty pool.

        Args:
            read_timeout: Seconds to wait for an MCP answer.
        """
        self._read_timeout = read_timeout
        self._toolsets: dict[str, WireTextMCPToolset] = {}
        self._entered: list[WireTextMCPToolset] = []
        self.tool_lists: dict[str, list[dict[str, Any]]] = {}
        """Tool list by MCP version (name, description, input schema), once fetched."""

    async def toolset(self, url: str) -> WireTextMCPToolset:
        """The connected toolset of ``url`` (connected on first use)."""
        toolset = self._toolsets.get(url)
        if toolset is None:
            # 'failed': a server-side tool error is shown to the model without eating its
            # retry budget (a 'retry' error would end the run once the budget is spent).
            toolset = WireTextMCPToolset(
                url, tool_error_behavior="failed", read_timeout=self._read_timeout
            )
            await toolset.__aenter__()
            self._entered.append(toolset)
            self._toolsets[url] = toolset
        return toolset

    async def tool_list(self, version: str, url: str) -> list[dict[str, Any]]:
        """The tools the server of ``version`` lists (fetched once)."""
        if version not in self.tool_lists:
            toolset = await self.toolset(url)
            tools = await toolset.list_tools()
            self.tool_lists[version] = [
                {
                    "name": tool.name,
                    "description": tool.description,
                    "input_schema": tool.input_schema,
                }
                for tool in tools
            ]
        return self.tool_lists[version]

    async def __aenter__(self) -> McpConnections:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for toolset in reversed(self._entered):
            # Closing must not mask the run's outcome.
            with contextlib.suppress(Exception):
                await toolset.__aexit__(exc_type, exc, tb)
        self._entered.clear()
        self._toolsets.clear()


@dataclass
class ToolEnvironment:
    """What the capability builders need, shared by every task run of a cell.

    Attributes:
        target: The catalog the tools point at.
        mcp: The cell's MCP connections.
        sandbox: The sandbox backend for code and CLI tools (None: those capabilities skip).
        sandbox_limits: Limits of every sandboxed call.
        search: The web search backend (None: chosen from ``target``).
        skills: How the skills document is injected.
        model_result_chars: Longest tool result the model is shown.
        mcp_url: The endpoint of the cell's MCP server when the cell does not say it (a real
            build, started for the run); None: the cell's URL.
    """

    target: CatalogTarget
    mcp: McpConnections = field(default_factory=McpConnections)
    sandbox: SandboxBackend | None = None
    sandbox_limits: SandboxLimits = field(default_factory=SandboxLimits)
    search: SearchBackend | None = None
    skills: SkillsInjection = field(default_factory=skills_strategy)
    model_result_chars: int = DEFAULT_MODEL_RESULT_CHARS
    mcp_url: str | None = None

    def mcp_endpoint(self, cell: Cell) -> str:
        """The MCP endpoint of the cell: the started build's, or the cell's own."""
        if self.mcp_url is not None:
            return self.mcp_url
        if cell.mcp_build is not None:
            raise ValueError(f"cell {cell.key}: its MCP server is a build that was not started")
        return self.target.mcp_url(cell)

    def search_backend(self) -> SearchBackend:
        """The search backend: the twin's catalog index offline, ``ddgs`` live.

        Raises:
            CapabilityUnavailableError: Live mode without the ``ddgs`` package.
        """
        if self.search is not None:
            return self.search
        if self.target.offline:
            assert self.target.twin_urls is not None  # offline targets know the twin
            return TwinCatalogSearch(self.target.twin_urls)
        return DdgsSearch()


def check_capabilities(cell: Cell, env: ToolEnvironment) -> str | None:
    """Why the cell's capabilities cannot run here, or None when they can.

    Checked once per cell, before any task run: unknown names, web search without a backend,
    sandboxed tools without a sandbox.
    """
    unknown = sorted(set(cell.capabilities) - KNOWN_CAPABILITIES)
    if unknown:
        return f"unknown capabilities {unknown}; known: {sorted(KNOWN_CAPABILITIES)}"
    if WEB_SEARCH in cell.capabilities:
        try:
            env.search_backend()
        except CapabilityUnavailableError as error:
            return str(error)
    if SANDBOX_CAPABILITIES & set(cell.capabilities) and env.sandbox is None:
        return "the code/datagouv-cli capabilities need a sandbox backend and none is configured"
    return None


@dataclass
class TaskTools:
    """The toolsets and instructions of one task run, and what to close after it.

    Attributes:
        toolsets: Toolsets for the agent (each wrapped in a ``RecordingToolset``).
        instructions: The instructions (system prompt, skills).
        session: The sandbox session, if any.
    """

    toolsets: list[AbstractToolset[Any]]
    instructions: str
    session: SandboxSession | None = None

    @property
    def tool_names(self) -> list[str]:
        """Names of the function tools this run defines (MCP tools not included)."""
        names: list[str] = []
        for toolset in self.toolsets:
            inner = getattr(toolset, "wrapped", toolset)
            if isinstance(inner, FunctionToolset):
                names.extend(inner.tools)
        return names

    async def aclose(self) -> None:
        """Close the sandbox session."""
        if self.session is not None:
            session, self.session = self.session, None
            await session.close()


async def build_task_tools(cell: Cell, env: ToolEnvironment, recorder: RunRecorder) -> TaskTools:
    """Build the toolsets and instructions of one task run of ``cell``.

    Raises:
        UnsupportedCapabilityError: A capability no builder knows.
        CapabilityUnavailableError: A capability that cannot run here.
        SandboxUnavailableError: The sandbox backend cannot run here.
    """
    problem = check_capabilities(cell, env)
    if problem is not None:
        raise UnsupportedCapabilityError(problem)
    instructions = instructions_for(cell, env)
    capabilities = set(cell.capabilities)
    toolsets: list[AbstractToolset[Any]] = []
    session: SandboxSession | None = None

    def wrap(
        toolset: AbstractToolset[Any], session: SandboxSession | None = None
    ) -> RecordingToolset:
        return RecordingToolset(
            toolset,
            recorder=recorder,
            model_result_chars=env.model_result_chars,
            # What the call's program sent, from the session's proxy (the front).
            wire=session.take_wire_requests if session is not None else None,
        )

    if MCP in capabilities:
        toolsets.append(wrap(await env.mcp.toolset(env.mcp_endpoint(cell))))
    if capabilities & SANDBOX_CAPABILITIES:
        assert env.sandbox is not None  # checked above
        session = await env.sandbox.open_session(
            allowed_hosts=env.target.sandbox_hosts(),
            env=env.target.sandbox_env(),
            limits=env.sandbox_limits,
            served=env.target.served,
        )
        sandbox_tools: FunctionToolset[Any] = FunctionToolset()
        if capabilities & {CODE, PYTHON_SDK}:
            runner = PythonTool(session, env.target, sdk=PYTHON_SDK in capabilities)
            sandbox_tools.add_function(
                runner.execute_python, name=EXECUTE_PYTHON, description=runner.description()
            )
        if DATAGOUV_CLI in capabilities:
            cli = CliTool(session)
            sandbox_tools.add_function(
                cli.execute_cli, name=EXECUTE_CLI, description=cli.description()
            )
        toolsets.append(wrap(sandbox_tools, session))
    if WEB_SEARCH in capabilities:
        web = WebTools(env.search_backend(), env.target)
        web_tools: FunctionToolset[Any] = FunctionToolset()
        web_tools.add_function(web.web_search, name=WEB_SEARCH_TOOL, description=web.search_help)
        web_tools.add_function(web.http_fetch, name=HTTP_FETCH_TOOL, description=web.fetch_help)
        toolsets.append(wrap(web_tools))
    return TaskTools(toolsets=toolsets, instructions=instructions, session=session)


def instructions_for(cell: Cell, env: ToolEnvironment) -> str:
    """The agent's instructions: the system prompt, with the skills document when it is on.

    Raises:
        UnsupportedCapabilityError: ``skills`` is on but the document is empty.
    """
    instructions = cell.system_prompt_text
    if SKILLS in cell.capabilities:
        if not cell.skills_text:
            raise UnsupportedCapabilityError(
                f"cell {cell.key}: the skills capability is on but the skills document is empty"
            )
        instructions = env.skills.inject(instructions, cell.skills_text)
    return instructions


# ---------------------------------------------------------------------------------- sandbox

# Runs the agent's code as a script named <agent>: a trailing expression is printed (as in a
# notebook) and tracebacks show the agent's own lines. Standard library only. Nothing is
# patched: the datagouv library and every HTTP client use the production URLs, which the
# sandbox's proxy (the hostname front, offline) answers for.
_RUNNER = r"""
import ast as _ast, linecache as _lc, os as _os, sys as _sys, traceback as _tb
_src = {source!r}
_lc.cache["<agent>"] = (len(_src), None, _src.splitlines(True), "<agent>")
try:
    _tree = _ast.parse(_src, "<agent>")
except SyntaxError as _e:
    _sys.stderr.write("".join(_tb.format_exception_only(type(_e), _e)))
    _sys.exit(1)
if _tree.body and isinstance(_tree.body[-1], _ast.Expr):
    _last = _tree.body[-1].value
    _is_print = isinstance(_last, _ast.Call) and getattr(_last.func, "id", "") == "print"
    if not _is_print:
        _show = _ast.parse(
            "if __value__ is not None: print(__value__ if isinstance(__value__, str) "
            "else repr(__value__))"
        ).body
        _assign = _ast.Assign(targets=[_ast.Name("__value__", _ast.Store())], value=_last)
        _tree.body[-1:] = [_ast.copy_location(_assign, _tree.body[-1]), *_show]
        _ast.fix_missing_locations(_tree)
_globals = {{"__name__": "__main__"}}
try:
    exec(compile(_tree, "<agent>", "exec"), _globals)
except SystemExit:
    raise
except BaseException as _e:
    _sys.stderr.write("".join(_tb.format_exception(type(_e), _e, _e.__traceback__.tb_next)))
    _sys.exit(1)
"""


def runner_program(code: str) -> str:
    """The program the sandbox runs for one ``execute_python`` call of ``code``."""
    return _RUNNER.format(source=code)


def format_exec(result: ExecResult) -> tuple[str, bool]:
    """The text the model sees for a sandboxed call, and whether the call failed."""
    parts: list[str] = []
    if result.stdout:
        parts.append(result.stdout.rstrip("\n"))
    if result.stderr:
        parts.append("[stderr]\n" + result.stderr.rstrip("\n"))
    if result.truncated:
        parts.append(
            f"[output truncated: stdout had {result.stdout_chars} characters, "
            f"stderr {result.stderr_chars}]"
        )
    failed = not result.ok
    if failed:
        if result.timed_out or result.limit_hit:
            reason = result.reason or f"the {result.limit_hit or 'wall'} limit was reached"
        else:
            reason = result.reason or f"exit code {result.exit_code}"
        parts.append(f"[error] {reason}")
    return "\n".join(parts) or "(no output)", failed


@dataclass
class PythonTool:
    """``execute_python``: run agent-written Python in the task's sandbox session."""

    session: SandboxSession
    target: CatalogTarget
    sdk: bool = False

    def description(self) -> str:
        """The tool description the model reads (with the catalog's base URLs)."""
        urls = self.target.urls
        lines = [
            "Run a Python 3 program and return what it prints (stdout, then stderr).",
            "Files written in the working directory persist between calls of this task; "
            "the value of a final bare expression is printed.",
            "`httpx`, `requests` and `pandas` are installed. Network access is limited to the "
            "data.gouv.fr APIs at these base URLs:",
            f"- main API (datasets, resources, dataservices, organizations): {urls.datagouv_api} "
            f"(e.g. {urls.datagouv_api}1/datasets/?q=...)",
            f"- Tabular API (query tabular files): {urls.tabular_api} "
            f"(e.g. {urls.tabular_api}resources/<resource_id>/data/?page_size=20)",
            f"- Metrics API (visits and downloads): {urls.metrics_api}",
            f"- site pages and file downloads: {urls.site}",
            "The same URLs are in the environment variables DATAGOUV_API_URL, "
            "DATAGOUV_TABULAR_API_URL, DATAGOUV_METRICS_API_URL and DATAGOUV_SITE_URL.",
        ]
        if self.sdk:
            lines.append(
                "The `datagouv` client library (package datagouv-client) is installed: "
                "`from datagouv import Client, Dataset, Resource`; `Dataset(id)`, "
                "`Resource(id).rows(filters=...)`."
            )
        return "\n".join(lines)

    async def execute_python(self, code: str) -> str:
        """Run ``code``; a failing program is a tool error with its output."""
        result = await self.session.run_python(runner_program(code))
        text, failed = format_exec(result)
        if failed:
            raise ToolFailed(text)
        return text


@dataclass
class CliTool:
    """``execute_cli``: one ``datagouv`` command, split with shlex and run without a shell."""

    session: SandboxSession
    executables: Sequence[str] = ("datagouv",)

    def description(self) -> str:
        """The tool description the model reads."""
        return "\n".join(
            [
                "Run one `datagouv` command (the data.gouv.fr command line) and return its "
                "output. No shell: pipes, redirections and chaining are not available.",
                "Commands: `datagouv dataset display|get ID`, `datagouv resource display|get "
                "ID`, `datagouv resource download ID PATH`, `datagouv organization display|get "
                "ID`, `datagouv topic display|get ID`; `datagouv --help` and "
                "`datagouv <group> --help` list the rest.",
                "`display` prints one attribute per line; `get` prints the API's JSON.",
            ]
        )

    async def execute_cli(self, command: str) -> str:
        """Run ``command``; anything but a ``datagouv`` command is refused as a tool error."""
        argv = parse_cli_command(command, self.executables)
        result = await self.session.run_command(argv)
        text, failed = format_exec(result)
        if failed:
            raise ToolFailed(text)
        return text


def parse_cli_command(command: str, executables: Sequence[str] = ("datagouv",)) -> list[str]:
    """Split a command line with shlex and check it is a plain ``datagouv`` invocation.

    Raises:
        ToolFailed: For an unparsable line, another program, or shell syntax.
    """
    try:
        argv = shlex.split(command)
    except ValueError as error:
        raise ToolFailed(f"Error: cannot parse the command: {error}") from None
    if not argv:
        raise ToolFailed("Error: empty command; try `datagouv --help`")
    if argv[0] not in executables:
        raise ToolFailed(
            f"Error: only the {' / '.join(executables)} command is available here, "
            f"not {argv[0]!r}; try `datagouv --help`"
        )
    operators = [word for word in argv[1:] if word in _SHELL_OPERATORS or word.startswith("$(")]
    if operators:
        raise ToolFailed(
            f"Error: there is no shell here ({operators[0]!r} is not supported): run one "
            "datagouv command per call"
        )
    return argv


# ---------------------------------------------------------------------------------- web


@dataclass
class WebTools:
    """``web_search`` and ``http_fetch``."""

    backend: SearchBackend
    target: CatalogTarget
    max_results: int = 8
    search_help: str = (
        "Search the web. Returns titles, URLs and snippets of the best matching pages."
    )
    fetch_help: str = (
        "Fetch a web page or file by its http(s) URL and return its text (HTML is converted to "
        "text; links are shown as <url>)."
    )

    def fetcher(self) -> HttpFetchTool:
        """The fetcher for the target (offline: through the front, which serves the catalog)."""
        served = self.target.served
        if self.target.offline:
            if served is None or self.target.proxy_url is None:
                raise CapabilityUnavailableError(
                    "offline http_fetch needs the hostname front before the twin (no proxy_url)"
                )
            return HttpFetchTool(
                proxy=self.target.proxy_url,
                ca_bundle=str(served.authority.bundle_path),
                offline=True,
            )
        return HttpFetchTool()

    async def web_search(self, query: str) -> str:
        """Search for ``query``."""
        hits = await self.backend.search(query, self.max_results)
        return format_hits(query, hits)

    async def http_fetch(self, url: str) -> str:
        """Fetch ``url``; refused URLs and HTTP errors are tool errors."""
        return await self.fetcher().fetch(url)
