"""The Docker backend up to the engine's edge: the containers it would create, its handling of
what an engine reports (through a fake client), and a fast failure when no engine exists.

No Docker engine runs in this environment, so nothing here starts a real container.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from datagouv_eval_pipeline.world.sandbox.base import SandboxLimits, SandboxUnavailableError
from datagouv_eval_pipeline.world.sandbox.docker_backend import (
    CONTAINER_UID,
    DOCKERFILE,
    DockerSandbox,
    DockerSession,
    container_config,
)

REPO_ROOT = Path(__file__).resolve().parents[2]


class FakeContainer:
    def __init__(self, kwargs: dict[str, Any], script: dict[str, Any]) -> None:
        self.kwargs = kwargs
        self.script = script
        self.attrs: dict[str, Any] = {"State": {"OOMKilled": script.get("oom", False)}}
        self.events: list[str] = []

    def start(self) -> None:
        self.events.append("start")

    def wait(self, timeout: float) -> dict[str, int]:
        if self.script.get("hang") and "kill" not in self.events:
            raise TimeoutError("read timed out")
        return {"StatusCode": 137 if "kill" in self.events else self.script.get("status", 0)}

    def kill(self) -> None:
        self.events.append("kill")

    def logs(self, *, stdout: bool, stderr: bool, stream: bool) -> list[bytes]:
        return [self.script.get("stdout" if stdout else "stderr", b"")]

    def reload(self) -> None:
        pass

    def remove(self, force: bool) -> None:
        self.events.append("remove")


class FakeClient:
    """Just enough of docker.DockerClient for DockerSession."""

    def __init__(self, scripts: list[dict[str, Any]]) -> None:
        self.scripts = scripts
        self.created: list[FakeContainer] = []
        self.volumes_made: list[str] = []
        self.volumes_removed: list[str] = []
        client = self

        class Images:
            def get(self, name: str) -> object:
                return object()

        class Containers:
            def create(self, **kwargs: Any) -> FakeContainer:
                container = FakeContainer(kwargs, client.scripts.pop(0))
                client.created.append(container)
                return container

        class Volume:
            def __init__(self, name: str) -> None:
                self.name = name

            def remove(self, force: bool) -> None:
                client.volumes_removed.append(self.name)

        class Volumes:
            def create(self, name: str, labels: dict[str, str]) -> None:
                client.volumes_made.append(name)

            def get(self, name: str) -> Volume:
                return Volume(name)

        self.images, self.containers, self.volumes = Images(), Containers(), Volumes()


def test_container_config_is_locked_down(tmp_path: Path) -> None:
    limits = SandboxLimits(memory_mb=512, max_processes=32, cpu_seconds=5, tmp_mb=16)
    config = container_config(
        image="img:1",
        command=["python", "x.py"],
        session_id="abc",
        volume="vol-abc",
        control=tmp_path,
        packages={"fakecli": tmp_path / "fakecli"},
        env={"PATH": "/usr/bin", "HOME": "/sandbox"},
        limits=limits,
        cpus=0.5,
    )
    assert config["user"] == f"{CONTAINER_UID}:{CONTAINER_UID}" and CONTAINER_UID != 0
    assert config["network_mode"] == "none"
    assert config["cap_drop"] == ["ALL"]
    assert config["security_opt"] == ["no-new-privileges:true"]
    assert config["read_only"] is True
    assert config["tmpfs"] == {"/tmp": "rw,nosuid,nodev,size=16m,nr_inodes=20000"}
    assert config["mem_limit"] == config["memswap_limit"] == "512m"
    assert config["nano_cpus"] == 500_000_000
    assert config["pids_limit"] == 32
    assert {"Name": "cpu", "Soft": 5, "Hard": 6} in config["ulimits"]
    assert config["environment"] == {"PATH": "/usr/bin", "HOME": "/sandbox"}
    assert "privileged" not in config and "ports" not in config
    writable = [m["Target"] for m in config["mounts"] if not m["ReadOnly"]]
    assert writable == ["/sandbox"]  # the working directory volume, nothing else
    assert {m["Type"] for m in config["mounts"] if m["ReadOnly"]} == {"bind"}


def test_sessions_run_calls_in_containers_and_report_limits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAKE_API_KEY", "sk-never-in-a-container")
    client = FakeClient(
        [
            {"status": 0, "stdout": b"hello\n"},
            {"hang": True},
            {"status": 137, "oom": True},
            {"status": 128 + 24},
            {
                "status": 127,
                "stderr": b"sandbox: cannot run the command: No such file or directory\n",
            },
        ]
    )
    backend = DockerSandbox(image="img:test", client_factory=lambda: client)

    async def go() -> tuple[list[Any], DockerSession]:
        session = await backend.open_session(
            allowed_hosts=["127.0.0.1:8000"],
            env={"DATAGOUV_BASE_URL": "http://twin"},
            limits=SandboxLimits(wall_seconds=1),
        )
        results = [
            await session.run_python("print('hello')"),
            await session.run_python("while True: pass"),
            await session.run_python("x = bytearray(4 * 1024 ** 3)"),
            await session.run_python("while True: pass"),
            await session.run_command(["nope"]),
        ]
        await session.close()
        return results, session

    (hello, hung, oom, cpu, missing), session = asyncio.run(go())
    assert hello.ok and hello.stdout == "hello\n"
    assert hung.timed_out and hung.limit_hit == "wall" and not hung.ok
    assert "kill" in client.created[1].events
    assert oom.limit_hit == "memory" and oom.exit_code is None
    assert cpu.limit_hit == "cpu"
    assert missing.exit_code == 127 and missing.reason is not None and "nope" in missing.reason
    # Every container was removed; so was the session's volume.
    assert all(c.events[-1] == "remove" for c in client.created)
    assert client.volumes_made == client.volumes_removed == [session.volume]
    first = client.created[0].kwargs
    assert first["command"][:4] == ["python", "-I", "-S", "/opt/sandbox/launcher.py"]
    assert first["command"][-2] == "python"
    assert first["command"][-1].startswith("/opt/sandbox/ctl/code/cell_")
    assert "proxy=/opt/sandbox/ctl/proxy.sock" in first["command"]
    env = first["environment"]
    assert "FAKE_API_KEY" not in env and env["DATAGOUV_BASE_URL"] == "http://twin"
    assert env["HOME"] == "/sandbox"


def test_opening_a_session_without_an_engine_fails_fast(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    with pytest.raises(SandboxUnavailableError, match="no Docker engine reachable") as caught:
        asyncio.run(DockerSandbox().open_session(allowed_hosts=[]))
    assert "no-engine.sock" in str(caught.value) and "LocalSandbox" in str(caught.value)


def test_the_dockerfile_builds_an_unprivileged_image_with_the_launcher() -> None:
    text = DOCKERFILE.read_text()
    assert DOCKERFILE == REPO_ROOT / "docker" / "sandbox" / "Dockerfile"
    assert f"USER {CONTAINER_UID}:{CONTAINER_UID}" in text
    assert "COPY _launcher.py /opt/sandbox/launcher.py" in text
    for package in ("httpx==", "requests==", "pandas==", "datagouv-client=="):
        assert package in text
