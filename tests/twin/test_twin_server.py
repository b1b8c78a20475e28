"""The twin over a real socket on 127.0.0.1, its URLs, and the CLI."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from click.testing import CliRunner

from datagouv_eval_pipeline.cli import main
from datagouv_eval_pipeline.world.api.server import TwinServer
from datagouv_eval_pipeline.world.catalogue.urls import TwinUrls


def test_urls_for_a_port_and_live() -> None:
    urls = TwinUrls.for_port(8123)
    assert urls.as_dict() == {
        "site": "http://127.0.0.1:8123/",
        "datagouv_api": "http://127.0.0.1:8123/api/",
        "tabular_api": "http://127.0.0.1:8123/tabular/api/",
        "metrics_api": "http://127.0.0.1:8123/metrics/api/",
        "crawler_api": "http://127.0.0.1:8123/crawler/api/",
    }
    assert TwinUrls.live().tabular_api == "https://tabular-api.data.gouv.fr/api/"
    assert TwinUrls.from_mapping(urls.as_dict()) == urls
    assert urls.external("https://data.geopf.fr/geocodage/openapi.yaml") == (
        "http://127.0.0.1:8123/_ext/data.geopf.fr/geocodage/openapi.yaml"
    )
    with pytest.raises(ValueError, match="must end with '/'"):
        TwinUrls("a", "b/", "c/", "d/", "e/")
    with pytest.raises(ValueError, match="missing"):
        TwinUrls.from_mapping({"site": "x/"})


def test_smoke_over_a_real_socket(live_twin: TwinUrls) -> None:
    assert live_twin.site.startswith("http://127.0.0.1:")
    with httpx.Client(timeout=10) as http:
        health = http.get(live_twin.site + "_twin/health").json()
        assert health["status"] == "ok" and health["urls"] == live_twin.as_dict()
        dataset = http.get(live_twin.datagouv_api + "1/datasets/55e4129788ee386899a46ec1/").json()
        assert dataset["title"] == "Transports"
        found = http.get(
            live_twin.datagouv_api + "2/datasets/search/", params={"q": "catalogue data.gouv.fr"}
        ).json()
        assert found["data"][0]["id"] == "5d13a8b6634f41070a43dff3"
        before = http.get(
            live_twin.tabular_api + "resources/f868cca6-8da1-4369-a78d-47463f19a9a3/data/",
            params={"created_at__strictly_less": "2012-06-28", "page_size": 1},
            # The first read derives the 120,903-row export (about 1.5 s of CPU, more under load).
            timeout=60,
        ).json()
        assert before["meta"]["total"] == 2066
        gers = http.get(
            live_twin.tabular_api + "resources/ea4f5879-af40-4e3e-949d-812d6eeb5e02/data/",
            params={"dep_code__exact": "32", "page_size": 1},
        ).json()
        assert gers["meta"]["total"] == 1023
        assert gers["links"]["next"].startswith(live_twin.tabular_api)
        metrics = http.get(
            live_twin.metrics_api + "datasets/data/",
            params={
                "dataset_id__exact": "55e4129788ee386899a46ec1",
                "metric_month__sort": "desc",
                "page_size": 3,
            },
        ).json()
        assert len(metrics["data"]) == 3
        assert http.get(live_twin.crawler_api + "resources-exceptions").json()
        spec_url = http.get(
            live_twin.datagouv_api + "1/dataservices/672cf67802ef6b1be63b8975/"
        ).json()["machine_documentation_url"]
        assert spec_url.startswith(live_twin.site) and http.get(spec_url).text.startswith(
            "openapi:"
        )
        download = http.get(
            live_twin.site + "datasets/r/3b6b2281-b9d9-4959-ae9d-c2c166dff118",
            follow_redirects=True,
        )
        assert download.status_code == 200 and download.text.startswith("Code du département;")


def test_concurrent_requests_are_all_answered(live_twin: TwinUrls) -> None:
    queries = ["transport", "éducation", "santé", "énergie", "élections"] * 8

    def search(query: str) -> int:
        with httpx.Client(timeout=10) as http:
            response = http.get(
                live_twin.datagouv_api + "2/datasets/search/", params={"q": query, "page_size": 5}
            )
            return response.status_code

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert set(pool.map(search, queries)) == {200}


def test_server_refuses_non_loopback_hosts() -> None:
    with pytest.raises(ValueError, match="loopback only"):
        TwinServer(host="0.0.0.0")


def test_server_stops_and_releases_its_port(store: object) -> None:
    server = TwinServer(store)  # type: ignore[arg-type]
    urls = server.start()
    server.stop()
    with pytest.raises(httpx.ConnectError):
        httpx.get(urls.site + "_twin/health", timeout=1)


def test_cli_prints_urls_and_builds_a_snapshot(tmp_path: object) -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["twin", "urls", "--port", "9000"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["tabular_api"] == "http://127.0.0.1:9000/tabular/api/"
    built = runner.invoke(main, ["twin", "build-snapshot", "--out", str(tmp_path)])
    assert built.exit_code == 0, built.output
    assert "wrote snapshot twin-" in built.output
    help_text = runner.invoke(main, ["twin", "serve", "--help"])
    assert "--port" in help_text.output and "--snapshot" in help_text.output
