"""Where agent-written code and shell commands run: the contract and its two backends.

``LocalSandbox`` (bubblewrap namespaces, for machines without Docker) and ``DockerSandbox``
(hardened containers, for production runners) both implement ``SandboxBackend``; their
guarantees and limits are described in ``docs/sandbox.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from datagouv_eval_pipeline.base.faces import lazy_attributes

if TYPE_CHECKING:
    from datagouv_eval_pipeline.world.front import AllowList, ServedHosts, WireRequest
    from datagouv_eval_pipeline.world.sandbox.base import (
        ExecResult,
        SandboxBackend,
        SandboxLimits,
        SandboxSession,
        SandboxUnavailableError,
    )
    from datagouv_eval_pipeline.world.sandbox.docker_backend import DockerSandbox
    from datagouv_eval_pipeline.world.sandbox.library import (
        LIBRARY_DIR_ENV,
        library_root,
        sandbox_library,
    )
    from datagouv_eval_pipeline.world.sandbox.local import LocalSandbox

_MODULE_OF: dict[str, str] = {
    "AllowList": "datagouv_eval_pipeline.world.front",
    "DockerSandbox": ".docker_backend",
    "ExecResult": ".base",
    "LIBRARY_DIR_ENV": ".library",
    "LocalSandbox": ".local",
    "SandboxBackend": ".base",
    "SandboxLimits": ".base",
    "SandboxSession": ".base",
    "SandboxUnavailableError": ".base",
    "ServedHosts": "datagouv_eval_pipeline.world.front",
    "WireRequest": "datagouv_eval_pipeline.world.front",
    "library_root": ".library",
    "sandbox_library": ".library",
}
"""Each public name, and the module that defines it."""

if not TYPE_CHECKING:  # hidden from mypy, which then checks each name imported from the face
    __getattr__ = lazy_attributes(__name__, _MODULE_OF)


__all__ = [
    "LIBRARY_DIR_ENV",
    "AllowList",
    "DockerSandbox",
    "ExecResult",
    "LocalSandbox",
    "SandboxBackend",
    "SandboxLimits",
    "SandboxSession",
    "SandboxUnavailableError",
    "ServedHosts",
    "WireRequest",
    "library_root",
    "sandbox_library",
]
