"""The allow-listing proxy on its own: the list's grammar and what goes through it."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from datagouv_eval_pipeline.world.front import AllowList, Front
from datagouv_eval_pipeline.world.sandbox._common import session_proxy

from .conftest import Server


def test_allow_list_grammar() -> None:
    allow = AllowList.parse(
        [
            "www.data.gouv.fr",
            "127.0.0.1:8765",
            "https://tabular-api.data.gouv.fr",
            "http://Example.ORG:8080/",
            "[::1]:9000",
        ]
    )
    assert allow.pairs == {
        ("www.data.gouv.fr", 80),
        ("www.data.gouv.fr", 443),
        ("127.0.0.1", 8765),
        ("tabular-api.data.gouv.fr", 443),
        ("example.org", 8080),
        ("::1", 9000),
    }
    assert allow.allows("WWW.data.gouv.fr.", 443)
    assert not allow.allows("www.data.gouv.fr", 8443)
    assert not allow.allows("127.0.0.1", 8766)
    assert not allow.allows("127.1", 8765)  # names are compared, never resolved


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("", "expected host"),
        ("*.data.gouv.fr", "expected host"),
        ("host:99999", "bad port"),
        ("host:abc", "bad port"),
        ("www.data.gouv.fr/api", "not a path"),
        ("https://www.data.gouv.fr/api/1/", "not a path"),
        ("ftp://files.example.org", "only http"),
    ],
)
def test_allow_list_rejects_bad_entries(entry: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as caught:
        AllowList.parse([entry])
    assert repr(entry) in str(caught.value)


@pytest.fixture
def proxy(tmp_path: Path, servers: tuple[Server, Server]) -> Iterator[Front]:
    allowed, _ = servers
    with session_proxy(tmp_path, AllowList.parse([allowed.hostport]), None) as p:
        yield p


def _exchange(proxy: Front, request: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        assert proxy.socket_path is not None
        sock.connect(proxy.socket_path)
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_plain_http_is_forwarded_only_to_allowed_hosts(
    proxy: Front, servers: tuple[Server, Server]
) -> None:
    allowed, forbidden = servers
    ok = _exchange(proxy, f"GET {allowed.url}/a?b=1 HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    assert ok.startswith(b"HTTP/1.0 200") and ok.endswith(b"hello from allowed")
    refused = _exchange(proxy, f"GET {forbidden.url}/a HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    head, _, body = refused.partition(b"\r\n\r\n")
    assert head.startswith(
        f"HTTP/1.1 403 Forbidden by sandbox proxy: {forbidden.hostport} is not allowed".encode()
    )
    assert body.decode() == (
        f"sandbox proxy: {forbidden.hostport} is not allowed: this proxy answers for "
        f"{allowed.hostport}; the request was not sent\n"
    )
    assert allowed.paths == ["/a?b=1"] and forbidden.paths == []
    assert proxy.refused == [forbidden.hostport]


def test_connect_tunnels_only_to_allowed_hosts(
    proxy: Front, servers: tuple[Server, Server]
) -> None:
    allowed, forbidden = servers
    tunnel = (
        f"CONNECT {allowed.hostport} HTTP/1.1\r\n\r\n"
        "GET /through-tunnel HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    answer = _exchange(proxy, tunnel.encode())
    assert answer.startswith(b"HTTP/1.1 200 Connection Established\r\n\r\nHTTP/1.0 200")
    assert allowed.paths == ["/through-tunnel"]
    refused = _exchange(proxy, f"CONNECT {forbidden.hostport} HTTP/1.1\r\n\r\n".encode())
    assert refused.startswith(b"HTTP/1.1 403")
    assert forbidden.paths == []


def test_requests_that_are_not_proxy_requests_are_rejected(proxy: Front) -> None:
    origin_form = _exchange(proxy, b"GET /etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n")
    assert origin_form.startswith(b"HTTP/1.1 400") and b"absolute http:// URL" in origin_form
    garbage = _exchange(proxy, b"HELLO\r\n\r\n")
    assert garbage.startswith(b"HTTP/1.1 400")
    assert proxy.refused == []


def test_stopping_the_proxy_removes_its_socket(tmp_path: Path) -> None:
    path = tmp_path / "p.sock"
    proxy = Front(socket_path=str(path), passthrough=AllowList.parse([]))
    proxy.start()
    assert path.is_socket()
    proxy.stop()
    assert not path.exists()
    with socket.socket(socket.AF_UNIX) as sock, pytest.raises(OSError):
        sock.connect(str(path))
