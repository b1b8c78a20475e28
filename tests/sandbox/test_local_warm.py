"""The warm zygote of bwrap mode: calls are forked from one process, yet share nothing.

What one call of a session may leave to the next is the working directory, and nothing else:
not module state, not ``/tmp``, not processes. Sessions of the same backend share the zygote
but never see each other's files, proxy or processes.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

from datagouv_eval_pipeline.world.sandbox._zygote import SESSIONS_ROOT, SESSIONS_RW
from datagouv_eval_pipeline.world.sandbox.base import ExecResult
from datagouv_eval_pipeline.world.sandbox.local import LocalSandbox, LocalSession

from .conftest import Server, in_session, processes_with


def test_calls_of_a_session_share_only_the_workdir(bwrap_sandbox: LocalSandbox) -> None:
    marker = uuid.uuid4().hex
    first = (
        "import subprocess, httpx\n"
        "httpx.left_by_first_call = True\n"
        "open('/tmp/scratch', 'w').write('x')\n"
        "open('kept.txt', 'w').write('kept')\n"
        f"subprocess.Popen(['sleep', '300', '{marker}'], start_new_session=True)\n"
    )
    second = (
        "import os, httpx\n"
        "print(hasattr(httpx, 'left_by_first_call'), os.path.exists('/tmp/scratch'),\n"
        "      open('kept.txt').read())\n"
    )

    async def body(session: LocalSession) -> tuple[ExecResult, list[int], ExecResult]:
        left = await session.run_python(first)
        survivors = processes_with(marker)
        return left, survivors, await session.run_python(second)

    left, survivors, after = in_session(bwrap_sandbox, body)
    assert left.ok
    assert survivors == []  # the background process ended with its call
    assert after.ok and after.stdout == "False False kept\n"


def test_sessions_of_one_backend_cannot_reach_each_other(
    bwrap_sandbox: LocalSandbox, servers: tuple[Server, Server]
) -> None:
    allowed, _ = servers
    secret = f"secret-{uuid.uuid4().hex}"

    async def both() -> tuple[ExecResult, list[str]]:
        owner = await bwrap_sandbox.open_session(allowed_hosts=[allowed.hostport])
        other = await bwrap_sandbox.open_session(allowed_hosts=[])
        try:
            wrote = await owner.run_python(f"open('secret.txt', 'w').write({secret!r})")
            assert wrote.ok
            name = owner.host_workdir.parent.name
            probe = f"""
import glob, json, os, urllib.request
found = {{}}
for path in [{SESSIONS_ROOT!r}, "/opt/sandbox/session"]:
    found[path] = sorted(os.listdir(path)) if os.path.isdir(path) else None
found["glob"] = glob.glob({SESSIONS_ROOT!r} + "/**/secret.txt", recursive=True)
try:
    found["open"] = open(os.path.join({SESSIONS_RW!r}, "{name}", "work", "secret.txt")).read()
except OSError as exc:
    found["open"] = type(exc).__name__
try:
    urllib.request.urlopen("{allowed.url}/through-other", timeout=10)
    found["fetch"] = "reached"
except Exception as exc:
    found["fetch"] = type(exc).__name__
print(json.dumps(found))
"""
            return await other.run_python(probe), other.refused_hosts
        finally:
            await asyncio.gather(owner.close(), other.close())

    result, refused = asyncio.run(both())
    assert result.ok, result.stderr
    assert secret not in result.stdout
    found = json.loads(result.stdout)
    assert found[SESSIONS_ROOT] == []  # every session's directory is covered
    assert {"code", "proxy.sock"} <= set(found["/opt/sandbox/session"])  # its own, only
    assert found["glob"] == []
    assert found["open"] == "FileNotFoundError"
    # The second session's own proxy answered, with its own (empty) allow-list.
    assert found["fetch"] == "HTTPError"
    assert refused == [allowed.hostport]
    assert allowed.paths == []


def test_a_call_has_no_capability_and_its_own_namespaces(bwrap_sandbox: LocalSandbox) -> None:
    code = (
        "import os\n"
        "status = dict(line.rstrip('\\n').split(':\\t', 1) for line in open('/proc/self/status')"
        " if ':\\t' in line)\n"
        "print(status['CapBnd'], status['CapPrm'], os.getpid(), os.getppid())\n"
        "print(open('/proc/self/uid_map').read().split())\n"
    )

    async def body(session: LocalSession) -> tuple[ExecResult, ExecResult]:
        return await session.run_python(code), await session.run_command(["hostname"])

    result, hostname = in_session(bwrap_sandbox, body)
    assert result.ok, result.stderr
    caps, ids = result.stdout.splitlines()
    assert caps.split() == ["0000000000000000", "0000000000000000", "2", "1"]
    assert json.loads(ids.replace("'", '"')) == ["1000", "1000", "1"]
    assert hostname.stdout == "sandbox\n"


def test_commands_in_the_warm_interpreter_behave_like_python_m(tmp_path: Path) -> None:
    package = tmp_path / "tool"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text(
        "import sys\nprint(sys.argv[1:], __name__)\nif sys.argv[1:] == ['fail']:\n"
        "    sys.exit('tool: failed on purpose')\n"
    )
    sandbox = LocalSandbox(mode="bwrap", python_packages=[package], commands={"tool": "tool"})

    async def body(session: LocalSession) -> tuple[ExecResult, ExecResult, ExecResult]:
        return (
            await session.run_command(["tool", "a b", "c"]),
            await session.run_command(["tool", "fail"]),
            await session.run_python("raise KeyError('k')"),
        )

    ok, failed, raised = in_session(sandbox, body)
    assert ok.ok and ok.stdout == "['a b', 'c'] __main__\n"
    assert failed.exit_code == 1 and failed.stderr == "tool: failed on purpose\n"
    assert raised.exit_code == 1
    assert raised.stderr.startswith("Traceback (most recent call last):\n")
    assert "_zygote" not in raised.stderr  # the traceback starts at the program's own code
    assert raised.stderr.endswith("KeyError: 'k'\n")


def test_per_call_bwrap_mode_still_works(servers: tuple[Server, Server]) -> None:
    allowed, _ = servers
    sandbox = LocalSandbox(mode="bwrap", warm=False)
    code = (
        "import os, urllib.request\n"
        f"print(urllib.request.urlopen('{allowed.url}/cold', timeout=10).read().decode())\n"
        "print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))\n"
    )

    async def body(session: LocalSession) -> ExecResult:
        return await session.run_python(code)

    result = in_session(sandbox, body, allowed_hosts=(allowed.hostport,))
    assert result.ok, result.stderr
    # The launcher (the call's own PID 1; bubblewrap's init is outside) and the program.
    assert result.stdout == "hello from allowed\n[1, 2]\n"
