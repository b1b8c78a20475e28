"""The production data.gouv.fr services: their base URLs and host names (shared vocabulary).

Agents, traces, the semantic layer and the twin all speak of the catalog by these URLs; the
twin answers for them behind the hostname front (``datagouv_eval_pipeline.world.front``). Keys are
the fields of ``twin.urls.TwinUrls`` (the MCP server's ``env_config`` names).
"""

from __future__ import annotations

from types import MappingProxyType

PRODUCTION_BASE_URLS = MappingProxyType(
    {
        "site": "https://www.data.gouv.fr/",
        "datagouv_api": "https://www.data.gouv.fr/api/",
        "tabular_api": "https://tabular-api.data.gouv.fr/api/",
        "metrics_api": "https://metric-api.data.gouv.fr/api/",
        "crawler_api": "https://crawler.data.gouv.fr/api/",
    }
)
"""The base URL of each service; every one ends with ``/``."""

SITE_HOST = "www.data.gouv.fr"
SERVICE_HOSTS = (
    SITE_HOST,
    "tabular-api.data.gouv.fr",
    "metric-api.data.gouv.fr",
    "crawler.data.gouv.fr",
)
"""The host of each service (the site and main API share one)."""
