"""The hostname front before a running twin: production URLs answered by the twin.

    with TwinServer() as urls, twin_front(urls) as front:
        env = os.environ | front.client_env()     # HTTPS_PROXY, SSL_CERT_FILE, …
        subprocess.run(["curl", "https://www.data.gouv.fr/api/1/site/"], env=env)

The front (``datagouv_eval_pipeline.world.front``) terminates TLS for the hosts the twin answers for
(``twin.hosts``) with certificates from the twin home's CA and forwards each request to the
twin's loopback port; other hosts get a 403 naming them (or pass through, in a live run).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

from datagouv_eval_pipeline.base.cache_home import project_cache_dir
from datagouv_eval_pipeline.world.api.hosts import served_hosts
from datagouv_eval_pipeline.world.api.server import HEALTH_PATH, TwinServer
from datagouv_eval_pipeline.world.catalogue import TwinUrls
from datagouv_eval_pipeline.world.front import (
    TWIN_HOME_ENV,
    AllowList,
    CertificateAuthority,
    Front,
    ServedHosts,
    twin_home,
)

__all__ = [
    "FrontNotRunningError",
    "forget_running",
    "record_running",
    "running_env",
    "served_by",
    "twin_front",
]

_RUNNING = "running.json"


class FrontNotRunningError(RuntimeError):
    """No ``twin serve`` front answers for the twin home."""


def served_by(
    twin: TwinServer | TwinUrls,
    *,
    home: Path | str | None = None,
    hosts: frozenset[str] | None = None,
) -> ServedHosts:
    """Return what a front needs to answer for ``twin``'s host names.

    Args:
        twin: A running :class:`TwinServer` (its catalog says which file hosts it serves), or
            the loopback URLs of a twin in another process (asked through ``/_twin/health``).
        home: The twin home holding the CA (default: ``front.twin_home()``).
        hosts: The host names the twin answers for, when the caller knows them.

    Raises:
        RuntimeError: the twin is not running, or its URLs are not on a loopback port.
    """
    urls = twin.urls if isinstance(twin, TwinServer) else twin
    parts = urlsplit(urls.site)
    if parts.hostname not in ("127.0.0.1", "localhost") or parts.port is None:
        raise RuntimeError(f"the front stands before a twin on a loopback port, not {urls.site}")
    if hosts is None:
        hosts = (
            served_hosts(twin.store) if isinstance(twin, TwinServer) else _asked_hosts(parts.port)
        )
    authority = CertificateAuthority.load_or_create(twin_home(home))
    return ServedHosts(hosts=hosts, upstream=("127.0.0.1", parts.port), authority=authority)


@contextlib.contextmanager
def twin_front(
    twin: TwinServer | TwinUrls,
    *,
    home: Path | str | None = None,
    port: int = 0,
    passthrough: AllowList | str | None = None,
) -> Iterator[Front]:
    """Run a front before ``twin`` on a loopback port for the duration of the block.

    Args:
        twin: The running twin (see :func:`served_by`).
        home: The twin home holding the CA.
        port: The front's TCP port (0 picks a free one).
        passthrough: Hosts tunnelled to the real network (``"all"`` in a live run).

    Yields:
        The started :class:`~datagouv_eval_pipeline.world.front.Front`; its ``client_env()`` are the
        variables a client process needs.
    """
    front = served_by(twin, home=home).front(passthrough=passthrough, port=port)
    with front:
        yield front


def _asked_hosts(port: int) -> frozenset[str]:
    # http.client rather than urllib.request.urlopen, which would install urllib's global
    # opener (and freeze its proxy settings) in the caller's process.
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        connection.request("GET", HEALTH_PATH)
        answer = connection.getresponse()
        if answer.status != 200:
            raise RuntimeError(f"the twin on port {port} answered {answer.status} to {HEALTH_PATH}")
        return frozenset(json.loads(answer.read())["hosts"])
    except OSError as exc:
        raise RuntimeError(f"no twin answers on 127.0.0.1:{port}: {exc}") from exc
    finally:
        connection.close()


POINTER_ENV = "DATAGOUV_EVAL_TWIN_POINTER_DIR"
"""Overrides where ``twin serve`` notes its twin home for ``twin env`` run from elsewhere."""


def _pointer_path() -> Path:
    return project_cache_dir("twin", POINTER_ENV) / "running-home"


def _running_path(home: Path | str | None) -> Path:
    path = twin_home(home) / "front" / _RUNNING
    if home is None and os.environ.get(TWIN_HOME_ENV) is None and not path.exists():
        # ``twin env`` in another folder than ``twin serve``'s: the home it last noted.
        with contextlib.suppress(OSError):
            noted = _pointer_path().read_text(encoding="utf-8").strip()
            if noted:
                return Path(noted) / "front" / _RUNNING
    return path


def record_running(front: Front, twin: TwinUrls, *, home: Path | str | None = None) -> Path:
    """Write where the front of ``twin serve`` listens (``<home>/front/running.json``)."""
    path = twin_home(home) / "front" / _RUNNING
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {"pid": os.getpid(), "twin": twin.site, "env": front.client_env()}
    path.write_text(json.dumps(state, indent=1) + "\n", encoding="utf-8")
    # Noted per user, so ``twin env`` finds this front from any folder.
    with contextlib.suppress(OSError):
        pointer = _pointer_path()
        pointer.parent.mkdir(parents=True, exist_ok=True)
        pointer.write_text(str(twin_home(home)) + "\n", encoding="utf-8")
    return path


def forget_running(front: Front, *, home: Path | str | None = None) -> None:
    """Remove the record written by :func:`record_running` (if it is still this process's)."""
    path = twin_home(home) / "front" / _RUNNING
    with contextlib.suppress(OSError, ValueError):
        if json.loads(path.read_text(encoding="utf-8")).get("pid") == os.getpid():
            path.unlink()
    with contextlib.suppress(OSError):
        pointer = _pointer_path()
        if pointer.read_text(encoding="utf-8").strip() == str(twin_home(home)):
            pointer.unlink()


def running_env(*, home: Path | str | None = None) -> dict[str, str]:
    """Return the client variables of the running ``twin serve`` front of the twin home.

    Raises:
        FrontNotRunningError: no front is recorded, or the recorded one does not answer.
    """
    path = _running_path(home)
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
        env: dict[str, str] = dict(state["env"])
        proxy = urlsplit(env["HTTPS_PROXY"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise FrontNotRunningError(
            f"no running twin front recorded in {path}; start one with `datagouv-eval twin serve`"
        ) from exc
    try:
        socket.create_connection((proxy.hostname, proxy.port or 80), timeout=2).close()
    except OSError as exc:
        raise FrontNotRunningError(
            f"the twin front recorded in {path} ({env['HTTPS_PROXY']}, pid {state.get('pid')}) "
            f"does not answer: {exc}; start one with `datagouv-eval twin serve`"
        ) from exc
    return env
