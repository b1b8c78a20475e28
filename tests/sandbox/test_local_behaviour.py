"""Normal behaviour of the local sandbox (bwrap mode): output, exit codes, files, sessions."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from datagouv_eval_pipeline.world.sandbox.base import ExecResult, SandboxLimits
from datagouv_eval_pipeline.world.sandbox.local import LocalSandbox, LocalSession

from .conftest import Server, in_session


def test_output_exit_codes_and_files_persist_within_a_session(
    bwrap_sandbox: LocalSandbox,
) -> None:
    async def body(session: LocalSession) -> tuple[list[ExecResult], Path, bool]:
        results = [
            await session.run_python(
                "import sys\nprint('héllo')\nprint('oops', file=sys.stderr)\n"
                "open('notes.txt', 'w').write('kept')\n"
            ),
            await session.run_python("print(open('notes.txt').read())\nraise SystemExit(3)"),
            await session.run_command(["cat", "notes.txt"]),
            await session.run_command(["python", "-c", "1/0"]),
        ]
        host_file = session.host_workdir / "notes.txt"
        return results, session.host_workdir, host_file.read_text() == "kept"

    (first, second, cat, crash), workdir, seen_on_host = in_session(bwrap_sandbox, body)
    assert first.ok and first.exit_code == 0
    assert first.stdout == "héllo\n" and first.stderr == "oops\n"
    assert first.limit_hit is None and first.reason is None
    assert second.exit_code == 3 and not second.ok and second.stdout == "kept\n"
    assert cat.ok and cat.stdout == "kept"
    assert crash.exit_code == 1 and "ZeroDivisionError" in crash.stderr
    assert seen_on_host
    assert not workdir.exists()  # close() removed it


def test_close_kills_running_calls_and_forbids_new_ones(bwrap_sandbox: LocalSandbox) -> None:
    async def go() -> tuple[ExecResult, Path]:
        session = await bwrap_sandbox.open_session(allowed_hosts=[])
        call = asyncio.ensure_future(session.run_python("import time; time.sleep(60)"))
        await asyncio.sleep(0.5)
        await session.close()
        result = await call
        with pytest.raises(RuntimeError, match="closed"):
            await session.run_python("print(1)")
        return result, session.host_workdir

    result, workdir = asyncio.run(go())
    assert not result.ok and result.exit_code is None
    assert "closed" in (result.reason or "")
    assert not workdir.exists()


def test_long_output_is_cut_with_its_full_length_recorded(bwrap_sandbox: LocalSandbox) -> None:
    limits = SandboxLimits(max_output_chars=1000, kill_output_chars=200_000)

    async def body(session: LocalSession) -> tuple[ExecResult, ExecResult]:
        long = await session.run_python("print('a' * 5000 + 'END')")
        flood = await session.run_python("while True:\n    print('x' * 1000)\n")
        return long, flood

    long, flood = in_session(bwrap_sandbox, body, limits=limits)
    assert long.ok and long.truncated
    assert long.stdout_chars == 5004  # 5000 + "END" + newline
    assert len(long.stdout) == 1000
    assert long.stdout.startswith("aaaa") and long.stdout.endswith("END\n")
    assert "5,004 characters in all" in long.stdout
    # Past the kill threshold the call is stopped, not just cut.
    assert not flood.ok and flood.limit_hit == "output"
    assert flood.stdout_chars > 200_000 and len(flood.stdout) == 1000


def test_run_command_never_goes_through_a_shell(bwrap_sandbox: LocalSandbox) -> None:
    async def body(session: LocalSession) -> list[ExecResult]:
        return [
            await session.run_command(["echo", "a; cat /etc/passwd && echo $HOME"]),
            await session.run_command(["no-such-command", "x"]),
            await session.run_command([]),
        ]

    echo, missing, empty = in_session(bwrap_sandbox, body)
    assert echo.ok and echo.stdout == "a; cat /etc/passwd && echo $HOME\n"
    assert missing.exit_code == 127 and not missing.ok
    assert (
        missing.reason == "could not start the command: no-such-command: No such file or directory"
    )
    assert not empty.ok and empty.reason is not None


def test_concurrent_sessions_are_isolated(
    bwrap_sandbox: LocalSandbox, servers: tuple[Server, Server]
) -> None:
    allowed, _ = servers
    fetch = (
        "import json, urllib.request\n"
        "try:\n"
        f"    body = urllib.request.urlopen('{allowed.url}/x', timeout=10).read().decode()\n"
        "except Exception as exc:\n"
        "    body = type(exc).__name__\n"
        "print(json.dumps(body))\n"
    )

    async def one(name: str, hosts: list[str]) -> tuple[ExecResult, ExecResult, ExecResult]:
        session = await bwrap_sandbox.open_session(allowed_hosts=hosts)
        try:
            wrote = await session.run_python(
                f"import os, time\nopen('{name}.txt', 'w').write('{name}')\ntime.sleep(0.5)\n"
                "print(sorted(os.listdir('.')))"
            )
            procs = "import os; print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))"
            return wrote, await session.run_python(fetch), await session.run_python(procs)
        finally:
            await session.close()

    async def both() -> list[tuple[ExecResult, ExecResult, ExecResult]]:
        return list(await asyncio.gather(one("first", [allowed.hostport]), one("second", [])))

    (first, first_fetch, first_ps), (second, second_fetch, second_ps) = asyncio.run(both())
    assert first.stdout == "['first.txt']\n" and second.stdout == "['second.txt']\n"
    assert json.loads(first_fetch.stdout) == "hello from allowed"
    assert json.loads(second_fetch.stdout) == "HTTPError"  # the proxy's 403
    # Each call sees only its own processes: the call's init (PID 1) and itself.
    for listing in (first_ps, second_ps):
        assert listing.ok and json.loads(listing.stdout) == [1, 2]


def test_libraries_and_extra_commands_are_available(
    tmp_path: Path, bwrap_sandbox: LocalSandbox
) -> None:
    package = tmp_path / "fakecli"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text("import sys\nprint('fakecli', sys.argv[1:])\n")
    sandbox = LocalSandbox(mode="bwrap", python_packages=[package], commands={"fake": "fakecli"})

    async def body(session: LocalSession) -> tuple[ExecResult, ExecResult]:
        found = await session.run_python(
            "import importlib.util as u\n"
            "print([u.find_spec(m) is not None for m in "
            "('httpx', 'requests', 'pandas', 'datagouv', 'fakecli', 'datagouv_eval_pipeline')])"
        )
        return found, await session.run_command(["fake", "dataset", "a b"])

    found, fake = in_session(sandbox, body)
    # The project itself is not importable: only what was handed over.
    assert found.stdout == "[True, True, True, True, True, False]\n"
    assert fake.ok and fake.stdout == "fakecli ['dataset', 'a b']\n"


def test_bad_session_arguments_are_refused_before_anything_runs(
    bwrap_sandbox: LocalSandbox,
) -> None:
    async def open_with(**kwargs: object) -> None:
        session = await bwrap_sandbox.open_session(**kwargs)  # type: ignore[arg-type]
        await session.close()

    with pytest.raises(ValueError, match="OPENAI_API_KEY looks like a secret"):
        asyncio.run(open_with(allowed_hosts=[], env={"OPENAI_API_KEY": "x"}))
    with pytest.raises(ValueError, match="HTTPS_PROXY is set by the sandbox"):
        asyncio.run(open_with(allowed_hosts=[], env={"HTTPS_PROXY": "http://elsewhere"}))
    with pytest.raises(ValueError, match=r"'\*\.gouv\.fr'"):
        asyncio.run(open_with(allowed_hosts=["*.gouv.fr"]))
    with pytest.raises(ValueError, match=r"no __init__\.py"):
        LocalSandbox(python_packages=[Path("/")])
    with pytest.raises(ValueError, match="not a module name"):
        LocalSandbox(commands={"x": "a;b"})
