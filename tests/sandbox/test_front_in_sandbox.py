"""Inside the real bubblewrap sandbox, unmodified clients reach the twin at production URLs.

The sandbox's proxy is the hostname front: httpx, requests, urllib, curl, the datagouv-client
library and the emulated ``datagouv`` CLI read the twin through ``https://www.data.gouv.fr/…``
and the other production hosts, with no patch and no twin URL; another host is refused by name.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from datagouv_eval_pipeline.pipeline.agents.capabilities import (
    CatalogTarget,
    default_sandbox,
    runner_program,
)
from datagouv_eval_pipeline.world.api.front import served_by
from datagouv_eval_pipeline.world.api.server import TwinServer
from datagouv_eval_pipeline.world.catalogue.catalog import CatalogStore
from datagouv_eval_pipeline.world.front import ServedHosts
from datagouv_eval_pipeline.world.sandbox.local import LocalSandbox, LocalSession, probe_bwrap

from .conftest import run

TRANSPORTS = "55e4129788ee386899a46ec1"
TRANSPORTS_CSV = "d8581b5b-3372-4e73-9323-036e543e2bef"  # 144 rows: 3 Tabular pages of 50
TABULAR = f"https://tabular-api.data.gouv.fr/api/resources/{TRANSPORTS_CSV}/data/"


@pytest.fixture(scope="module")
def sandbox() -> LocalSandbox:
    problem = probe_bwrap()
    if problem is not None:
        pytest.skip(f"bwrap mode not tested: {problem}")
    backend = default_sandbox()
    assert isinstance(backend, LocalSandbox)
    return backend


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedHosts]:
    with TwinServer(CatalogStore.load(), mcp_versions=()) as urls:
        yield served_by(urls, home=tmp_path_factory.mktemp("twin-home"))


def _session(sandbox: LocalSandbox, served: ServedHosts) -> tuple[LocalSession, CatalogTarget]:
    target = CatalogTarget(urls=CatalogTarget.live().urls, offline=True, served=served)
    session = run(
        sandbox.open_session(
            allowed_hosts=target.sandbox_hosts(), env=target.sandbox_env(), served=served
        )
    )
    assert isinstance(session, LocalSession)
    return session, target


PROGRAM = f"""
import json, os, urllib.request
import httpx, requests
from datagouv import Dataset, Resource

out = {{}}
page = httpx.get("https://www.data.gouv.fr/api/1/datasets/", params={{"page_size": 3}}).json()
out["next_page"] = page["next_page"]
out["page2"] = httpx.get(page["next_page"]).json()["page"]
out["resources"] = [
    r["id"] for r in requests.get(
        "https://www.data.gouv.fr/api/2/datasets/{TRANSPORTS}/resources/").json()["data"]
]
rows = []
url = "{TABULAR}?page_size=50"
while url:
    answer = requests.get(url).json()
    rows += answer["data"]
    url = answer["links"].get("next")
out["rows_requests"] = len(rows)
with urllib.request.urlopen(
    "https://metric-api.data.gouv.fr/api/datasets/data/?dataset_id__exact={TRANSPORTS}"
) as answer:
    ids = {{row["dataset_id"] for row in json.load(answer)["data"]}}
out["metrics"] = ids == {{"{TRANSPORTS}"}}
out["client_rows"] = sum(1 for _ in Resource("{TRANSPORTS_CSV}").rows())
out["client_title"] = Dataset("{TRANSPORTS}").title
try:
    httpx.get("https://example.org/")
except httpx.ProxyError as error:
    out["refused"] = str(error)
out["env"] = os.environ.get("DATAGOUV_TABULAR_API_URL")
print(json.dumps(out))
"""


def test_unmodified_clients_read_the_twin_at_production_urls(
    sandbox: LocalSandbox, served: ServedHosts
) -> None:
    session, _ = _session(sandbox, served)
    try:
        result = run(session.run_python(runner_program(PROGRAM)))
        assert result.ok, result.stderr
        out = json.loads(result.stdout)
        download = run(
            session.run_command(
                [
                    "curl",
                    "-sS",
                    "-L",
                    "--fail",
                    f"https://www.data.gouv.fr/fr/datasets/r/{TRANSPORTS_CSV}",
                ]
            )
        )
        refused = run(session.run_command(["curl", "-sS", "https://example.org/"]))
        cli = run(session.run_command(["datagouv", "dataset", "get", TRANSPORTS]))
        wire = session.take_wire_requests()
    finally:
        run(session.close())
    assert out["next_page"] == "https://www.data.gouv.fr/api/1/datasets/?page_size=3&page=2"
    assert out["page2"] == 2
    assert TRANSPORTS_CSV in out["resources"]
    assert out["rows_requests"] == 144
    assert out["client_rows"] == 144  # Resource.rows() follows the Tabular next links
    assert out["client_title"] == "Transports"
    assert out["metrics"] is True
    assert "403" in out["refused"]
    assert out["env"] == "https://tabular-api.data.gouv.fr/api/"
    assert download.ok, download.stderr
    assert download.stdout.count("\n") >= 144
    assert refused.exit_code != 0 and "403" in refused.stderr
    assert cli.ok, cli.stderr
    assert json.loads(cli.stdout)["id"] == TRANSPORTS
    # The proxy saw every request, by its production URL; the refusals too.
    urls = [request.url for request in wire]
    assert all("127.0.0.1" not in url for url in urls)
    assert f"https://www.data.gouv.fr/fr/datasets/r/{TRANSPORTS_CSV}" in urls
    assert any(url.startswith("https://static.data.gouv.fr/") for url in urls)
    assert sum(url.startswith(TABULAR) for url in urls) >= 6  # two readers, three pages each
    assert [r.status for r in wire if r.url == "https://example.org:443"] == [403, 403]
    assert session.refused_hosts == ["example.org:443", "example.org:443"]


def test_the_twin_home_is_not_visible_inside(sandbox: LocalSandbox, served: ServedHosts) -> None:
    session, _ = _session(sandbox, served)
    home = str(served.authority.directory)
    code = (
        "import os, json\n"
        f"print(json.dumps([os.path.exists({home!r}), os.environ['SSL_CERT_FILE'],"
        " os.path.isfile(os.environ['SSL_CERT_FILE'])]))"
    )
    try:
        result = run(session.run_python(code))
    finally:
        run(session.close())
    exists, bundle, readable = json.loads(result.stdout)
    # The CA's key stays outside; the sandbox gets a copy of the public bundle only.
    assert exists is False
    assert readable is True and Path(bundle).name == "ca-bundle.pem"
