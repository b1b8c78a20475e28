"""Escape attempts against the namespaced local sandbox (bwrap mode): each must fail safely.

"Fails safely" means: the call returns a non-ok ``ExecResult`` that says why (nothing is
raised to the caller), the secret or the host is untouched, no sandboxed process survives the
call, and the session keeps working afterwards.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest

from datagouv_eval_pipeline.world.sandbox.base import ExecResult, SandboxLimits
from datagouv_eval_pipeline.world.sandbox.local import LocalSandbox, LocalSession

from .conftest import Server, in_session, processes_with

REPO_ROOT = Path(__file__).resolve().parents[2]
SECRET = "sk-test-4f9d0c-do-not-leak"


def test_reading_files_outside_the_workdir_fails(
    bwrap_sandbox: LocalSandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / ".env").write_text(f"OPENAI_API_KEY={SECRET}\n")
    monkeypatch.setenv("FAKE_API_KEY", SECRET)
    targets = [
        str(project / ".env"),  # a project's secrets, by absolute path
        str(REPO_ROOT / "pyproject.toml"),  # exists on the host: the project dir is not there
        str(REPO_ROOT / ".env"),  # where a real checkout keeps its keys
        os.path.expanduser("~/.bashrc"),
    ]

    async def body(session: LocalSession) -> list[ExecResult]:
        results = [await session.run_python(f"print(open({targets[0]!r}).read())")]
        for target in targets[1:]:
            results.append(await session.run_command(["cat", target]))
        results.append(await session.run_command(["cat", "/proc/1/environ"]))
        return results

    *file_reads, pid1_environ = in_session(bwrap_sandbox, body)
    assert "FileNotFoundError" in file_reads[0].stderr
    for target, result in zip(targets, file_reads, strict=True):
        assert not result.ok, target
        assert result.exit_code == 1
        assert "No such file or directory" in result.stderr or "ermission denied" in result.stderr
        assert SECRET not in result.stdout + result.stderr
    # PID 1 is the sandbox's own init, not dumpable: its environment (the scrubbed one) is
    # not even readable.
    assert not pid1_environ.ok
    assert "Permission denied" in pid1_environ.stderr
    assert SECRET not in pid1_environ.stdout
    assert "FAKE_API_KEY" not in pid1_environ.stdout


def test_the_parent_environment_is_invisible(
    bwrap_sandbox: LocalSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)

    async def body(session: LocalSession) -> tuple[ExecResult, ExecResult]:
        listing = await session.run_command(["env"])
        probe = await session.run_python(
            "import os, sys\n"
            "print(sorted(os.environ))\n"
            "sys.exit(0 if 'FAKE_API_KEY' not in os.environ else 1)\n"
        )
        return listing, probe

    listing, probe = in_session(bwrap_sandbox, body, env={"DATAGOUV_BASE_URL": "http://twin"})
    assert listing.ok and probe.ok
    assert SECRET not in listing.stdout
    assert "FAKE_API_KEY" not in listing.stdout and "OPENAI_API_KEY" not in listing.stdout
    # What the caller passed explicitly is there.
    assert "DATAGOUV_BASE_URL=http://twin" in listing.stdout


def test_writing_outside_the_workdir_fails(bwrap_sandbox: LocalSandbox, tmp_path: Path) -> None:
    site = f"/opt/venv/lib/python{bwrap_sandbox.runtime.version}/site-packages/evil.py"
    targets = [str(tmp_path / "outside.txt"), "/etc/cron.d/evil", "/evil", site]

    async def body(session: LocalSession) -> list[ExecResult]:
        return [await session.run_python(f"open({t!r}, 'w').write('x')") for t in targets]

    results = in_session(bwrap_sandbox, body)
    for target, result in zip(targets, results, strict=True):
        assert not result.ok, target
        assert "Error" in result.stderr, target
    assert not (tmp_path / "outside.txt").exists()
    for host_site in bwrap_sandbox.runtime.site_packages:
        assert not (Path(host_site) / "evil.py").exists()


def test_tmp_is_private_and_the_workdir_is_the_only_shared_place(
    bwrap_sandbox: LocalSandbox,
) -> None:
    name = f"sandbox-probe-{uuid.uuid4().hex}"

    async def body(session: LocalSession) -> tuple[ExecResult, Path]:
        result = await session.run_python(
            f"open('/tmp/{name}', 'w').write('x'); open('{name}', 'w').write('y')"
        )
        return result, session.host_workdir / name

    result, in_workdir = in_session(bwrap_sandbox, body)
    assert result.ok
    assert not Path("/tmp", name).exists()
    assert not in_workdir.exists()  # removed with the session


def test_network_reaches_only_allowed_hosts(
    bwrap_sandbox: LocalSandbox, servers: tuple[Server, Server]
) -> None:
    allowed, forbidden = servers
    code = f"""
import json, socket, urllib.request
import httpx
out = {{}}
response = httpx.get("{allowed.url}/via-httpx", timeout=10)
out["allowed"] = [response.status_code, response.text]
out["urllib"] = urllib.request.urlopen("{allowed.url}/via-urllib", timeout=10).read().decode()
response = httpx.get("{forbidden.url}/secret", timeout=10)
out["forbidden"] = [response.status_code, response.text]
try:
    httpx.get("https://example.org/", timeout=10)
    out["https"] = "reached"
except httpx.ProxyError as exc:
    out["https"] = str(exc)
sock = socket.socket()
try:
    sock.connect(("127.0.0.1", {forbidden.port}))
    out["direct"] = "connected"
except OSError as exc:
    out["direct"] = type(exc).__name__
print(json.dumps(out))
httpx.get("{forbidden.url}/again", timeout=10).raise_for_status()
"""

    async def body(session: LocalSession) -> tuple[ExecResult, list[str]]:
        return await session.run_python(code), session.refused_hosts

    result, refused = in_session(bwrap_sandbox, body, allowed_hosts=(allowed.hostport,))
    out = json.loads(result.stdout)
    assert out["allowed"] == [200, "hello from allowed"]
    assert out["urllib"] == "hello from allowed"
    assert out["forbidden"][0] == 403
    assert f"{forbidden.hostport} is not allowed: this proxy answers for" in out["forbidden"][1]
    assert "403" in out["https"] and "example.org:443" in out["https"]
    assert out["direct"] == "ConnectionRefusedError"  # the sandbox's own, empty loopback
    # The last request raised: the call failed, with the proxy's answer in the traceback.
    assert not result.ok and result.exit_code == 1
    assert "403" in result.stderr
    assert forbidden.paths == []
    assert allowed.paths == ["/via-httpx", "/via-urllib"]
    assert refused == [forbidden.hostport, "example.org:443", forbidden.hostport]


def test_process_limit_stops_forking(bwrap_sandbox: LocalSandbox) -> None:
    marker = uuid.uuid4().hex
    code = f"""
import os, time
children = []
try:
    for _ in range(100):
        pid = os.fork()
        if pid == 0:
            time.sleep(60)  # {marker}
            os._exit(0)
        children.append(pid)
finally:
    print(len(children), flush=True)
"""
    limits = SandboxLimits(max_processes=32, wall_seconds=20)

    async def body(session: LocalSession) -> ExecResult:
        return await session.run_command(["python", "-c", code])

    result = in_session(bwrap_sandbox, body, limits=limits)
    assert not result.ok
    assert result.limit_hit == "processes"
    assert "BlockingIOError" in result.stderr
    # The launcher, the sandbox's init and this program count too: fewer than 32 children.
    assert 16 <= int(result.stdout) < 32
    assert processes_with(marker) == []  # the sleeping children went with the call


def test_fork_bomb_is_contained(bwrap_sandbox: LocalSandbox) -> None:
    marker = uuid.uuid4().hex
    bomb = (
        f"import os\nwhile True:  # {marker}\n"
        "    try:\n        os.fork()\n    except OSError:\n        pass\n"
    )
    limits = SandboxLimits(max_processes=32, wall_seconds=2)

    async def body(session: LocalSession) -> tuple[ExecResult, ExecResult]:
        exploded = await session.run_command(["python", "-c", bomb])
        return exploded, await session.run_python("print('still here')")

    exploded, after = in_session(bwrap_sandbox, body, limits=limits)
    assert not exploded.ok
    assert exploded.timed_out and exploded.limit_hit == "wall"
    assert exploded.exit_code is None
    assert "wall-clock" in (exploded.reason or "")
    assert processes_with(marker) == []
    assert after.ok and after.stdout == "still here\n"


def test_allocating_4_gb_fails(bwrap_sandbox: LocalSandbox) -> None:
    async def body(session: LocalSession) -> ExecResult:
        return await session.run_python("block = bytearray(4 * 1024 ** 3)\nprint(len(block))")

    result = in_session(bwrap_sandbox, body, limits=SandboxLimits(memory_mb=512))
    assert not result.ok
    assert result.limit_hit == "memory"
    assert "MemoryError" in result.stderr
    assert result.stdout == ""


def test_infinite_loop_hits_the_cpu_limit(bwrap_sandbox: LocalSandbox) -> None:
    async def body(session: LocalSession) -> ExecResult:
        return await session.run_python("while True:\n    pass\n")

    limits = SandboxLimits(cpu_seconds=1, wall_seconds=20)
    result = in_session(bwrap_sandbox, body, limits=limits)
    assert not result.ok
    assert result.limit_hit == "cpu"
    assert result.exit_code is None and not result.timed_out
    assert "CPU-time limit" in (result.reason or "")


def test_sleeping_forever_hits_the_wall_limit(bwrap_sandbox: LocalSandbox) -> None:
    marker = uuid.uuid4().hex

    async def body(session: LocalSession) -> ExecResult:
        # A child that leaves the session and the process group must die too.
        code = (
            "import os, subprocess, time\n"
            f"subprocess.Popen(['sleep', '300', '{marker}'], start_new_session=True)\n"
            "time.sleep(300)\n"
        )
        return await session.run_python(code)

    result = in_session(bwrap_sandbox, body, limits=SandboxLimits(wall_seconds=1.5))
    assert result.timed_out and result.limit_hit == "wall"
    assert result.exit_code is None and not result.ok
    assert processes_with(marker) == []


def test_the_sandbox_user_is_unprivileged(bwrap_sandbox: LocalSandbox) -> None:
    async def body(session: LocalSession) -> tuple[ExecResult, Path]:
        result = await session.run_python(
            "import os\n"
            "lines = [line.split(':\\t') for line in open('/proc/self/status')]\n"
            "status = {parts[0]: parts[1] for parts in lines if len(parts) == 2}\n"
            "print(os.getuid(), status['CapEff'].strip(), status['NoNewPrivs'].strip())\n"
            "open('mine.txt', 'w').write('x')\n"
        )
        return result, session.host_workdir / "mine.txt"

    async def owner(session: LocalSession) -> tuple[ExecResult, int]:
        result, path = await body(session)
        return result, path.stat().st_uid

    result, host_owner = in_session(bwrap_sandbox, owner)
    assert result.ok
    assert result.stdout.split() == ["1000", "0000000000000000", "1"]
    assert host_owner != 0  # on the host, the sandbox's files are never root's


# --------------------------------------------------------- nested namespaces, ptrace, inodes

PTRACE_PROBE = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
for who, pid in (("init", 1), ("parent", os.getppid())):
    attached = libc.ptrace(16, pid, 0, 0) == 0  # PTRACE_ATTACH
    print(who, pid, "attached" if attached else os.strerror(ctypes.get_errno()))
"""

MANY_FILES = """
import os, sys
os.makedirs(sys.argv[1], exist_ok=True)
for i in range(200_000):
    open(f"{sys.argv[1]}/f{i}", "w").close()
print("made 200000 files")
"""


@pytest.fixture(params=["warm", "per-call"])
def any_bwrap_sandbox(request: pytest.FixtureRequest, bwrap_sandbox: LocalSandbox) -> LocalSandbox:
    """Both ways a bwrap call starts: forked from the zygote, or by its own ``bwrap``."""
    return bwrap_sandbox if request.param == "warm" else LocalSandbox(mode="bwrap", warm=False)


def test_no_user_namespace_can_be_nested(any_bwrap_sandbox: LocalSandbox) -> None:
    async def body(session: LocalSession) -> tuple[ExecResult, ExecResult]:
        shell = await session.run_command(["unshare", "-Ur", "id"])
        direct = await session.run_python(
            "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            "failed = libc.unshare(0x10000000) != 0  # CLONE_NEWUSER\n"
            "print(os.strerror(ctypes.get_errno()) if failed else 'nested')\n"
        )
        return shell, direct

    shell, direct = in_session(any_bwrap_sandbox, body)
    assert not shell.ok and shell.exit_code == 1
    assert "uid=0" not in shell.stdout
    assert "unshare failed" in shell.stderr
    assert direct.ok and direct.stdout.strip() == "No space left on device"


def test_ptrace_of_the_calls_own_init_fails_fast(bwrap_sandbox: LocalSandbox) -> None:
    limits = SandboxLimits(wall_seconds=60)
    result = in_session(bwrap_sandbox, lambda s: s.run_python(PTRACE_PROBE), limits=limits)
    # The init (the program's parent) is not dumpable: the attach is refused at once, and the
    # call ends with its program, not at the wall-clock limit.
    assert result.ok, result.reason
    assert result.stdout.splitlines() == [
        "init 1 Operation not permitted",
        "parent 1 Operation not permitted",
    ]


def test_ptrace_in_a_per_call_sandbox_does_not_stall_the_call() -> None:
    sandbox = LocalSandbox(mode="bwrap", warm=False)
    limits = SandboxLimits(wall_seconds=60)
    result = in_session(sandbox, lambda s: s.run_python(PTRACE_PROBE), limits=limits)
    # The launcher (which relays, enforces the wall clock and reports) refuses the attach;
    # bubblewrap's own PID 1 can be stopped, but the call ends with the launcher's report.
    assert result.ok, result.reason
    assert not result.timed_out
    lines = result.stdout.splitlines()
    assert lines[1].startswith("parent ") and lines[1].endswith(" Operation not permitted")


def test_200000_empty_files_in_the_workdir_end_the_call(any_bwrap_sandbox: LocalSandbox) -> None:
    limits = SandboxLimits(max_files=2_000, wall_seconds=120)

    async def body(session: LocalSession) -> tuple[ExecResult, ExecResult, list[str]]:
        kept = await session.run_python("open('kept.txt', 'w').write('earlier work')")
        many = await session.run_python(MANY_FILES.replace("sys.argv[1]", "'many'"))
        return kept, many, sorted(os.listdir(session.host_workdir))

    kept, many, left = in_session(any_bwrap_sandbox, body, limits=limits)
    assert kept.ok
    assert many.limit_hit == "disk"
    assert many.reason is not None and "2,000-file quota" in many.reason
    assert "made 200000 files" not in many.stdout
    # The call's files and directory are removed; the earlier file stays.
    assert left == ["kept.txt"]


def test_200000_empty_files_in_tmp_fail(bwrap_sandbox: LocalSandbox) -> None:
    limits = SandboxLimits(max_files=2_000, wall_seconds=120)
    program = MANY_FILES.replace("sys.argv[1]", "'/tmp/many'")
    result = in_session(bwrap_sandbox, lambda s: s.run_python(program), limits=limits)
    # /tmp is a tmpfs with as many inodes as the limit: the program gets ENOSPC.
    assert result.exit_code == 1
    assert "No space left on device" in result.stderr
    assert "made 200000 files" not in result.stdout
