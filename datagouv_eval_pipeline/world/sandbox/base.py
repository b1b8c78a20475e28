"""The sandbox contract: where agent-written code and shell commands run.

Backends (local process isolation, Docker) implement ``SandboxBackend``; the ``code`` and
``datagouv-cli`` capabilities only ever talk to a ``SandboxSession``. One session serves one task
run: files written by one call are visible to the next, and nothing outlives ``close()``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from datagouv_eval_pipeline.world.front import ServedHosts, WireRequest


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits applied to every call in a session.

    Attributes:
        cpu_seconds: CPU time per call.
        wall_seconds: Wall-clock time per call; the whole process group is killed past it.
        memory_mb: Address-space limit per process.
        max_processes: Processes and threads the sandboxed user may run at once.
        max_output_chars: stdout and stderr are each cut to this many characters.
        max_file_mb: Largest file a call may write.
        kill_output_chars: stdout or stderr longer than this ends the call (``output``); below
            it, output past ``max_output_chars`` is only cut, and the call goes on.
        tmp_mb: Size of the private ``/tmp`` where the backend provides one: room for the
            largest file an agent is expected to fetch (the twin's catalogue export, 79 MB, with
            the real catalogue's 120,903 rows).
        disk_mb: Most the session's working directory may hold: a call that goes past it is
            ended (``disk``) and the files it wrote are removed (local backend).
        max_files: Most files and directories (inodes) the working directory and ``/tmp`` may
            each hold: past it the working directory's call is ended (``disk``), and ``/tmp``
            refuses new files (``No space left on device``) where the backend can cap it.
    """

    cpu_seconds: float = 20.0
    wall_seconds: float = 30.0
    memory_mb: int = 1024
    max_processes: int = 64
    max_output_chars: int = 20_000
    max_file_mb: int = 200
    kill_output_chars: int = 5_000_000
    tmp_mb: int = 256
    disk_mb: int = 256
    max_files: int = 20_000


@dataclass(frozen=True)
class ExecResult:
    """What one sandboxed call produced.

    Attributes:
        stdout: Standard output, cut to ``max_output_chars`` when longer (its head and tail
            kept, joined by a marker that gives the full length).
        stderr: Standard error, cut the same way.
        exit_code: The process exit status; None when it was killed before exiting.
        duration_ms: Wall time of the call.
        timed_out: The wall-clock limit was hit.
        limit_hit: Which limit ended the call (``wall``, ``cpu``, ``memory``, ``processes``,
            ``output``, ``file``, ``disk``), or None.
        stdout_chars: Full length of stdout before truncation.
        stderr_chars: Full length of stderr before truncation.
        reason: Why the call failed when the exit status alone does not say it (a limit, a
            signal, a command that does not exist, a sandbox failure), in plain words.
    """

    stdout: str
    stderr: str
    exit_code: int | None
    duration_ms: float
    timed_out: bool = False
    limit_hit: str | None = None
    stdout_chars: int = 0
    stderr_chars: int = 0
    reason: str | None = None

    @property
    def truncated(self) -> bool:
        """Stdout or stderr was cut to the output limit."""
        return self.stdout_chars > len(self.stdout) or self.stderr_chars > len(self.stderr)

    @property
    def ok(self) -> bool:
        """The call exited normally with status 0."""
        return self.exit_code == 0 and not self.timed_out and self.limit_hit is None


class SandboxUnavailableError(RuntimeError):
    """The backend cannot run here (no bubblewrap, no Docker engine, ...); the message says why."""


class SandboxSession(Protocol):
    """An open sandbox for one task run.

    Attributes:
        workdir: The working directory as the sandboxed code sees it.
    """

    workdir: str

    async def run_python(self, code: str) -> ExecResult:
        """Run a Python program (the agent's code) in the session's working directory."""
        ...

    async def run_command(self, argv: Sequence[str]) -> ExecResult:
        """Run one command (no shell) in the session's working directory."""
        ...

    def take_wire_requests(self) -> list[WireRequest]:
        """The HTTP requests the code sent through the session's proxy since the last call."""
        ...

    async def close(self) -> None:
        """Kill anything still running and delete the working directory."""
        ...


class SandboxBackend(Protocol):
    """Opens sandbox sessions; one implementation per isolation technology."""

    name: str

    async def open_session(
        self,
        *,
        allowed_hosts: Sequence[str],
        env: Mapping[str, str] | None = None,
        limits: SandboxLimits | None = None,
        served: ServedHosts | None = None,
    ) -> SandboxSession:
        """Open a session.

        Args:
            allowed_hosts: ``host:port`` (or ``host`` for 80/443) pairs the code may reach;
                everything else is refused.
            env: Extra environment variables (never secrets), e.g. base URLs. Names the
                sandbox sets itself (``PATH``, ``HOME``, the proxy variables, ...) and names
                that look like secrets are refused with ``ValueError``.
            limits: Resource limits; the defaults when None.
            served: Host names the session's proxy answers for itself (the twin's
                production hosts, with TLS from its CA; the code trusts that CA through
                ``SSL_CERT_FILE`` & co.); None answers for none.
        """
        ...
