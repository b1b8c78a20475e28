"""A server run as a child process on 127.0.0.1: start-up, readiness, failures, group stop."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil  # type: ignore[import-untyped]  # no stubs in the lock
import pytest

from datagouv_eval_pipeline.base.server_process import (
    ServerPool,
    ServerProcess,
    accepts_connections,
    free_port,
    log_tail,
)

# A server that also starts a child of its own (the group stop must end both).
SERVER = r"""
import http.server, subprocess, sys
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print("child", child.pid, flush=True)
handler = http.server.SimpleHTTPRequestHandler
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), handler).serve_forever()
"""


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, ended but not reaped, does not)."""
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


def _child_pid(log: Path) -> int:
    for _ in range(200):
        for line in log.read_text().splitlines():
            if line.startswith("child "):
                return int(line.split()[1])
        time.sleep(0.05)
    raise AssertionError(log.read_text())


def test_a_server_is_ready_once_it_listens_and_stop_ends_its_whole_group(tmp_path: Path) -> None:
    process = ServerProcess(tmp_path / "logs" / "server.log")
    port = free_port()
    pid = process.spawn([sys.executable, "-c", SERVER, str(port)], port, cwd=tmp_path)
    assert process.pid == pid and process.port == port
    problem = process.wait_ready(
        accepts_connections, "listen", started=time.perf_counter(), timeout=30
    )
    assert problem is None and accepts_connections(port)
    grandchild = _child_pid(process.log_path)
    assert os.getpgid(grandchild) == pid  # a session of its own, children included
    assert process.stop(timeout=5) == pid
    assert process.pid is None and process.stop() is None  # idempotent
    assert not _alive(pid) and not _alive(grandchild)
    assert not accepts_connections(port)


def test_a_server_that_exits_at_start_up_is_reported_with_its_output(tmp_path: Path) -> None:
    process = ServerProcess(tmp_path / "server.log")
    code = "import sys; print('bad flag --nope'); sys.exit(3)"
    process.spawn([sys.executable, "-c", code], free_port())
    problem = process.wait_ready(
        accepts_connections, "listen", started=time.perf_counter(), timeout=30
    )
    assert problem == "exited with 3 at start-up: bad flag --nope"
    process.stop()


def test_a_server_that_never_gets_ready_is_reported_after_the_timeout(tmp_path: Path) -> None:
    process = ServerProcess(tmp_path / "server.log")
    process.spawn([sys.executable, "-c", "import time; time.sleep(600)"], free_port())
    problem = process.wait_ready(
        lambda port: False, "answer /health", started=time.perf_counter(), timeout=0.3
    )
    assert problem == "did not answer /health within 0 s: (no output)"
    pid = process.stop(timeout=5)
    assert pid is not None and not _alive(pid)


def test_waiting_before_spawning_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="not spawned"):
        ServerProcess(tmp_path / "x.log").wait_ready(
            accepts_connections, "listen", started=0.0, timeout=1
        )


def test_the_log_tail_keeps_the_last_lines(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    assert log_tail(log) == "(no output)"
    log.write_text("\n".join(f"line {i}" for i in range(20)) + "\n\n")
    assert log_tail(log, 3) == "line 17\nline 18\nline 19"


class _Fake:
    def __init__(self, name: str) -> None:
        self.name = name
        self.stops = 0

    def stop(self) -> None:
        self.stops += 1


def test_a_pool_starts_each_server_once_and_stops_them_all() -> None:
    pool: ServerPool[str, _Fake] = ServerPool()
    started: list[tuple[str, int]] = []

    def start(name: str) -> Callable[[int], _Fake]:
        def make(index: int) -> _Fake:
            started.append((name, index))
            return _Fake(name)

        return make

    a = pool.get("a", start("a"))
    assert pool.get("a", start("a")) is a
    b = pool.get("b", start("b"))
    assert started == [("a", 0), ("b", 1)]
    assert pool.started() == {"a": a, "b": b}
    pool.close()
    pool.close()  # idempotent
    assert (a.stops, b.stops) == (1, 1) and pool.started() == {}
    with pool:
        c = pool.get("c", start("c"))
    assert c.stops == 1 and pool.started() == {}


def test_a_server_that_fails_to_start_is_not_kept() -> None:
    pool: ServerPool[str, _Fake] = ServerPool()

    def fail(index: int) -> _Fake:
        raise RuntimeError("no runtime")

    with pytest.raises(RuntimeError, match="no runtime"):
        pool.get("a", fail)
    assert pool.started() == {}
