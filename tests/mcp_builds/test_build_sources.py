"""Builds from a local checkout (``path``) and a repository (``git``), their environment, and
the clean-up of servers a killed pipeline left behind."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil  # type: ignore[import-untyped]
import pytest
from pydantic_ai.mcp import MCPToolset

from datagouv_eval_pipeline.core.benchmark.config import McpBuild
from datagouv_eval_pipeline.world.mcp_builds import (
    BuildError,
    BuildServer,
    build_id,
    install_build,
    reap_orphans,
    server_environment,
)
from datagouv_eval_pipeline.world.mcp_builds.process import PID_FILE_SUFFIX

PACKAGE = McpBuild(package="iflow-mcp-datagouv-datagouv-mcp==0.2.14")
PYPROJECT = """\
[project]
name = "datagouv-mcp"
version = "0.2.14"
requires-python = ">=3.11"
dependencies = ["httpx>=0.28.0", "mcp>=1.25.0,<2"]
"""


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A checkout of the server laid out as the official repository (from the 0.2.14 package)."""
    package = install_build(PACKAGE)
    root = tmp_path_factory.mktemp("datagouv-mcp")
    shutil.copy2(package.server_dir / "main.py", root / "main.py")
    for name in ("tools", "helpers"):
        shutil.copytree(
            package.server_dir / name, root / name, ignore=shutil.ignore_patterns("__pycache__")
        )
    (root / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    return root


def tool_descriptions(url: str) -> dict[str, str]:
    async def listed() -> dict[str, str]:
        async with MCPToolset(url) as toolset:
            return {tool.name: tool.description or "" for tool in await toolset.list_tools()}

    return asyncio.run(listed())


def test_a_branch_checkout_runs_in_place_and_an_edit_counts_at_the_next_start(
    checkout: Path, tmp_path: Path
) -> None:
    build = McpBuild(path=str(checkout))
    first = install_build(build, tmp_path)
    assert first.installed and first.server_dir == checkout
    # The project's own distribution is installed too: releases from 0.2.19 on read their
    # version from it for the User-Agent (`importlib.metadata.version("datagouv-mcp")`).
    probe = "import importlib.metadata as m; print(m.version('datagouv-mcp'))"
    version = subprocess.run([str(first.python), "-c", probe], capture_output=True, text=True)
    assert version.stdout.strip() == "0.2.14", version.stderr
    with BuildServer(first, {}) as server:
        before = tool_descriptions(server.url)
    assert "search_datasets" in before
    # A developer edits a tool description on their branch: no reinstall, a new code digest.
    tool = checkout / "tools" / "search_datasets.py"
    text = tool.read_text(encoding="utf-8")
    edited = text.replace("Search for datasets on data.gouv.fr", "Find datasets on data.gouv.fr", 1)
    assert edited != text
    tool.write_text(edited, encoding="utf-8")
    second = install_build(build, tmp_path)
    assert not second.installed and second.root == first.root
    assert second.code_digest != first.code_digest
    with BuildServer(second, {}) as server:
        after = tool_descriptions(server.url)
    assert after["search_datasets"].strip().startswith("Find datasets on data.gouv.fr")
    # Changing the dependencies makes a new environment.
    (checkout / "pyproject.toml").write_text(PYPROJECT + "\n# pinned again\n", encoding="utf-8")
    assert build_id(build) != first.root.name


def test_a_git_build_checks_out_the_ref(checkout: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(checkout, repo)

    def git(*args: str) -> str:
        command = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org"]
        return subprocess.run([*command, *args], check=True, capture_output=True, text=True).stdout

    git("init", "--quiet", "--initial-branch", "branch")
    git("add", ".")
    git("commit", "--quiet", "-m", "the branch")
    commit = git("rev-parse", "HEAD").strip()
    build = McpBuild(git=f"file://{repo}@branch")
    installed = install_build(build, tmp_path / "cache")
    assert installed.revision == commit
    assert (installed.server_dir / "main.py").is_file()
    assert installed.server_dir.is_relative_to(installed.root)
    missing = McpBuild(git=f"file://{repo}@no-such-branch")
    with pytest.raises(BuildError, match="a git build needs the network"):
        install_build(missing, tmp_path / "cache")
    assert not any((tmp_path / "cache").glob("git-file*no-such-branch*/build.json"))


def test_a_checkout_without_main_py_is_a_clear_error(tmp_path: Path) -> None:
    root = tmp_path / "not-a-server"
    root.mkdir()
    (root / "pyproject.toml").write_text(
        '[project]\nname = "x"\nversion = "1"\ndependencies = []\n', encoding="utf-8"
    )
    with pytest.raises(BuildError, match=r"no main\.py in .*not-a-server; the server is started"):
        install_build(McpBuild(path=str(root)), tmp_path / "cache")
    # The failed install left nothing that looks finished.
    assert not list((tmp_path / "cache").glob("*/build.json"))


def test_the_server_environment_holds_no_secret_and_the_fronts_variables() -> None:
    base = {
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "MISTRAL_API_KEY": "sk-secret",
        "HTTPS_PROXY": "http://corporate:3128",
        "DATAGOUV_ENV": "demo",
    }
    front = {"HTTPS_PROXY": "http://127.0.0.1:9", "SSL_CERT_FILE": "/twin/ca.pem"}
    offline = server_environment(front, 8123, base)
    assert offline == {
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "SSL_CERT_FILE": "/twin/ca.pem",
        "MCP_HOST": "127.0.0.1",
        "MCP_PORT": "8123",
        "MCP_TRANSPORT": "http",
        "DATAGOUV_ENV": "prod",
        "DATAGOUV_API_ENV": "prod",
        "PYTHONUNBUFFERED": "1",
    }
    live = server_environment(None, 8123, base)
    assert live["HTTPS_PROXY"] == "http://corporate:3128"
    assert "MISTRAL_API_KEY" not in live and "SSL_CERT_FILE" not in live


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_servers_left_by_a_killed_pipeline_are_ended_at_the_next_start(tmp_path: Path) -> None:
    orphan = subprocess.Popen(["sleep", "60"], start_new_session=True)
    kept = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        for process, owner in ((orphan, _dead_pid()), (kept, psutil.Process().ppid())):
            created = psutil.Process(process.pid).create_time()
            record = f'{{"pid": {process.pid}, "created": {created}, "owner": {owner}}}'
            (tmp_path / f"{process.pid}{PID_FILE_SUFFIX}").write_text(record, encoding="utf-8")
        assert reap_orphans(tmp_path) == [orphan.pid]
        deadline = time.monotonic() + 5
        while orphan.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert orphan.poll() is not None
        assert kept.poll() is None  # its pipeline still runs
        assert [p.name for p in tmp_path.iterdir()] == [f"{kept.pid}{PID_FILE_SUFFIX}"]
    finally:
        for process in (orphan, kept):
            process.kill()
            process.wait()


_INTERRUPTED_RUN = """
import signal, sys, time
# A terminal's defaults, whatever the test runner's worker left to its children (ignored or
# blocked signals are inherited across exec).
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.signal(signal.SIGTERM, signal.SIG_DFL)
from datagouv_eval_pipeline.core.benchmark.config import McpBuild
from datagouv_eval_pipeline.world.mcp_builds import BuildServers
with BuildServers(network_env={}) as builds:
    builds.start(McpBuild(package=sys.argv[1]))
    (server,) = builds.servers.values()
    print(server.pid, flush=True)
    time.sleep(120)
"""


@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM", "SIGKILL"])
def test_an_interrupted_run_leaves_no_server_behind(signal_name: str) -> None:
    import signal

    install_build(PACKAGE)  # cached: the child only starts it
    assert PACKAGE.package is not None
    child = subprocess.Popen(
        [sys.executable, "-c", _INTERRUPTED_RUN, PACKAGE.package],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        server_pid = int(child.stdout.readline())
        assert psutil.pid_exists(server_pid)
        child.send_signal(getattr(signal, signal_name))
        child.wait(30)
        deadline = time.monotonic() + 10
        while psutil.pid_exists(server_pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not psutil.pid_exists(server_pid)
    finally:
        child.kill()
        child.wait()
