"""The hostname front before a real twin: production URLs, unmodified clients, refusals."""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from cryptography import x509

from datagouv_eval_pipeline.world.api.front import twin_front
from datagouv_eval_pipeline.world.api.server import TwinServer
from datagouv_eval_pipeline.world.catalogue.catalog import CatalogStore
from datagouv_eval_pipeline.world.front import CertificateAuthority, Front

TRANSPORTS = "55e4129788ee386899a46ec1"
TRANSPORTS_CSV = "d8581b5b-3372-4e73-9323-036e543e2bef"  # 144 rows in the Tabular API
CATALOGUE_EXPORT = "f868cca6-8da1-4369-a78d-47463f19a9a3"  # 79 MB: the real catalogue's rows


@pytest.fixture(scope="module")
def twin() -> Iterator[TwinServer]:
    server = TwinServer(CatalogStore.load(), mcp_versions=())
    with server:
        yield server


@pytest.fixture(scope="module")
def front(twin: TwinServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Front]:
    with twin_front(twin, home=tmp_path_factory.mktemp("twin-home")) as running:
        yield running


def _client(front: Front) -> httpx.Client:
    env = front.client_env()
    return httpx.Client(
        proxy=env["HTTPS_PROXY"], verify=ssl.create_default_context(cafile=env["SSL_CERT_FILE"])
    )


def test_links_are_production_urls_and_pages_follow(front: Front) -> None:
    with _client(front) as client:
        first = client.get("https://www.data.gouv.fr/api/1/datasets/", params={"page_size": 2})
        assert first.status_code == 200
        body = first.json()
        assert body["next_page"] == "https://www.data.gouv.fr/api/1/datasets/?page_size=2&page=2"
        second = client.get(body["next_page"]).json()
        assert second["page"] == 2
        assert {d["id"] for d in body["data"]}.isdisjoint(d["id"] for d in second["data"])
        dataset = client.get(f"https://www.data.gouv.fr/api/1/datasets/{TRANSPORTS}/").json()
        assert dataset["page"] == "https://www.data.gouv.fr/datasets/transports/"
        rows = client.get(
            f"https://tabular-api.data.gouv.fr/api/resources/{TRANSPORTS_CSV}/data/",
            params={"page_size": 50},
        ).json()
        # The next link is on the Tabular host, with the public path, and it works.
        assert rows["links"]["next"].startswith(
            f"https://tabular-api.data.gouv.fr/api/resources/{TRANSPORTS_CSV}/data/?"
        )
        seen = len(rows["data"])
        while rows["links"].get("next"):
            rows = client.get(rows["links"]["next"]).json()
            seen += len(rows["data"])
        assert seen == 144


def test_downloads_metrics_and_crawler_through_the_front(front: Front) -> None:
    with _client(front) as client:
        download = client.get(
            f"https://www.data.gouv.fr/fr/datasets/r/{TRANSPORTS_CSV}", follow_redirects=True
        )
        assert download.status_code == 200
        assert download.url.host == "static.data.gouv.fr"
        assert download.history[0].status_code == 302
        assert download.text.count("\n") >= 144
        metrics = client.get(
            "https://metric-api.data.gouv.fr/api/datasets/data/",
            params={"dataset_id__exact": TRANSPORTS},
        )
        assert metrics.status_code == 200
        assert all(row["dataset_id"] == TRANSPORTS for row in metrics.json()["data"])
        crawler = client.get("https://crawler.data.gouv.fr/api/resources-exceptions")
        assert crawler.status_code == 200
        assert isinstance(crawler.json(), list)


def test_other_hosts_are_refused_by_name(front: Front) -> None:
    with _client(front) as client, pytest.raises(httpx.ProxyError) as refused:
        client.get("https://example.org/")
    assert "403" in str(refused.value)
    plain = httpx.get("http://example.org/x", proxy=front.proxy_url)
    assert plain.status_code == 403
    assert "example.org:80 is not allowed" in plain.text
    assert "www.data.gouv.fr" in plain.text and "tabular-api.data.gouv.fr" in plain.text
    assert "example.org:443" in front.refused and "example.org:80" in front.refused


def test_every_forwarded_request_is_recorded(front: Front) -> None:
    front.take_wire_requests()
    with _client(front) as client:
        client.get("https://www.data.gouv.fr/api/1/datasets/no-such-dataset/")
        client.get("https://www.data.gouv.fr/api/1/site/")
    records = front.take_wire_requests()
    assert [(r.method, r.url, r.status) for r in records] == [
        ("GET", "https://www.data.gouv.fr/api/1/datasets/no-such-dataset/", 404),
        ("GET", "https://www.data.gouv.fr/api/1/site/", 200),
    ]
    assert records[1].bytes > 0 and records[1].duration_ms > 0


def test_a_download_cut_short_by_the_client_is_recorded(front: Front) -> None:
    """A client that hangs up mid-body (a full disk) still sent the request: it is on record."""
    catalogue = "https://www.data.gouv.fr/api/1/datasets/catalogue-des-donnees-de-data-gouv-fr/"
    front.take_wire_requests()
    with _client(front) as client:
        resources = client.get(catalogue).json()["resources"]
        url = next(r["url"] for r in resources if r["id"] == CATALOGUE_EXPORT)
        # The twin writes the 79 MB file before its first byte: a few seconds.
        with client.stream("GET", url, timeout=120) as answer:
            length = int(answer.headers["content-length"])
            first = next(answer.iter_raw(65536))
        # Closing the client drops its connection, the body mostly unread.
    records = front.take_wire_requests()
    assert [(r.url, r.status) for r in records] == [(catalogue, 200), (url, 200)]
    # The front holds back to the client's pace: it relayed a fraction, not the whole body.
    assert len(first) <= records[1].bytes < length / 2


@pytest.mark.parametrize("client", ["requests", "urllib", "curl"])
def test_unmodified_clients_in_a_subprocess(front: Front, client: str) -> None:
    """``client_env()`` is all a process needs: no code change, production URLs."""
    url = f"https://tabular-api.data.gouv.fr/api/resources/{TRANSPORTS_CSV}/data/?page_size=1"
    programs = {
        "requests": ["import requests,sys", f"print(requests.get({url!r}).text)"],
        "urllib": [
            "import urllib.request",
            f"print(urllib.request.urlopen({url!r}).read().decode())",
        ],
    }
    env = {**os.environ, **front.client_env()}
    if client == "curl":
        command = ["curl", "-sS", "--fail", url]
    else:
        command = [sys.executable, "-c", "\n".join(programs[client])]
    answer = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert answer.returncode == 0, answer.stderr
    assert json.loads(answer.stdout)["meta"]["total"] == 144


def test_the_ca_is_made_once_per_home_and_signs_leaves(tmp_path: Path) -> None:
    first = CertificateAuthority.load_or_create(tmp_path)
    again = CertificateAuthority.load_or_create(tmp_path)
    assert first.ca_path.read_bytes() == again.ca_path.read_bytes()
    assert (tmp_path / "front" / "ca-key.pem").stat().st_mode & 0o077 == 0
    leaf = x509.load_pem_x509_certificate(first.leaf_path("www.data.gouv.fr").read_bytes())
    names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["www.data.gouv.fr"]
    ca = x509.load_pem_x509_certificate(first.ca_path.read_bytes())
    leaf.verify_directly_issued_by(ca)
    # The bundle trusts the public roots too (a live run passes real hosts through).
    assert first.bundle_path.read_bytes().count(b"BEGIN CERTIFICATE") > 100
    with pytest.raises(ValueError, match="not a DNS host name"):
        first.leaf_path("../etc/passwd")


def test_twin_env_prints_the_exports_of_the_running_front(twin: TwinServer, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from datagouv_eval_pipeline.cli import main
    from datagouv_eval_pipeline.world.api.front import forget_running, record_running

    home = tmp_path / "home"
    missing = CliRunner().invoke(main, ["twin", "env", "--home", str(home)])
    assert missing.exit_code != 0
    assert "no running twin front recorded" in missing.output
    assert "datagouv-eval twin serve" in missing.output
    with twin_front(twin, home=home) as front:
        record_running(front, twin.urls, home=home)
        result = CliRunner().invoke(main, ["twin", "env", "--home", str(home)])
        assert result.exit_code == 0, result.output
        assert f"export HTTPS_PROXY={front.proxy_url}\n" in result.output
        script = result.output + 'curl -sS --fail "https://www.data.gouv.fr/api/1/site/"'
        shell = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=30)
        assert shell.returncode == 0, shell.stderr
        assert json.loads(shell.stdout)["id"] == "www.data.gouv.fr"
        forget_running(front, home=home)
    stale = CliRunner().invoke(main, ["twin", "env", "--home", str(home)])
    assert stale.exit_code != 0


def test_twin_env_finds_the_running_front_from_another_folder(
    twin: TwinServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from datagouv_eval_pipeline.cli import main
    from datagouv_eval_pipeline.world.api.front import POINTER_ENV, forget_running, record_running
    from datagouv_eval_pipeline.world.front.home import TWIN_HOME_ENV

    monkeypatch.setenv(POINTER_ENV, str(tmp_path / "pointer"))
    monkeypatch.delenv(TWIN_HOME_ENV, raising=False)
    home = tmp_path / "served-here" / ".twin"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with twin_front(twin, home=home) as front:
        record_running(front, twin.urls, home=home)
        monkeypatch.chdir(elsewhere)  # no ./.twin here
        result = CliRunner().invoke(main, ["twin", "env"])
        assert result.exit_code == 0, result.output
        assert f"export HTTPS_PROXY={front.proxy_url}\n" in result.output
        forget_running(front, home=home)
    gone = CliRunner().invoke(main, ["twin", "env"])
    assert gone.exit_code != 0 and "no running twin front recorded" in gone.output


def test_the_preflight_reads_the_twin_at_production_urls() -> None:
    from click.testing import CliRunner

    from datagouv_eval_pipeline.cli import main

    result = CliRunner().invoke(
        main, ["preflight", "--json", "--tasks", "task_specs/task_0003.yml"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["urls"]["tabular_api"] == "https://tabular-api.data.gouv.fr/api/"
    assert "127.0.0.1" not in result.output
    assert [task["status"] for task in report["tasks"]] == ["ok"]


def test_an_upstream_that_drops_kept_alive_connections_is_reconnected(tmp_path: Path) -> None:
    """uvicorn closes idle kept-alive connections; the client's next request must not fail."""
    import asyncio
    import threading

    from datagouv_eval_pipeline.world.front import ServedHosts

    answered: list[str] = []
    ready = threading.Event()
    port: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        answered.append(head.split(b" ")[1].decode())
        # A kept-alive answer (no Connection: close), then the connection is dropped anyway.
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
        writer.close()

    def serve() -> None:
        async def main() -> None:
            server = await asyncio.start_server(handle, "127.0.0.1", 0)
            port.append(server.sockets[0].getsockname()[1])
            ready.set()
            await asyncio.sleep(30)

        asyncio.run(main())

    threading.Thread(target=serve, daemon=True).start()
    ready.wait(10)
    served = ServedHosts(
        frozenset({"www.data.gouv.fr"}),
        ("127.0.0.1", port[0]),
        CertificateAuthority.load_or_create(tmp_path),
    )
    with served.front() as front, _client(front) as client:
        statuses = [client.get(f"https://www.data.gouv.fr/{n}").status_code for n in range(3)]
    assert statuses == [200, 200, 200]
    assert answered == ["/0", "/1", "/2"]


def test_pass_through_chains_to_the_hosts_proxy(front: Front) -> None:
    """A pass-through proxy with ``via`` tunnels through another proxy (a gateway; here the front).

    That is the sandbox's proxy in a live run behind ``HTTPS_PROXY``: the allowed host is
    reached through the outer proxy, whose certificates the client trusts via its CA bundle.
    """
    from datagouv_eval_pipeline.world.front import AllowList

    outer = urlsplit(front.proxy_url)
    assert outer.hostname is not None and outer.port is not None
    allowed = AllowList.parse(["www.data.gouv.fr:443"])
    env = front.client_env()
    with Front(passthrough=allowed, via=(outer.hostname, outer.port), name="inner") as inner:
        verify = ssl.create_default_context(cafile=env["SSL_CERT_FILE"])
        with httpx.Client(proxy=inner.proxy_url, verify=verify) as client:
            site = client.get("https://www.data.gouv.fr/api/1/site/")
            assert site.status_code == 200
            with pytest.raises(httpx.ProxyError, match="403"):
                client.get("https://tabular-api.data.gouv.fr/api/")  # not on the inner list
        assert next((r.method, r.url, r.status) for r in inner.wire_requests()) == (
            "CONNECT",
            "https://www.data.gouv.fr:443",
            200,
        )
    # The outer proxy refusing the tunnel is a 502 naming it, not a hang.
    with Front(passthrough="all", via=(outer.hostname, outer.port), name="inner") as inner:
        answer = httpx.get("http://example.org/x", proxy=inner.proxy_url)
        assert answer.status_code == 502
        assert f"{outer.hostname}:{outer.port} refused example.org:80" in answer.text
