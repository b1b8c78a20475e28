"""Overhead of the hostname front per request: a production URL through it vs the twin directly.

    python3 -m uv run python bench/bench_front.py [REQUESTS]

Starts the twin (no MCP mounts) and a front before it, then times, per request, with one
httpx client per scenario (built once, so client-side TLS context creation is not counted):

* ``direct``: ``http://127.0.0.1:PORT/...`` on a kept-alive connection (the baseline);
* ``front, kept alive``: ``https://www.data.gouv.fr/...`` through the proxy, one CONNECT and
  TLS handshake per connection, then requests on it;
* ``front, new connection``: the same with ``Connection: close``-like behaviour (a fresh
  client connection each time: CONNECT + TLS handshake + request), the worst case, as a
  client that never reuses connections (curl in a loop) pays.

Two requests: the small ``/api/1/site/`` JSON (127 bytes) and a 50-row Tabular page (~14 KB).
Each figure is the median (and 90th percentile) of REQUESTS timed requests after a warm-up.
"""

from __future__ import annotations

import functools
import ssl
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

import httpx

from datagouv_eval_pipeline.world.api.front import twin_front
from datagouv_eval_pipeline.world.api.server import TwinServer
from datagouv_eval_pipeline.world.catalogue.catalog import CatalogStore

RID = "d8581b5b-3372-4e73-9323-036e543e2bef"
PATHS = {
    "site (127 B)": ("api/1/site/", "https://www.data.gouv.fr/api/1/site/"),
    "tabular page (50 rows)": (
        f"tabular/api/resources/{RID}/data/?page_size=50",
        f"https://tabular-api.data.gouv.fr/api/resources/{RID}/data/?page_size=50",
    ),
}


def timed(send: Callable[[], httpx.Response], n: int) -> tuple[float, float]:
    """Median and 90th percentile in ms of ``n`` calls of ``send`` (after 20 warm-up calls)."""
    for _ in range(20):
        send().raise_for_status()
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        send().raise_for_status()
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(0.9 * (len(samples) - 1))]


def main(n: int) -> None:
    """Print one table row per request kind and scenario."""
    with (
        tempfile.TemporaryDirectory() as home,
        TwinServer(CatalogStore.load(), mcp_versions=()) as urls,
        twin_front(urls, home=home) as front,
    ):
        assert front.authority is not None
        verify = ssl.create_default_context(cafile=str(front.authority.bundle_path))
        direct = httpx.Client(trust_env=False)
        proxied = httpx.Client(proxy=front.proxy_url, verify=verify, trust_env=False)
        fresh = httpx.Client(
            proxy=front.proxy_url,
            verify=verify,
            trust_env=False,
            limits=httpx.Limits(max_keepalive_connections=0),
        )
        print(f"{n} requests per figure; ms per request, median (p90)")
        print("| request | direct | front, kept alive | front, new connection |")
        print("|---|---|---|---|")
        for name, (local, production) in PATHS.items():
            base = timed(functools.partial(direct.get, urls.site + local), n)
            kept = timed(functools.partial(proxied.get, production), n)
            new = timed(functools.partial(fresh.get, production), n)
            cells = [f"{median:.2f} ({p90:.2f})" for median, p90 in (base, kept, new)]
            print(f"| {name} | " + " | ".join(cells) + " |")
            print(
                f"|   overhead vs direct | | +{kept[0] - base[0]:.2f} ms | "
                f"+{new[0] - base[0]:.2f} ms |"
            )
        for client in (direct, proxied, fresh):
            client.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
