"""The local sandbox's weaker ``rlimit`` mode (for hosts where bubblewrap cannot run).

It guarantees less than bwrap mode (docs/sandbox.md): no mount or network namespace, so only
what these tests check: scrubbed environment, an unprivileged uid when the backend is root,
limits, the whole process tree killed, and the proxy settings. Every test here says so in its
name, and the report shows ``isolation == "rlimit"``.
"""

from __future__ import annotations

import json
import os
import uuid

import pytest

from datagouv_eval_pipeline.world.sandbox.base import (
    ExecResult,
    SandboxLimits,
    SandboxUnavailableError,
)
from datagouv_eval_pipeline.world.sandbox.local import LocalSandbox, LocalSession

from .conftest import Server, in_session, processes_with


@pytest.fixture(scope="module")
def rlimit_sandbox() -> LocalSandbox:
    sandbox = LocalSandbox(mode="rlimit")
    try:
        assert sandbox.isolation == "rlimit"
    except SandboxUnavailableError as error:
        pytest.skip(f"rlimit mode not tested: {error}")
    return sandbox


def test_rlimit_mode_scrubs_the_environment_and_drops_root(
    rlimit_sandbox: LocalSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_API_KEY", "sk-rlimit-secret")

    async def body(session: LocalSession) -> tuple[ExecResult, str, str]:
        result = await session.run_python(
            "import json, os\nprint(json.dumps([os.getuid(), os.getcwd(), dict(os.environ)]))\n"
        )
        return result, session.isolation, str(session.host_workdir)

    result, isolation, workdir = in_session(rlimit_sandbox, body)
    assert isolation == "rlimit"
    uid, cwd, env = json.loads(result.stdout)
    assert cwd == workdir and env["HOME"] == workdir
    assert "FAKE_API_KEY" not in env
    assert "sk-rlimit-secret" not in result.stdout
    assert env["HTTP_PROXY"].startswith("http://127.0.0.1:")
    if os.geteuid() == 0:
        assert uid == 65534


def test_rlimit_mode_enforces_limits_and_kills_the_process_tree(
    rlimit_sandbox: LocalSandbox,
) -> None:
    marker = uuid.uuid4().hex
    escape = (
        "import subprocess, time\n"
        f"subprocess.Popen(['sleep', '300', '{marker}'], start_new_session=True)\n"
        "time.sleep(300)\n"
    )

    async def body(session: LocalSession) -> tuple[ExecResult, ExecResult]:
        return (
            await session.run_python(escape),
            await session.run_python("block = bytearray(4 * 1024 ** 3)"),
        )

    limits = SandboxLimits(wall_seconds=1.5, memory_mb=512)
    sleeper, hog = in_session(rlimit_sandbox, body, limits=limits)
    assert sleeper.limit_hit == "wall" and sleeper.exit_code is None
    assert processes_with(marker) == []
    assert hog.limit_hit == "memory" and "MemoryError" in hog.stderr


def test_rlimit_mode_proxy_refuses_hosts_not_allowed(
    rlimit_sandbox: LocalSandbox, servers: tuple[Server, Server]
) -> None:
    allowed, forbidden = servers
    code = (
        "import urllib.request, urllib.error\n"
        f"print(urllib.request.urlopen('{allowed.url}/ok', timeout=10).read().decode())\n"
        "try:\n"
        f"    urllib.request.urlopen('{forbidden.url}/no', timeout=10)\n"
        "except urllib.error.HTTPError as exc:\n"
        "    print(exc.code, exc.read().decode())\n"
    )

    async def body(session: LocalSession) -> ExecResult:
        return await session.run_python(code)

    result = in_session(rlimit_sandbox, body, allowed_hosts=(allowed.hostport,))
    first, second = result.stdout.splitlines()[:2]
    assert first == "hello from allowed"
    assert second.startswith(f"403 sandbox proxy: {forbidden.hostport} is not allowed")
    assert forbidden.paths == []
