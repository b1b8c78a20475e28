"""Base URLs of the data.gouv.fr services, for the twin or for the live platform.

The real services live on separate hosts (www.data.gouv.fr, tabular-api…, metric-api…,
crawler…). The twin serves all of them from one host under path prefixes, so a client only
needs the five base URLs below; the field names are the keys of the MCP server's
``env_config`` (reference §1.2). Every base URL ends with ``/`` so that ``base + "1/datasets/"``
style joins work exactly as they do against production.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from urllib.parse import urlsplit

from datagouv_eval_pipeline.base.production import PRODUCTION_BASE_URLS

# Path prefixes of each service on the twin's single host.
API_PREFIX = "api/"
TABULAR_PREFIX = "tabular/api/"
METRICS_PREFIX = "metrics/api/"
CRAWLER_PREFIX = "crawler/api/"
EXTERNAL_PREFIX = "_ext/"

_LIVE_SITE = PRODUCTION_BASE_URLS["site"]
_FIELDS = ("site", "datagouv_api", "tabular_api", "metrics_api", "crawler_api")


@dataclass(frozen=True)
class TwinUrls:
    """Base URLs of the five services a data.gouv.fr client talks to.

    Attributes:
        site: The web site (``https://www.data.gouv.fr/``): pages, ``datasets/r/{rid}``.
        datagouv_api: The main API root (``…/api/``); append ``1/…`` or ``2/…``.
        tabular_api: The Tabular API root (``…/api/``); append ``resources/{rid}/…``.
        metrics_api: The Metrics API root; append ``{model}/data/``.
        crawler_api: The crawler API root; append ``resources-exceptions``.
    """

    site: str
    datagouv_api: str
    tabular_api: str
    metrics_api: str
    crawler_api: str

    def __post_init__(self) -> None:
        for name in _FIELDS:
            value = getattr(self, name)
            if not value.endswith("/"):
                raise ValueError(f"TwinUrls.{name} must end with '/', got {value!r}")

    @classmethod
    def for_site(cls, site: str) -> TwinUrls:
        """Return the URLs of a twin whose root is ``site`` (e.g. ``http://127.0.0.1:8123/``)."""
        root = site if site.endswith("/") else site + "/"
        return cls(
            site=root,
            datagouv_api=root + API_PREFIX,
            tabular_api=root + TABULAR_PREFIX,
            metrics_api=root + METRICS_PREFIX,
            crawler_api=root + CRAWLER_PREFIX,
        )

    @classmethod
    def for_port(cls, port: int, host: str = "127.0.0.1") -> TwinUrls:
        """Return the URLs of a twin listening on ``host:port``."""
        return cls.for_site(f"http://{host}:{port}/")

    @classmethod
    def live(cls) -> TwinUrls:
        """Return the production URLs (``DATAGOUV_API_ENV=prod`` in the MCP server)."""
        return cls(**PRODUCTION_BASE_URLS)

    @classmethod
    def demo(cls) -> TwinUrls:
        """Return the demo URLs (there is no demo Metrics API: it stays on production)."""
        return cls(
            site="https://demo.data.gouv.fr/",
            datagouv_api="https://demo.data.gouv.fr/api/",
            tabular_api="https://tabular-api.preprod.data.gouv.fr/api/",
            metrics_api="https://metric-api.data.gouv.fr/api/",
            crawler_api="https://demo-crawler.data.gouv.fr/api/",
        )

    @classmethod
    def from_mapping(cls, values: Mapping[str, str]) -> TwinUrls:
        """Build from a mapping with the five keys (e.g. a config file section).

        Raises:
            ValueError: a key is missing or unknown; the message lists the expected keys.
        """
        missing = [k for k in _FIELDS if k not in values]
        unknown = [k for k in values if k not in _FIELDS]
        if missing or unknown:
            raise ValueError(
                f"base URLs need exactly the keys {list(_FIELDS)}; "
                f"missing {missing}, unknown {unknown}"
            )
        return cls(**{k: values[k] for k in _FIELDS})

    def as_dict(self) -> dict[str, str]:
        """Return the five URLs as a plain dict."""
        return asdict(self)

    def external(self, url: str) -> str:
        """Return where the twin serves a file the catalog locates on another host.

        ``https://data.geopf.fr/geocodage/openapi.yaml`` becomes
        ``{site}_ext/data.geopf.fr/geocodage/openapi.yaml`` on the twin's loopback layout, and
        stays itself with the production URLs (behind the hostname front the twin answers for
        that host).
        """
        if self.site == _LIVE_SITE:
            return url
        parts = urlsplit(url)
        suffix = f"?{parts.query}" if parts.query else ""
        return f"{self.site}{EXTERNAL_PREFIX}{parts.netloc}{parts.path}{suffix}"


def external_key(url: str) -> str:
    """Return the lookup key of an external URL (scheme-less ``host/path?query``)."""
    parts = urlsplit(url)
    suffix = f"?{parts.query}" if parts.query else ""
    return f"{parts.netloc}{parts.path}{suffix}"
