"""The Docker sandbox backend, for production runners that have a Docker engine.

Each call runs in a fresh container of the sandbox image (``docker/sandbox/Dockerfile``):
no network at all (``network_mode="none"``; the allow-listing proxy is reached through its Unix
socket, bind-mounted read-only), all capabilities dropped, ``no-new-privileges``, a non-root
user, a read-only root filesystem, a small ``/tmp`` tmpfs, memory/CPU/PID limits and rlimits.
The session's working directory is a Docker volume mounted at ``/sandbox``, so files persist
from one call to the next; ``close()`` removes it. A call that passes the wall-clock limit is
ended by killing its container, which takes every process in it.

Requirements: the Docker SDK (``docker``, a dependency of ``dagster-docker``) and an engine on
the same host (the proxy socket and the control directory are bind mounts). Without an engine,
``open_session`` fails at once with ``SandboxUnavailableError``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib
import itertools
import os
import shutil
import signal
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from datagouv_eval_pipeline.base import project_files
from datagouv_eval_pipeline.world.front import AllowList, ServedHosts
from datagouv_eval_pipeline.world.sandbox import _common
from datagouv_eval_pipeline.world.sandbox.base import (
    ExecResult,
    SandboxLimits,
    SandboxUnavailableError,
)

DOCKERFILE = project_files.sandbox_dockerfile()
"""The image definition (the checkout's, else the wheel's copy)."""
CONTAINER_UID = 10001
"""The unprivileged user the image runs as (``USER`` in the Dockerfile)."""
WORKDIR = "/sandbox"
CONTROL_DIR = "/opt/sandbox/ctl"
LAUNCHER = "/opt/sandbox/launcher.py"
LABEL = "datagouv-eval.sandbox"
_BACKSTOP_SECONDS = 5.0


def default_image() -> str:
    """``datagouv-eval-sandbox:<hash>``, the hash covering the Dockerfile and the launcher."""
    digest = hashlib.sha256()
    for path in (DOCKERFILE, _common.LAUNCHER_PATH):
        with contextlib.suppress(OSError):
            digest.update(path.read_bytes())
    return f"datagouv-eval-sandbox:{digest.hexdigest()[:12]}"


def container_config(
    *,
    image: str,
    command: Sequence[str],
    session_id: str,
    volume: str,
    control: Path,
    packages: Mapping[str, Path],
    env: Mapping[str, str],
    limits: SandboxLimits,
    cpus: float = 1.0,
) -> dict[str, Any]:
    """Keyword arguments of ``client.containers.create`` for one call (pure; unit-tested)."""
    mounts: list[dict[str, Any]] = [
        {"Type": "volume", "Source": volume, "Target": WORKDIR, "ReadOnly": False},
        {"Type": "bind", "Source": str(control), "Target": CONTROL_DIR, "ReadOnly": True},
    ]
    for name, package in packages.items():
        target = f"{CONTROL_DIR}/pylib/{name}"
        mounts.append({"Type": "bind", "Source": str(package), "Target": target, "ReadOnly": True})
    rlimits = _common.launcher_rlimits(limits)
    ulimits = [
        {"Name": name, "Soft": rlimits[key][0], "Hard": rlimits[key][1]}
        for name, key in (
            ("cpu", "cpu"),
            ("fsize", "fsize"),
            ("core", "core"),
            ("nofile", "nofile"),
        )
    ]
    # Docker's json-file log holds the output until it is read; cap what one call can write.
    log_mb = max(1, (limits.kill_output_chars * 4) // (1024 * 1024) + 1)
    return {
        "image": image,
        "command": list(command),
        "user": f"{CONTAINER_UID}:{CONTAINER_UID}",
        "working_dir": WORKDIR,
        "environment": dict(env),
        "hostname": "sandbox",
        "labels": {LABEL: session_id},
        "network_mode": "none",
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges:true"],
        "read_only": True,
        "tmpfs": {"/tmp": f"rw,nosuid,nodev,size={limits.tmp_mb}m,nr_inodes={limits.max_files}"},
        "mounts": mounts,
        "mem_limit": f"{limits.memory_mb}m",
        "memswap_limit": f"{limits.memory_mb}m",  # equal to mem_limit: no swap
        "nano_cpus": int(cpus * 1_000_000_000),
        "pids_limit": limits.max_processes,
        "ulimits": ulimits,
        "ipc_mode": "private",
        "init": True,
        "stdin_open": False,
        "log_config": {"Type": "json-file", "Config": {"max-size": f"{log_mb}m"}},
    }


def _connect() -> Any:
    try:
        # Imported by name: the repository's own docker/ folder would shadow it for mypy.
        docker: Any = importlib.import_module("docker")
    except ImportError as exc:  # pragma: no cover - docker ships with dagster-docker
        raise SandboxUnavailableError("docker sandbox: the docker package is missing") from exc
    where = os.environ.get("DOCKER_HOST") or "the default socket"
    try:
        client = docker.from_env(timeout=10)
        client.ping()
    except Exception as exc:
        raise SandboxUnavailableError(
            f"docker sandbox: no Docker engine reachable at {where} ({exc}); use LocalSandbox "
            "on machines without Docker"
        ) from exc
    return client


class DockerSandbox:
    """Sandbox backend running each call in its own hardened container.

    Args:
        image: Image to run; default ``default_image()``, built from the Dockerfile if absent.
        build: Build the image when it is missing (otherwise that is an error).
        python_packages: Package directories bind-mounted read-only and put on ``PYTHONPATH``.
        commands: Command name → module, run as ``python -m MODULE`` (on ``PATH``).
        cpus: CPU share of each container.
        temp_root: Where the control directories are created.
        client_factory: Returns a Docker client; tests pass a fake one.
    """

    name = "docker"

    def __init__(
        self,
        *,
        image: str | None = None,
        build: bool = True,
        python_packages: Sequence[Path] = (),
        commands: Mapping[str, str] | None = None,
        cpus: float = 1.0,
        temp_root: Path | None = None,
        client_factory: Callable[[], Any] | None = None,
    ) -> None:
        self.image = image or default_image()
        self.build = build
        self.cpus = cpus
        self.temp_root = temp_root
        self.commands = _common.check_commands(commands or {})
        self.packages = {Path(p).resolve().name: Path(p).resolve() for p in python_packages}
        self._client_factory = client_factory or _connect

    async def open_session(
        self,
        *,
        allowed_hosts: Sequence[str],
        env: Mapping[str, str] | None = None,
        limits: SandboxLimits | None = None,
        served: ServedHosts | None = None,
    ) -> DockerSession:
        """Open a session; see ``SandboxBackend.open_session``.

        Raises:
            SandboxUnavailableError: No Docker engine, or the image is missing and cannot be
                built.
            ValueError: A bad allowed host or environment variable.
        """
        allow = AllowList.parse(allowed_hosts)
        extra = _common.check_extra_env(env)
        client = await asyncio.to_thread(self._client_factory)
        await asyncio.to_thread(self._ensure_image, client)
        session = DockerSession(
            sandbox=self, client=client, allow=allow, served=served, extra_env=extra, limits=limits
        )
        await asyncio.to_thread(session._prepare)
        return session

    def _ensure_image(self, client: Any) -> None:
        try:
            client.images.get(self.image)
            return
        except Exception as exc:
            if type(exc).__name__ != "ImageNotFound":
                raise SandboxUnavailableError(f"docker sandbox: {exc}") from exc
        if not self.build or not DOCKERFILE.is_file():
            raise SandboxUnavailableError(
                f"docker sandbox: image {self.image} is missing; build it with "
                f"`docker build -t {self.image} -f docker/sandbox/Dockerfile "
                "datagouv_eval_pipeline/world/sandbox`"
            )
        client.images.build(
            path=str(_common.LAUNCHER_PATH.parent),
            dockerfile=str(DOCKERFILE),
            tag=self.image,
            rm=True,
        )


class DockerSession(_common.SessionBase):
    """One task run's containers, volume and proxy; see ``SandboxSession``.

    Attributes:
        workdir: ``/sandbox``.
        limits: The limits of every call.
    """

    workdir = WORKDIR

    def __init__(
        self,
        *,
        sandbox: DockerSandbox,
        client: Any,
        allow: AllowList,
        served: ServedHosts | None,
        extra_env: dict[str, str],
        limits: SandboxLimits | None,
    ) -> None:
        self._sandbox = sandbox
        self._client = client
        self.limits = limits or SandboxLimits()
        self.session_id = uuid.uuid4().hex[:12]
        self.volume = f"dgeval-sandbox-{self.session_id}"
        root = str(sandbox.temp_root) if sandbox.temp_root else None
        self._base = Path(tempfile.mkdtemp(prefix="dgeval-docker-", dir=root))
        self._control = self._base / "ctl"
        self._proxy = _common.session_proxy(self._control, allow, served)
        path = f"{CONTROL_DIR}/bin:/usr/local/bin:/usr/bin:/bin"
        pythonpath = f"{CONTROL_DIR}/pylib" if sandbox.packages else None
        self._env = _common.sandbox_env(
            home=WORKDIR, path=path, extra=extra_env, pythonpath=pythonpath
        )
        self._cells = itertools.count(1)
        self._running: set[Any] = set()
        self._closed = False

    def _prepare(self) -> None:
        try:
            (self._control / "code").mkdir(parents=True)
            (self._control / "pylib").mkdir()
            for name in self._sandbox.packages:
                (self._control / "pylib" / name).mkdir()
            _common.write_command_wrappers(self._control / "bin", self._sandbox.commands)
            self._control.chmod(0o755)
            self._client.volumes.create(name=self.volume, labels={LABEL: self.session_id})
            _common.start_proxy(self._proxy, self._control)
        except BaseException:
            shutil.rmtree(self._base, ignore_errors=True)
            raise

    def container_kwargs(self, argv: Sequence[str]) -> dict[str, Any]:
        """What ``containers.create`` receives for a call running ``argv``."""
        options = _common.launcher_args(
            limits=self.limits, status_fd=None, proxy=f"{CONTROL_DIR}/proxy.sock", wall=False
        )
        return container_config(
            image=self._sandbox.image,
            command=["python", "-I", "-S", LAUNCHER, *options, *argv],
            session_id=self.session_id,
            volume=self.volume,
            control=self._control,
            packages=self._sandbox.packages,
            env=self._env,
            limits=self.limits,
            cpus=self._sandbox.cpus,
        )

    async def run_python(self, code: str) -> ExecResult:
        """Run ``code`` as a Python program in ``/sandbox``."""
        self._check_open()
        cell = f"cell_{next(self._cells)}.py"
        path = self._control / "code" / cell
        try:
            path.write_text(code, encoding="utf-8")
            path.chmod(0o644)
        except (OSError, UnicodeEncodeError) as exc:
            return ExecResult("", "", None, 0.0, reason=f"could not write the program: {exc}")
        try:
            return await self._execute(["python", f"{CONTROL_DIR}/code/{cell}"])
        finally:
            path.unlink(missing_ok=True)

    async def run_command(self, argv: Sequence[str]) -> ExecResult:
        """Run one command without a shell in ``/sandbox``."""
        self._check_open()
        if isinstance(argv, str) or not argv:
            return ExecResult("", "", 2, 0.0, reason="a command is a non-empty list of arguments")
        if not all(isinstance(arg, str) and "\0" not in arg for arg in argv):
            return ExecResult("", "", 2, 0.0, reason="arguments must be strings without NUL bytes")
        return await self._execute(list(argv))

    async def close(self) -> None:
        """Kill and remove running containers, the volume, the proxy and the control dir."""
        if self._closed:
            return
        self._closed = True
        for container in list(self._running):
            await asyncio.to_thread(_force_remove, container)
        await asyncio.to_thread(self._remove_volume)
        await asyncio.to_thread(self._proxy.stop)
        await asyncio.to_thread(shutil.rmtree, self._base, True)

    def _remove_volume(self) -> None:
        with contextlib.suppress(Exception):
            self._client.volumes.get(self.volume).remove(force=True)

    async def _execute(self, argv: list[str]) -> ExecResult:
        started = time.perf_counter()
        try:
            return await asyncio.to_thread(self._run_container, argv, started)
        except Exception as exc:  # never let an engine problem escape as an exception
            duration = (time.perf_counter() - started) * 1000
            return ExecResult("", "", None, duration, reason=f"sandbox failure: {exc}")

    def _run_container(self, argv: list[str], started: float) -> ExecResult:
        limits = self.limits
        container = self._client.containers.create(**self.container_kwargs(argv))
        self._running.add(container)
        try:
            container.start()
            timed_out = False
            try:
                exit_code = int(container.wait(timeout=limits.wall_seconds)["StatusCode"])
            except Exception:
                # The wait timed out (or the engine stopped answering): end the whole container.
                timed_out = True
                with contextlib.suppress(Exception):
                    container.kill()
                with contextlib.suppress(Exception):
                    container.wait(timeout=_BACKSTOP_SECONDS)
                exit_code = -1
            stdout = _common.OutputCapture(limits.max_output_chars, limits.kill_output_chars)
            stderr = _common.OutputCapture(limits.max_output_chars, limits.kill_output_chars)
            overflow = False
            for capture, wants_stdout in ((stdout, True), (stderr, False)):
                for chunk in container.logs(
                    stdout=wants_stdout, stderr=not wants_stdout, stream=True
                ):
                    if not capture.feed(chunk):
                        overflow = True
                        break
            container.reload()
            oom_killed = bool(container.attrs.get("State", {}).get("OOMKilled"))
        finally:
            self._running.discard(container)
            _force_remove(container)
        signal_number = None
        if not timed_out and 128 < exit_code <= 128 + 64:
            # The launcher's convention: 128 + N when the command was killed by signal N.
            signal_number, exit_code = exit_code - 128, -1
        spawn_error = None
        if exit_code in (126, 127) and "sandbox: cannot run the command" in stderr.tail:
            spawn_error = f"{argv[0]}: {stderr.tail.strip().rsplit(': ', 1)[-1]}"
        return _common.build_result(
            stdout=stdout,
            stderr=stderr,
            duration_ms=(time.perf_counter() - started) * 1000,
            limits=limits,
            exit_code=None if exit_code < 0 else exit_code,
            signal_number=signal_number,
            timed_out=timed_out,
            output_overflow=overflow,
            spawn_error=spawn_error,
            oom_killed=oom_killed and signal_number in (None, signal.SIGKILL),
            failure="the session was closed during the call" if self._closed else None,
        )


def _force_remove(container: Any) -> None:
    with contextlib.suppress(Exception):
        container.remove(force=True)
