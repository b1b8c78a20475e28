"""The pipeline's own loopback requests never go through the machine's proxy."""

from __future__ import annotations

import http.server
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator

import pytest

from datagouv_eval_pipeline.base.loopback import exempt_loopback_from_proxies


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, {}),  # no proxy: nothing to exempt, nothing written
        (
            {"HTTPS_PROXY": "http://proxy:3128"},
            {"NO_PROXY": "127.0.0.1,localhost,::1", "no_proxy": "127.0.0.1,localhost,::1"},
        ),
        (
            {"http_proxy": "http://proxy:3128", "no_proxy": "intranet, localhost"},
            {
                "NO_PROXY": "intranet,localhost,127.0.0.1,::1",
                "no_proxy": "intranet,localhost,127.0.0.1,::1",
            },
        ),
        ({"HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": "*"}, {"NO_PROXY": "*"}),
    ],
)
def test_loopback_names_are_added_to_no_proxy_only_when_a_proxy_is_set(
    environ: dict[str, str], expected: dict[str, str]
) -> None:
    env = dict(environ)
    exempt_loopback_from_proxies(env)
    proxies = {name: value for name, value in env.items() if "no_proxy" in name.lower()}
    assert proxies == expected


@pytest.fixture
def local_server() -> Iterator[int]:
    class Answer(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"local")

        def log_message(self, *_args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


def test_a_process_behind_a_dead_proxy_still_reaches_its_loopback_servers(
    local_server: int,
) -> None:
    # A proxy that refuses every connection (port 9, discard): without the exemption httpx and
    # the OpenAI SDK send 127.0.0.1 requests to it and fail (a CI machine's proxy answers 502).
    code = textwrap.dedent(
        f"""
        import datagouv_eval_pipeline, httpx, requests
        print(httpx.get("http://127.0.0.1:{local_server}/", timeout=5).text)
        print(requests.get("http://localhost:{local_server}/", timeout=5).text)
        """
    )
    dead = "http://127.0.0.1:9"
    env = {"PATH": "/usr/bin:/bin", "HTTPS_PROXY": dead, "HTTP_PROXY": dead, "http_proxy": dead}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["local", "local"]
