"""Base-URL aliases: read a URL on the local twin as the production URL it stands for.

The real data.gouv.fr serves its APIs from several hosts (``www.data.gouv.fr/api/``,
``tabular-api.data.gouv.fr/api/``, ``metric-api.data.gouv.fr/api/``, ...); the twin serves all of
them from one host under path prefixes (``twin.urls.TwinUrls``). The registry matches URLs by
host and path, so before matching, a twin URL is rewritten onto the production base it stands
for: ``http://127.0.0.1:8765/tabular/api/resources/r/data/`` becomes
``https://tabular-api.data.gouv.fr/api/resources/r/data/``, and a file the twin serves for
another host (``{site}_ext/{host}/{path}``) becomes ``https://{host}/{path}``.

Where the aliases come from, so that a stored trace maps the same way later:

1. ``Trace.provenance.base_urls``: the five base URLs the agent was given (recorded by the
   runner). Every URL under one of them is rewritten; nothing else is.
2. Traces without it (recorded before the field existed): a URL on a loopback host with an
   explicit port (``127.0.0.1``, ``localhost``, ``[::1]``) is read with the twin's standard
   layout (``TwinUrls.for_site``). No production catalog URL is on a loopback host.

Hosts are compared case-insensitively and the loopback names are interchangeable (an agent may
write ``localhost`` for the ``127.0.0.1`` it was given); the scheme is ignored.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from datagouv_eval_pipeline.twin.urls import EXTERNAL_PREFIX, TwinUrls

_LIVE = TwinUrls.live().as_dict()
"""The production base URL of each ``TwinUrls`` field: what an alias stands for."""

SANDBOX_ENVIRON: Mapping[str, str] = {
    "DATAGOUV_SITE_URL": "site",
    "DATAGOUV_API_URL": "datagouv_api",
    "DATAGOUV_TABULAR_API_URL": "tabular_api",
    "DATAGOUV_METRICS_API_URL": "metrics_api",
    "DATAGOUV_CLI_BASE_URL": "site",
}
"""The environment variables sandboxed code is given, and the base URL each holds (as
``agents.capabilities.CatalogTarget.sandbox_env`` sets them), so that
``os.environ["DATAGOUV_API_URL"] + "1/datasets/"`` resolves statically."""

_LOOPBACK_NAMES = ("localhost", "[::1]")
_CANONICAL_LOOPBACK = "127.0.0.1"
_LOOPBACK_ORIGIN = re.compile(r"^(?:127\.0\.0\.1|localhost|\[::1\]):[0-9]{1,5}/", re.IGNORECASE)


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
            pairs.setdefault(alias + EXTERNAL_PREFIX, "https://")
    return tuple(sorted(pairs.items(), key=lambda pair: len(pair[0]), reverse=True))


@lru_cache(maxsize=64)
def _loopback_table(origin: str) -> tuple[tuple[str, str], ...]:
    return _table(TwinUrls.for_site("http://" + origin).as_dict())


@dataclass(frozen=True)
class UrlAliases:
    """Base URLs that stand for production base URLs.

    Attributes:
        prefixes: (scheme-less alias prefix, production base URL) pairs, longest first.
        loopback: Whether loopback URLs not covered by ``prefixes`` are read with the twin's
            standard layout (the fallback for traces that do not record their base URLs).
    """

    prefixes: tuple[tuple[str, str], ...] = ()
    loopback: bool = False

    @classmethod
    def from_base_urls(cls, base_urls: Mapping[str, str]) -> UrlAliases:
        """Aliases for the base URLs an agent was given (``TwinUrls.as_dict()`` keys).

        Unknown keys are ignored; base URLs equal to production ones add nothing.
        """
        return cls(_table(base_urls), loopback=False)

    @classmethod
    def loopback_twin(cls) -> UrlAliases:
        """The fallback: any loopback ``host:port`` is a twin with the standard layout."""
        return cls((), loopback=True)

    @classmethod
    def for_trace(cls, base_urls: Mapping[str, str] | None) -> UrlAliases:
        """The recorded base URLs when there are some, else the loopback fallback."""
        return cls.from_base_urls(base_urls) if base_urls else cls.loopback_twin()

    def resolve(self, url: str) -> str:
        """The production URL ``url`` stands for, or ``url`` itself when no alias applies."""
        if not self.prefixes and not (
            self.loopback and ("127.0.0.1" in url or "localhost" in url or "[::1]" in url)
        ):
            return url
        key = _scheme_less(url)
        for alias, real in self.prefixes:
            if key.startswith(alias):
                return real + key[len(alias) :]
        if self.loopback:
            found = _LOOPBACK_ORIGIN.match(key)
            if found is not None:
                for alias, real in _loopback_table(found.group(0)[:-1]):
                    if key.startswith(alias):
                        return real + key[len(alias) :]
        return url


def sandbox_environ(base_urls: Mapping[str, str] | None) -> dict[str, str]:
    """The base-URL environment variables of a run's sandbox (empty when not recorded)."""
    if not base_urls:
        return {}
    return {
        variable: base_urls[field]
        for variable, field in SANDBOX_ENVIRON.items()
        if field in base_urls
    }
