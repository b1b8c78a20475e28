"""Start an installed build of the MCP server on 127.0.0.1 and stop it with the run.

The server runs as the official repository runs it: ``python main.py`` with ``MCP_HOST`` and
``MCP_PORT`` (streamable HTTP at ``/mcp``). Its environment is built from nothing but what it
needs (no API key of the pipeline's environment reaches it): ``PATH``, ``HOME``, the locale,
and the variables given by the caller, which offline are the hostname front's (``HTTPS_PROXY``,
``SSL_CERT_FILE``, ...), so the server keeps its production hostnames and reads the twin.

The server gets a session of its own, so a Ctrl-C in the terminal reaches the pipeline, which
stops it (``stop`` is idempotent, also called at interpreter exit). If the pipeline dies without
stopping it (SIGTERM, SIGKILL), a watcher thread started in the server before ``main.py`` sees
its parent go and ends the server's process group; the pid file left in the build's directory
lets the next start end any server that survived even that.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from pathlib import Path

import psutil  # type: ignore[import-untyped]  # no stubs in the lock

from datagouv_eval_pipeline.base.server_process import (
    HOST,
    ChildServer,
    ServerProcess,
    accepts_connections,
    end_process_group,
    free_port,
)
from datagouv_eval_pipeline.world.mcp_builds.install import ENTRY_SCRIPT, BuildError, InstalledBuild

MCP_PATH = "/mcp"
PID_FILE_SUFFIX = ".server.json"
_PASSED_THROUGH = ("HOME", "LANG", "LC_ALL", "TMPDIR", "TZ")
_LIVE_NETWORK = (
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "NO_PROXY",
    "https_proxy",
    "http_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
)
"""Network settings of the user's environment a live server keeps (a corporate proxy)."""

# Runs main.py as `python main.py` would (same sys.path[0], __name__ == "__main__"), after
# starting a thread that ends the server's process group once the pipeline that started it is
# gone, whatever killed it.
_WATCHED_ENTRY = r"""
import os, runpy, signal, sys, threading, time
_parent = os.getppid()
def _watch():
    while os.getppid() == _parent:
        time.sleep(0.5)
    os.killpg(0, signal.SIGTERM)
threading.Thread(target=_watch, name="parent-watch", daemon=True).start()
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def server_environment(
    network_env: Mapping[str, str] | None, port: int, base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The server's whole environment.

    Args:
        network_env: The front's client variables (offline); None for a live run, which keeps
            the proxy and CA settings of ``base``.
        port: The port to listen on.
        base: The pipeline's environment (``os.environ`` by default); only ``PATH``, ``HOME``,
            the locale and, live, the network settings are taken from it.
    """
    base = os.environ if base is None else base
    env = {name: base[name] for name in _PASSED_THROUGH if name in base}
    env["PATH"] = base.get("PATH", os.defpath)
    if network_env is None:
        env.update({name: base[name] for name in _LIVE_NETWORK if name in base})
    else:
        env.update(network_env)
    env.update(
        {
            "MCP_HOST": HOST,
            "MCP_PORT": str(port),
            "MCP_TRANSPORT": "http",
            # Both spellings of the releases' catalog switch: the production hostnames, which
            # the front answers for offline.
            "DATAGOUV_ENV": "prod",
            "DATAGOUV_API_ENV": "prod",
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


class BuildServer(ChildServer):
    """One running server of an installed build (use as a context manager, or start/stop)."""

    def __init__(
        self,
        build: InstalledBuild,
        network_env: Mapping[str, str] | None,
        *,
        log_path: Path | None = None,
        start_timeout: float = 60.0,
    ) -> None:
        """Prepare the server.

        Args:
            build: The installed build.
            network_env: The front's client variables offline; None for a live run.
            log_path: Where the server's output goes (default: ``server.log`` in the build).
            start_timeout: Seconds to wait for the port to accept connections.
        """
        super().__init__()
        self.build = build
        self._network_env = None if network_env is None else dict(network_env)
        self.log_path = log_path or build.root / "server.log"
        self._start_timeout = start_timeout
        self.seconds = 0.0
        """Start-up time: spawn to the port accepting connections."""

    @property
    def url(self) -> str:
        """The streamable-HTTP endpoint."""
        if self.port is None:
            raise RuntimeError("the server is not started")
        return f"http://{HOST}:{self.port}{MCP_PATH}"

    def start(self) -> str:
        """Start the server and wait until it listens; returns its URL.

        Raises:
            BuildError: The server exited or did not listen in time (with its last output).
        """
        if self._process is not None:
            return self.url
        reap_orphans(self.build.root)
        started = time.perf_counter()
        for attempt in range(3):  # another process may take the free port first
            port = free_port()
            process = self._process = ServerProcess(self.log_path)
            pid = process.spawn(
                [str(self.build.python), "-c", _WATCHED_ENTRY, ENTRY_SCRIPT],
                port,
                env=server_environment(self._network_env, port),
                cwd=self.build.server_dir,
            )
            self.port = port
            self._write_pid_file(pid)
            problem = process.wait_ready(
                accepts_connections,
                f"listen on {HOST}:{port}",
                started=started,
                timeout=self._start_timeout,
            )
            if problem is None:
                self.seconds = time.perf_counter() - started
                return self.url
            self.stop()
            if "address already in use" not in problem.lower() or attempt == 2:
                raise BuildError(f"the MCP server of build {self.build.build.spec} {problem}")
        raise AssertionError("unreachable")  # pragma: no cover

    def stop(self, timeout: float = 5.0) -> int | None:
        """Stop the server and everything it started (terminate, then kill). Idempotent."""
        pid = super().stop(timeout)
        if pid is not None:
            self._pid_file(pid).unlink(missing_ok=True)
        return pid

    def _pid_file(self, pid: int) -> Path:
        return self.build.root / f"{pid}{PID_FILE_SUFFIX}"

    def _write_pid_file(self, pid: int) -> None:
        try:
            created = psutil.Process(pid).create_time()
        except psutil.Error:
            return
        record = {"pid": pid, "created": created, "owner": os.getpid()}
        self._pid_file(pid).write_text(json.dumps(record), encoding="utf-8")


def reap_orphans(root: Path) -> list[int]:
    """End servers of this build left by a pipeline process that no longer exists.

    Returns:
        The pids ended.
    """
    ended: list[int] = []
    for path in root.glob(f"*{PID_FILE_SUFFIX}"):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            pid, created, owner = int(record["pid"]), float(record["created"]), record["owner"]
        except (OSError, ValueError, KeyError, TypeError):
            path.unlink(missing_ok=True)
            continue
        if int(owner) == os.getpid() or psutil.pid_exists(int(owner)):
            continue  # a server of a pipeline that still runs
        try:
            orphan = psutil.Process(pid).create_time() == created
        except psutil.Error:
            orphan = False
        if orphan:
            end_process_group(pid, 5.0)
            ended.append(pid)
        path.unlink(missing_ok=True)
    return ended
