"""Base-URL aliases: the production URL a recorded base URL stands for.

Agents are given the production URLs (``production.PRODUCTION_BASE_URLS``; offline, the twin
answers for them behind the hostname front), so a trace's URLs are production URLs and map
as they are. The registry matches URLs by host and path.

Traces recorded before the front gave agents other base URLs and wrote them in
``Trace.provenance.base_urls`` (field → URL). Those stay readable from the trace alone: every
URL under a recorded base URL is read under the production base of the same field
(``http://127.0.0.1:8765/tabular/api/resources/r/`` with ``tabular_api`` recorded as
``http://127.0.0.1:8765/tabular/api/`` is ``https://tabular-api.data.gouv.fr/api/resources/r/``,
and ``{site}_ext/{host}/{path}`` is ``https://{host}/{path}``). Nothing else is rewritten, and
nothing here knows how the twin lays out its routes.

Hosts are compared case-insensitively and the loopback names are interchangeable (an agent may
write ``localhost`` for the ``127.0.0.1`` it was given); the scheme is ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from datagouv_eval_pipeline.base.production import PRODUCTION_BASE_URLS

_LIVE = PRODUCTION_BASE_URLS
"""The production base URL of each field: what an alias stands for."""
# Where the twin's loopback layout kept files of other hosts (traces recorded before the front).
_EXTERNAL_PREFIX = "_ext/"

SANDBOX_ENVIRON: Mapping[str, str] = {
    "DATAGOUV_SITE_URL": "site",
    "DATAGOUV_API_URL": "datagouv_api",
    "DATAGOUV_TABULAR_API_URL": "tabular_api",
    "DATAGOUV_METRICS_API_URL": "metrics_api",
}
"""The environment variables sandboxed code is given, and the base URL each holds (as
``agents.capabilities.CatalogTarget.sandbox_env`` sets them), so that
``os.environ["DATAGOUV_API_URL"] + "1/datasets/"`` resolves statically."""

_LOOPBACK_NAMES = ("localhost", "[::1]")
_CANONICAL_LOOPBACK = "127.0.0.1"


def _scheme_less(url: str) -> str:
    """``url`` without its scheme and with a lower-case, canonical-loopback host."""
    text = url.strip()
    _, sep, rest = text.partition("://")
    if not sep:
        rest = text.lstrip("/")
    host, slash, path = rest.partition("/")
    host = host.rsplit("@", 1)[-1].lower()
    for name in _LOOPBACK_NAMES:
        if host.startswith(name + ":") or host == name:
            host = _CANONICAL_LOOPBACK + host[len(name) :]
            break
    return host + slash + path


def _table(urls: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """(scheme-less alias prefix, production base) pairs, longest prefix first."""
    pairs: dict[str, str] = {}
    for name, base in urls.items():
        real = _LIVE.get(name)
        if real is None or not base:
            continue  # an unknown key: nothing it could stand for
        alias = _scheme_less(base if base.endswith("/") else base + "/")
        if alias == _scheme_less(real):
            continue  # a live run: the URL already names the real host
        pairs.setdefault(alias, real)
        if name == "site":
            # Files of other hosts served by the twin: ``{site}_ext/{host}/{path}``.
            pairs.setdefault(alias + _EXTERNAL_PREFIX, "https://")
    return tuple(sorted(pairs.items(), key=lambda pair: len(pair[0]), reverse=True))


@dataclass(frozen=True)
class UrlAliases:
    """Recorded base URLs that stand for production base URLs.

    Attributes:
        prefixes: (scheme-less alias prefix, production base URL) pairs, longest first.
    """

    prefixes: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_base_urls(cls, base_urls: Mapping[str, str]) -> UrlAliases:
        """Aliases for the base URLs an agent was given (``PRODUCTION_BASE_URLS`` keys).

        Unknown keys are ignored; base URLs equal to production ones add nothing.
        """
        return cls(_table(base_urls))

    @classmethod
    def for_trace(cls, base_urls: Mapping[str, str] | None) -> UrlAliases:
        """The aliases of a trace's recorded base URLs (none: production URLs only)."""
        return cls.from_base_urls(base_urls) if base_urls else cls()

    def resolve(self, url: str) -> str:
        """The production URL ``url`` stands for, or ``url`` itself when no alias applies."""
        if not self.prefixes:
            return url
        key = _scheme_less(url)
        for alias, real in self.prefixes:
            if key.startswith(alias):
                return real + key[len(alias) :]
        return url


def sandbox_environ(base_urls: Mapping[str, str] | None) -> dict[str, str]:
    """The base-URL environment variables of a run's sandbox.

    The recorded base URLs when the trace has them, else the production ones (what the
    sandbox is given since the hostname front).
    """
    urls = base_urls or _LIVE
    return {variable: urls[field] for variable, field in SANDBOX_ENVIRON.items() if field in urls}
