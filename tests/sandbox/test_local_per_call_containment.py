"""The per-call mode (``warm=False``: a ``bwrap`` per call) is contained like the warm mode.

Probes of issue 28 run in this mode: a ptrace of the call's PID 1, a nested user namespace,
200,000 empty files in ``/tmp``. The call's init is the launcher (non-dumpable), in a PID
namespace of its own; its ``/tmp`` is a tmpfs of ``max_files`` inodes.
"""

from __future__ import annotations

import pytest

from datagouv_eval_pipeline.world.sandbox.base import ExecResult, SandboxLimits
from datagouv_eval_pipeline.world.sandbox.local import LocalSandbox, LocalSession, probe_bwrap

from .conftest import in_session

pytestmark = pytest.mark.skipif(
    probe_bwrap() is not None, reason=f"bubblewrap cannot run here: {probe_bwrap()}"
)

PTRACE_PID_1 = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
print("pid", os.getpid(), "parent", os.getppid())
for request in (16, 0x4206):  # PTRACE_ATTACH, PTRACE_SEIZE
    attached = libc.ptrace(request, 1, 0, 0) == 0
    print("attached" if attached else os.strerror(ctypes.get_errno()))
"""

MANY_FILES_IN_TMP = """
import os
os.makedirs("/tmp/many")
made = 0
try:
    for made in range(200_000):
        open(f"/tmp/many/f{made}", "w").close()
except OSError as error:
    print("stopped at", made, os.strerror(error.errno))
else:
    print("made 200000 files")
"""


def per_call() -> LocalSandbox:
    return LocalSandbox(mode="bwrap", warm=False)


def test_pid_1_is_the_launcher_and_cannot_be_ptraced() -> None:
    limits = SandboxLimits(wall_seconds=60)
    result = in_session(per_call(), lambda s: s.run_python(PTRACE_PID_1), limits=limits)
    # Refused at once: the call ends with its program, not at the wall-clock limit.
    assert result.ok, result.reason
    assert not result.timed_out and result.limit_hit is None
    lines = result.stdout.splitlines()
    assert lines[0] == "pid 2 parent 1"  # the program's parent is PID 1: the launcher
    assert lines[1:] == ["Operation not permitted", "Operation not permitted"]


def test_no_user_namespace_can_be_nested() -> None:
    async def body(session: LocalSession) -> tuple[ExecResult, ExecResult]:
        shell = await session.run_command(["unshare", "-Ur", "id"])
        direct = await session.run_python(
            "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            "failed = libc.unshare(0x10000000) != 0  # CLONE_NEWUSER\n"
            "print(os.strerror(ctypes.get_errno()) if failed else 'nested')\n"
        )
        return shell, direct

    shell, direct = in_session(per_call(), body)
    assert not shell.ok and shell.exit_code == 1
    assert "uid=0" not in shell.stdout
    assert "unshare failed" in shell.stderr
    assert direct.ok and direct.stdout.strip() == "No space left on device"


def test_200000_empty_files_in_tmp_are_refused_at_the_cap() -> None:
    limits = SandboxLimits(max_files=2_000, wall_seconds=120)

    async def body(session: LocalSession) -> tuple[ExecResult, ExecResult]:
        many = await session.run_python(MANY_FILES_IN_TMP)
        fresh = await session.run_python("import os\nprint(os.listdir('/tmp'))")
        return many, fresh

    many, fresh = in_session(per_call(), body, limits=limits)
    assert many.ok, many.reason
    # The tmpfs has 2,000 inodes; /tmp itself and /tmp/many take two of them.
    assert many.stdout.strip() == "stopped at 1998 No space left on device"
    assert fresh.ok and fresh.stdout.strip() == "[]"  # every call has a new /tmp


def test_the_program_still_sees_its_own_processes_and_the_network_relay() -> None:
    # The new PID namespace shows the program's processes (the launcher reads /proc to end
    # them), and the relay still reaches the proxy.
    program = (
        "import os, subprocess\n"
        "child = subprocess.Popen(['sleep', '30'])\n"
        "print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()) == [1, 2, child.pid])\n"
        "print(os.environ['HTTP_PROXY'].startswith('http://127.0.0.1:'))\n"
    )
    result = in_session(per_call(), lambda s: s.run_python(program))
    assert result.ok, result.reason
    assert result.stdout.split() == ["True", "True"]
