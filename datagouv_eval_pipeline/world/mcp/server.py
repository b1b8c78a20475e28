"""One ``MCPServer`` per pinned release, served side by side at ``/mcp/v{version}/mcp``.

Each release is built from its :class:`~datagouv_eval_pipeline.world.mcp.versions.VersionSpec`:
tool functions get the release's exact signature (so the SDK generates the same input schemas
as the real server), its titles and annotations, and its ``serverInfo`` version. The transport
is the SDK's streamable HTTP app (stateless, SSE-framed replies), behind a small wrapper that
keeps the wire behaviour of the real server's SDK generation (mcp 1.x):

* a request carrying an MCP protocol version the release's SDK did not know (``server/discover``
  probes of 2026-era clients; ``2025-11-25`` at 0.2.5) gets the 400 an mcp 1.x server gives, so
  such clients fall back to the ``initialize`` handshake the real server speaks;
* ``GET /mcp`` without ``text/event-stream`` in ``Accept`` gets 406;
* the Host allow-list of the release (421 otherwise), or none for releases without one.

Stateless ``POST`` requests are then answered by :class:`~.stateless.StatelessPost`: the SDK's
own request kernel and wire format, without the per-request transport, streams and tasks of the
SDK's stateless path (a fraction of its CPU). Anything else goes to the SDK's session manager.

``GET /mcp/v{version}/health`` answers with the release's /health shape (reference §1.3).
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import UTC, datetime
from typing import Any, Final

from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import TextContent, ToolAnnotations
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount
from starlette.types import ASGIApp, Receive, Scope, Send

from datagouv_eval_pipeline.world.mcp import code_layout, tools
from datagouv_eval_pipeline.world.mcp.descriptions import describe
from datagouv_eval_pipeline.world.mcp.release_sdk import ReleaseSdkMiddleware
from datagouv_eval_pipeline.world.mcp.stateless import StatelessPost
from datagouv_eval_pipeline.world.mcp.upstream import Upstream
from datagouv_eval_pipeline.world.mcp.versions import (
    DEFAULT_VERSIONS,
    SERVER_NAME,
    Param,
    ToolSignature,
    VersionSpec,
    get_version,
)

# The real server logs each call on this logger (reference §1.1).
TOOL_LOGGER = logging.getLogger("mcp.tools")
MCP_PATH: Final = "/mcp"

READ_ONLY: Final = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=True
)


def mcp_path(version: str) -> str:
    """Return the path of a release's endpoint (``/mcp/v0.2.26/mcp``)."""
    return f"/mcp/v{version}{MCP_PATH}"


def mcp_url(site: str, version: str) -> str:
    """Return a release's endpoint URL on a twin whose root is ``site``."""
    return site.rstrip("/") + mcp_path(version)


def mcp_urls(site: str, versions: Sequence[str] = DEFAULT_VERSIONS) -> dict[str, str]:
    """Return ``{version: endpoint URL}`` for the served releases."""
    return {version: mcp_url(site, version) for version in versions}


def _annotation(param: Param) -> Any:
    if param.type == "integer":
        return int
    return str | None if param.nullable else str


def _tool_function(
    signature: ToolSignature, impl: tools.ToolImpl, env: tools.ToolEnv
) -> Callable[..., Awaitable[str]]:
    """Build an async function whose signature is the release's, calling ``impl``."""
    name = signature.name

    async def tool(**kwargs: Any) -> str:
        TOOL_LOGGER.info("Tool called: %s | kwargs=%s", name, kwargs)
        try:
            return await impl(env, kwargs)
        except ToolError:
            raise
        except Exception as error:
            # The real server (mcp 1.x) shows an escaping exception's text; the 2.x SDK hides an
            # unexpected one, so it is re-raised as a ToolError to keep the text.
            raise ToolError(str(error)) from error

    parameters = [
        inspect.Parameter(
            p.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=inspect.Parameter.empty if p.required else p.default,
            annotation=_annotation(p),
        )
        for p in signature.params
    ]
    tool.__signature__ = inspect.Signature(parameters, return_annotation=str)  # type: ignore[attr-defined]
    tool.__annotations__ = {p.name: _annotation(p) for p in signature.params} | {"return": str}
    # The SDK names the argument model "<function name>Arguments", as the real schemas do.
    tool.__name__ = tool.__qualname__ = name
    return tool


def build_server(spec: VersionSpec, upstream: Upstream) -> MCPServer[Any]:
    """Build the MCP server of one release over ``upstream``."""
    root = logging.getLogger()
    # MCPServer() calls logging.basicConfig; a placeholder handler keeps the host process's
    # root logger untouched when it has none.
    placeholder = logging.NullHandler()
    if not root.handlers:
        root.addHandler(placeholder)
    try:
        server: MCPServer[Any] = MCPServer(
            SERVER_NAME, version=spec.sdk_version, log_level="WARNING"
        )
    finally:
        root.removeHandler(placeholder)
    # The SDK opens an OpenTelemetry span per request (a no-op span unless a tracer provider is
    # installed). The twin exports no traces, and the span costs about 5 % of a call's CPU; it
    # never reaches the wire, so both the SDK's path and the fast path drop it.
    server.middleware[:] = [
        m for m in server.middleware if not isinstance(m, OpenTelemetryMiddleware)
    ]
    server.middleware.append(ReleaseSdkMiddleware(spec))
    env = tools.ToolEnv(spec, upstream)
    for signature in spec.tools:
        server.add_tool(
            _tool_function(signature, code_layout.IMPLEMENTATIONS[signature.name], env),
            name=signature.name,
            title=spec.titles.get(signature.name) if spec.titles else None,
            description=describe(signature, spec),
            annotations=READ_ONLY if spec.annotations else None,
        )
    return server


def _security(spec: VersionSpec) -> TransportSecuritySettings:
    if spec.allowed_hosts is None:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    origins = [
        f"http://{host}" if host.endswith(":*") else f"https://{host}"
        for host in spec.allowed_hosts
    ]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=list(spec.allowed_hosts),
        allowed_origins=origins,
    )


def _health_route(
    server: MCPServer[Any], spec: VersionSpec, started: datetime
) -> Callable[[Request], Awaitable[Response]]:
    async def health(request: Request) -> Response:
        if spec.health == "timestamp":
            return JSONResponse({"status": "ok", "timestamp": datetime.now(UTC).isoformat()})
        if spec.health == "timestamp_version":
            return JSONResponse(
                {
                    "status": "ok",
                    "timestamp": datetime.now(UTC).isoformat(),
                    "version": spec.version,
                }
            )
        # Deep probe: the real one opens an MCP client to itself; calling the tool through the
        # server object exercises the same tool stack without a second socket.
        try:
            probe = {"query": "transport", "page_size": 1}
            result = await server.call_tool("search_datasets", probe)
            content = getattr(result, "content", None) or []
            first = content[0] if content else None
            healthy = isinstance(first, TextContent) and bool(first.text)
        except ToolError:
            healthy = True  # an isError text block still passes the real probe
        except Exception:  # any other failure means the MCP stack is down
            healthy = False
        if not healthy:
            return JSONResponse({"status": "mcp_unavailable"}, status_code=503)
        return JSONResponse(
            {
                "status": "ok",
                "uptime_since": started.isoformat(),
                "version": spec.version,
                "env": "twin",
                "data_env": "twin",
            }
        )

    return health


def _error(status: int, message: str) -> Response:
    body = {"jsonrpc": "2.0", "id": "server-error", "error": {"code": -32600, "message": message}}
    return Response(json.dumps(body), status_code=status, media_type="application/json")


class _Endpoint:
    """ASGI app of one release under ``/mcp/v{version}``: ``/mcp`` and ``/health``.

    In front of the SDK's session manager it refuses protocol versions the release's SDK did not
    know and checks ``Accept`` on ``GET``, as an mcp 1.x server does.
    """

    def __init__(
        self, server: MCPServer[Any], spec: VersionSpec, started: datetime, fast_post: bool
    ) -> None:
        self._manager = server.session_manager
        self._health = _health_route(server, spec, started)
        self._protocol_versions = spec.protocol_versions
        post = StatelessPost(self._manager)
        self._post = post if fast_post and post.enabled else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        await self._dispatch(scope, receive, send, Headers(scope=scope))

    async def _dispatch(self, scope: Scope, receive: Receive, send: Send, headers: Headers) -> None:
        path: str = scope["path"]
        response: Response
        if path.endswith("/health"):
            if scope["method"] != "GET":
                response = PlainTextResponse("Method Not Allowed", status_code=405)
            else:
                response = await self._health(Request(scope, receive))
            await response(scope, receive, send)
            return
        if path.endswith(MCP_PATH + "/"):
            # Starlette's trailing-slash redirect, as on the real server.
            response = RedirectResponse(path.rstrip("/"), status_code=307)
            await response(scope, receive, send)
            return
        if not path.endswith(MCP_PATH):
            await PlainTextResponse("Not Found", status_code=404)(scope, receive, send)
            return
        version = headers.get("mcp-protocol-version")
        if version is not None and version not in self._protocol_versions:
            supported = ", ".join(self._protocol_versions)
            response = _error(
                400,
                f"Bad Request: Unsupported protocol version: {version}. "
                f"Supported versions: {supported}",
            )
            await response(scope, receive, send)
            return
        accept = headers.get("accept", "")
        if scope["method"] == "GET" and not any(
            part.strip().startswith("text/event-stream") for part in accept.split(",")
        ):
            response = _error(406, "Not Acceptable: Client must accept text/event-stream")
            await response(scope, receive, send)
            return
        if self._post is not None:
            await self._post(scope, receive, send, headers)
        else:
            await self._manager.handle_request(scope, receive, send)


def mount_mcp(
    rest_app: ASGIApp,
    versions: Sequence[str] | None = None,
    upstream: Upstream | None = None,
    *,
    hosts: frozenset[str] = frozenset(),
    fast_post: bool = True,
) -> Starlette:
    """Serve the MCP releases next to ``rest_app`` in one ASGI app.

    Args:
        rest_app: The twin's REST/Tabular/Metrics app; it answers every other path and, by
            default, the tools' upstream requests (in-process).
        versions: Releases to serve (default: every one in the version table).
        upstream: Where tools send requests; default :meth:`Upstream.twin` over ``rest_app``.
        hosts: The production host names ``rest_app`` answers for (the default upstream's).
            Pass :meth:`Upstream.live` to emulate the tool surface over the real APIs.
        fast_post: Serve stateless requests through :class:`StatelessPost` (same wire, a
            fraction of the CPU); False sends every request through the SDK's session
            manager (to compare the two).

    Returns:
        A Starlette app whose lifespan runs the MCP session managers (serve it with
        ``lifespan="on"``, or enter ``TestClient`` as a context manager).
    """
    specs = [get_version(v) for v in (versions if versions is not None else DEFAULT_VERSIONS)]
    upstream = upstream or Upstream.twin(rest_app, hosts)
    started = datetime.now(UTC)
    routes: list[Mount] = []
    servers: list[MCPServer[Any]] = []
    for spec in specs:
        server = build_server(spec, upstream)
        # Called for the session manager it configures (stateless, SSE, Host checks); requests
        # go straight to that manager, without the one-route Starlette app it also returns.
        server.streamable_http_app(
            streamable_http_path=MCP_PATH,
            stateless_http=spec.stateless,
            json_response=False,
            transport_security=_security(spec),
        )
        routes.append(
            Mount(f"/mcp/v{spec.version}", app=_Endpoint(server, spec, started, fast_post))
        )
        servers.append(server)
    routes.append(Mount("/", app=rest_app))

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            for server in servers:
                await stack.enter_async_context(server.session_manager.run())
            yield

    outer = Starlette(routes=routes, lifespan=lifespan)
    outer.state.mcp_versions = tuple(spec.version for spec in specs)
    return outer
