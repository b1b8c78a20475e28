"""Where agent-written code and shell commands run: the contract and its two backends.

``LocalSandbox`` (bubblewrap namespaces, for machines without Docker) and ``DockerSandbox``
(hardened containers, for production runners) both implement ``SandboxBackend``; their
guarantees and limits are described in ``docs/sandbox.md``.
"""

from datagouv_eval_pipeline.world.front import AllowList, ServedHosts, WireRequest
from datagouv_eval_pipeline.world.sandbox.base import (
    ExecResult,
    SandboxBackend,
    SandboxLimits,
    SandboxSession,
    SandboxUnavailableError,
)
from datagouv_eval_pipeline.world.sandbox.docker_backend import DockerSandbox
from datagouv_eval_pipeline.world.sandbox.local import LocalSandbox

__all__ = [
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
]
