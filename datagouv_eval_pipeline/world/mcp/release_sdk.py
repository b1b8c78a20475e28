"""What a release's own SDK generation answered where the twin's SDK answers otherwise.

The twin serves every release with mcp 2.x; each real release ran the mcp 1.x and the pydantic
of its lock file. Three things of theirs reach a client and differ from the twin's SDK, so a
server middleware per release puts them back (:class:`ReleaseSdkMiddleware`):

* **Protocol version.** An mcp 1.x server answers ``initialize`` with the client's version when
  it knows it, else with its newest one; mcp 1.22 (0.2.5) knows up to ``2025-06-18``, so a
  client asking for ``2025-11-25`` gets ``2025-06-18`` (``VersionSpec.protocol_versions``).
* **Capabilities.** mcp 1.x announces an empty ``experimental`` capability.
* **pydantic's docs link.** An argument that fails validation is answered with pydantic's
  message, which links the docs of the installed pydantic (``errors.pydantic.dev/2.12/v/…``);
  the link names the release's pydantic (``VersionSpec.pydantic_docs``).

The SDK commits the handshake from the request's own ``protocolVersion`` and offers no way to
change it, so only the answer is rewritten: a stateful session of 0.2.5 serialises its later
results at the version the client asked for. They are the same for the twin's tools, whose
results carry nothing a later protocol added (the conformance test compares them).
"""

from __future__ import annotations

import re
from typing import Any, Final

import pydantic
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext

from datagouv_eval_pipeline.world.mcp.versions import VersionSpec

# The docs link of the twin's own pydantic, as pydantic writes it (major.minor).
_TWIN_DOCS: Final = re.compile(
    re.escape(f"https://errors.pydantic.dev/{pydantic.VERSION.rsplit('.', 1)[0]}/")
)


def negotiated_version(spec: VersionSpec, requested: Any) -> str:
    """Return the protocol version the release's SDK answers a client asking for ``requested``."""
    return requested if requested in spec.protocol_versions else spec.protocol_versions[-1]


def release_docs_link(spec: VersionSpec, text: str) -> str:
    """Return ``text`` with pydantic's docs links naming the release's pydantic."""
    return _TWIN_DOCS.sub(f"https://errors.pydantic.dev/{spec.pydantic_docs}/", text)


class ReleaseSdkMiddleware(ServerMiddleware[Any]):
    """Answers ``initialize`` and argument errors as the release's mcp 1.x and pydantic did."""

    def __init__(self, spec: VersionSpec) -> None:
        self._spec = spec

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Run the request, then restate its answer as the release's SDK gave it."""
        result = await call_next(ctx)
        if not isinstance(result, dict):
            return result
        if ctx.method == "initialize":
            requested = (ctx.params or {}).get("protocolVersion")
            capabilities = result.get("capabilities") or {}
            return {
                **result,
                "protocolVersion": negotiated_version(self._spec, requested),
                "capabilities": {"experimental": {}, **capabilities},
            }
        if ctx.method == "tools/call" and result.get("isError"):
            return {
                **result,
                "content": [
                    {**block, "text": release_docs_link(self._spec, block["text"])}
                    if isinstance(block, dict) and isinstance(block.get("text"), str)
                    else block
                    for block in result.get("content") or []
                ],
            }
        return result
