"""The production host names the twin answers for, and how their paths map onto its routes.

Behind the hostname front (``datagouv_eval_pipeline.world.front``) a client asks for
``https://tabular-api.data.gouv.fr/api/resources/{rid}/data/`` exactly as in production; the
request reaches the twin with that ``Host``. :class:`HostRouting` moves it onto the twin's
single-host layout (``/tabular/api/resources/{rid}/data/``) and marks it as a production
request, so every link in the answer (``next_page``, file URLs, page URLs) is a production URL
too, and a client following it comes back through the front.

* ``www.data.gouv.fr``: ``/api/1/…`` and ``/api/2/…`` as they are; pages and download URLs
  with or without the language prefix (``/fr/datasets/r/{rid}`` is ``/datasets/r/{rid}``);
* ``tabular-api.data.gouv.fr``, ``metric-api.data.gouv.fr``, ``crawler.data.gouv.fr``: under
  ``/tabular``, ``/metrics`` and ``/crawler``;
* a host the catalog locates files on (``static.data.gouv.fr``, an OpenAPI spec's host):
  under ``/_ext/{host}``, which serves what the snapshot holds of it.

Requests to the twin's own loopback address keep the path-prefix layout unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from starlette.types import ASGIApp, Receive, Scope, Send

from datagouv_eval_pipeline.base.production import SERVICE_HOSTS, SITE_HOST
from datagouv_eval_pipeline.world.catalogue import EXTERNAL_PREFIX

if TYPE_CHECKING:
    from datagouv_eval_pipeline.world.catalogue import CatalogStore

_PREFIXES = ("", "/tabular", "/metrics", "/crawler")
SERVICE_PREFIXES: dict[str, str] = dict(zip(SERVICE_HOSTS, _PREFIXES, strict=True))
"""Each production service host and the twin's path prefix for it."""
LANGUAGE_PREFIXES = ("/fr/", "/en/", "/es/")
PUBLIC_PATH_KEY = "twin.public_path"
"""Scope key holding the path as the client asked for it, on production-host requests."""


def file_hosts(urls: Iterable[str | None]) -> frozenset[str]:
    """Return the host names of the served external ``urls`` (``host/path`` keys or URLs)."""
    hosts: set[str] = set()
    for url in urls:
        if not url:
            continue
        rest = url.split("://", 1)[-1]
        host = rest.split("/", 1)[0].split("?", 1)[0].lower()
        if host and host not in SERVICE_PREFIXES:
            hosts.add(host)
    return frozenset(hosts)


def served_hosts(store: CatalogStore) -> frozenset[str]:
    """Return every host name the twin answers for over ``store``: services and file hosts."""
    return frozenset(SERVICE_PREFIXES) | file_hosts(_served_file_urls(store))


def _served_file_urls(store: CatalogStore) -> Iterator[str]:
    for record in store.datasets.values():
        for resource in record["resources"]:
            url = resource.get("url")
            if url and store.is_external_served(url):
                yield url
    for service_id, record in store.dataservices.items():
        url = record.get("machine_documentation_url")
        if service_id in store.specs and url and store.is_external_served(url):
            yield url


def internal_path(host: str, path: str, files: frozenset[str]) -> str | None:
    """Return the twin's path for ``path`` on the production ``host``; None if not served."""
    prefix = SERVICE_PREFIXES.get(host)
    if prefix is None:
        if host in files:
            return f"/{EXTERNAL_PREFIX}{host}{path}"
        return None
    if host == SITE_HOST and path.startswith(LANGUAGE_PREFIXES):
        return path[3:]
    return prefix + path


class HostRouting:
    """ASGI middleware: production host names onto the twin's routes (see the module doc).

    Args:
        app: The twin's app (path-prefix routes).
        files: Hosts of files the twin serves under ``/_ext/`` (:func:`file_hosts`).
    """

    def __init__(self, app: ASGIApp, files: frozenset[str]) -> None:
        self.app = app
        self.files = files

    @property
    def hosts(self) -> frozenset[str]:
        """Every host name this app answers for (services and file hosts)."""
        return frozenset(SERVICE_PREFIXES) | self.files

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Reroute a production-host request, then call the app."""
        if scope["type"] == "http":
            host = _host(scope)
            if host is not None:
                path: str = scope["path"]
                mapped = internal_path(host, path, self.files)
                if mapped is not None:
                    raw = scope.get("raw_path") or path.encode("utf-8")
                    raw_mapped = internal_path(host, raw.decode("latin-1"), self.files)
                    assert raw_mapped is not None  # same host, same rule
                    scope = _rerouted(scope, path, mapped, raw_mapped.encode("latin-1"))
        await self.app(scope, receive, send)


def _host(scope: Scope) -> str | None:
    for name, value in scope["headers"]:
        if name == b"host":
            host: str = value.decode("latin-1").lower()
            return host.rsplit(":", 1)[0] if not host.endswith("]") else host
    return None


def _rerouted(scope: Scope, public: str, internal: str, raw: bytes) -> dict[str, Any]:
    routed = dict(scope)
    routed["scheme"] = "https"
    routed["path"] = internal
    routed["raw_path"] = raw
    routed[PUBLIC_PATH_KEY] = public
    return routed
