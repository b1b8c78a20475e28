"""Sandbox hygiene: agent code sees only the emulated CLI, disk use is capped, leftovers go."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from datagouv_eval_pipeline.pipeline.agents.capabilities import CLI_MODULE, default_sandbox
from datagouv_eval_pipeline.world.sandbox.base import ExecResult, SandboxLimits
from datagouv_eval_pipeline.world.sandbox.library import LIBRARY_DIR_ENV, sandbox_library
from datagouv_eval_pipeline.world.sandbox.local import (
    SANDBOX_DIR_PREFIX,
    LocalSandbox,
    LocalSession,
    directory_bytes,
    directory_usage,
    file_states,
    probe_bwrap,
    remove_changed_since,
    sweep_stale_sandbox_dirs,
)
from tests.sandbox.conftest import in_session


def test_only_files_new_or_changed_since_the_snapshot_are_removed(tmp_path: Path) -> None:
    kept = tmp_path / "kept.txt"
    kept.write_text("earlier work")
    (tmp_path / "sub").mkdir()
    grown = tmp_path / "sub" / "grown.csv"
    grown.write_text("a,b\n")
    # A file written just before the call can carry a timestamp at or after the call's start
    # (the kernel's coarse clock): put it in the future to show the clock is not what decides.
    later = time.time() + 60
    os.utime(kept, (later, later))
    before = file_states(tmp_path)
    grown.write_text("a,b\n1,2\n")
    (tmp_path / "sub" / "new.bin").write_bytes(b"x" * 10)
    remove_changed_since(tmp_path, before)
    assert sorted(str(path.relative_to(tmp_path)) for path in tmp_path.rglob("*")) == [
        "kept.txt",
        "sub",
    ]


def test_directories_made_since_the_snapshot_are_removed_with_their_files(tmp_path: Path) -> None:
    (tmp_path / "earlier").mkdir()
    before = file_states(tmp_path)
    (tmp_path / "earlier" / "new.txt").write_text("x")
    (tmp_path / "many" / "deeper").mkdir(parents=True)
    (tmp_path / "many" / "deeper" / "f0").write_text("")
    remove_changed_since(tmp_path, before)
    assert [path.name for path in tmp_path.rglob("*")] == ["earlier"]


def test_directory_usage_counts_every_entry(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    for index in range(5):
        (tmp_path / "sub" / f"empty{index}").touch()
    assert directory_usage(tmp_path)[1] == 6  # five empty files take no block, but an inode each


PROBE = textwrap.dedent(
    """
    import importlib, json, os, pkgutil
    seen = {}
    hidden = [
        "world.api", "core.tasks", "world.snapshot_builder.build", "pipeline.agents",
        "pipeline.agents.baselines",
    ]
    for name in ["datagouv_eval_pipeline." + short for short in hidden]:
        try:
            importlib.import_module(name)
            seen[name] = "imported"
        except ImportError as exc:
            seen[name] = type(exc).__name__
    import datagouv_eval_pipeline as top
    seen["top"] = sorted(m.name for m in pkgutil.iter_modules(top.__path__))
    cli = importlib.import_module("datagouv_eval_pipeline.world.datagouv_cli")
    seen["cli"] = callable(cli.main)
    print(json.dumps(seen))
    """
)


@pytest.fixture
def library_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "library"
    monkeypatch.setenv(LIBRARY_DIR_ENV, str(home))
    return home


def _bwrap_or_skip() -> None:
    problem = probe_bwrap()
    if problem is not None:
        pytest.skip(f"bwrap mode not tested: {problem}")


def test_agent_code_can_import_the_cli_and_nothing_else_of_the_project(
    library_home: Path,
) -> None:
    _bwrap_or_skip()
    sandbox = default_sandbox()
    assert isinstance(sandbox, LocalSandbox)

    async def body(session: LocalSession) -> tuple[ExecResult, ExecResult]:
        return await session.run_python(PROBE), await session.run_command(["datagouv", "--help"])

    probe, cli = in_session(sandbox, body)
    assert probe.ok, probe.stderr
    seen = json.loads(probe.stdout)
    assert seen["datagouv_eval_pipeline.world.api"] == "ModuleNotFoundError"
    assert seen["datagouv_eval_pipeline.core.tasks"] == "ModuleNotFoundError"
    assert seen["datagouv_eval_pipeline.world.snapshot_builder.build"] == "ModuleNotFoundError"
    assert seen["datagouv_eval_pipeline.pipeline.agents"] == "ModuleNotFoundError"
    assert seen["datagouv_eval_pipeline.pipeline.agents.baselines"] == "ModuleNotFoundError"
    assert seen["top"] == ["world"]
    assert seen["cli"] is True
    # The command still works from its copy.
    assert cli.ok, cli.stderr
    assert "datagouv" in cli.stdout.lower()


def test_the_library_copy_is_content_addressed_and_holds_sources_only(
    library_home: Path,
) -> None:
    first = sandbox_library([CLI_MODULE])
    again = sandbox_library([CLI_MODULE])
    assert first == again
    files = sorted(p.relative_to(first).as_posix() for p in first.rglob("*") if p.is_file())
    assert "__init__.py" in files and "world/datagouv_cli/__init__.py" in files
    assert all(
        f.startswith(("world/__init__.py", "world/datagouv_cli/"))
        for f in files
        if f.count("/") > 0
    )
    assert not any("__pycache__" in f or not f.endswith(".py") for f in files)
    # The parents are empty packages, not the project's.
    assert "import" not in (first / "__init__.py").read_text()
    with pytest.raises(ValueError, match="share one top-level"):
        sandbox_library([CLI_MODULE, "json.decoder"])
    with pytest.raises(ValueError, match="not an importable package"):
        sandbox_library(["datagouv_eval_pipeline.base.filelock"])


def test_a_call_past_the_disk_quota_is_ended_and_its_files_removed() -> None:
    _bwrap_or_skip()
    sandbox = LocalSandbox(mode="bwrap")
    limits = SandboxLimits(disk_mb=8, wall_seconds=20)
    writer = textwrap.dedent(
        """
        import os
        with open('big.bin', 'wb') as out:
            for _ in range(64):          # 64 MB in 1 MB steps, slowly enough to be seen
                out.write(os.urandom(1 << 20)); out.flush(); os.fsync(out.fileno())
        print('wrote everything')
        """
    )

    async def body(session: LocalSession) -> tuple[ExecResult, ExecResult, ExecResult, int]:
        kept = await session.run_python("open('kept.txt', 'w').write('earlier work')")
        big = await session.run_python(writer)
        after = await session.run_python("import os; print(sorted(os.listdir('.')))")
        return kept, big, after, directory_bytes(session.host_workdir)

    kept, big, after, used = in_session(sandbox, body, limits=limits)
    assert kept.ok
    assert not big.ok
    assert big.limit_hit == "disk"
    assert big.reason is not None and "8 MB quota" in big.reason
    assert "wrote everything" not in big.stdout
    # The earlier file stays, the call's own file is gone, the session is usable.
    assert after.ok and after.stdout.strip() == "['kept.txt']"
    assert used < 8 * 1024 * 1024


def test_directory_bytes_counts_allocated_blocks_by_hand(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"x" * 10_000)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b").write_bytes(b"y" * 5_000)
    (tmp_path / "link").symlink_to("/usr")  # not followed
    expected = sum(
        os.lstat(p).st_blocks * 512
        for p in [tmp_path / "a", tmp_path / "sub", tmp_path / "sub" / "b", tmp_path / "link"]
    )
    assert directory_bytes(tmp_path) == expected
    assert expected >= 15_000


def test_directories_of_a_killed_run_are_removed_at_the_next_start() -> None:
    # A real process opens a sandbox session and is killed with SIGKILL: its directory stays.
    # A short root: the session's proxy socket lives under it, and a Unix socket path is
    # limited to 107 bytes (pytest-xdist's per-worker tmp_path is longer than that allows).
    tmp_path = Path(tempfile.mkdtemp(prefix="hyg-", dir="/tmp"))
    script = textwrap.dedent(
        f"""
        import asyncio, os, sys, time
        from pathlib import Path
        from datagouv_eval_pipeline.world.sandbox.local import LocalSandbox
        async def main():
            sandbox = LocalSandbox(mode="rlimit", temp_root=Path({str(tmp_path)!r}))
            session = await sandbox.open_session(allowed_hosts=[])
            print("open", flush=True)
            time.sleep(60)
        asyncio.run(main())
        """
    )
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "open"
    left = list(tmp_path.glob(f"{SANDBOX_DIR_PREFIX}*"))
    assert len(left) == 1
    # Its owner is alive: a sweep leaves it alone.
    assert sweep_stale_sandbox_dirs(tmp_path) == []
    process.kill()
    process.wait()
    assert left[0].exists()
    foreign = tmp_path / f"{SANDBOX_DIR_PREFIX}not-ours"
    foreign.mkdir()  # no owner file: never touched
    # The next sandbox created on that root removes it.
    LocalSandbox(mode="rlimit", temp_root=tmp_path)
    deadline = time.monotonic() + 5
    while left[0].exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not left[0].exists()
    assert foreign.exists()
    shutil.rmtree(tmp_path, ignore_errors=True)
