"""Configuration: the config file, the environment overrides, the client and the retry wait."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tenacity

from datagouv_eval_pipeline.world.datagouv_cli import config as cli_config
from datagouv_eval_pipeline.world.datagouv_cli.config import (
    BASE_URL_ENV,
    RETRY_WAIT_ENV,
    CliConfig,
    ConfigError,
    base_url_override,
    library_retry_wait,
    load_config,
    make_client,
    retry_wait_override,
)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv(BASE_URL_ENV, raising=False)
    monkeypatch.delenv(RETRY_WAIT_ENV, raising=False)
    return tmp_path


def test_base_url_override_accepts_the_site_or_api_root() -> None:
    assert base_url_override({}) is None
    assert base_url_override({BASE_URL_ENV: "http://127.0.0.1:8765/"}) == "http://127.0.0.1:8765"
    assert base_url_override({BASE_URL_ENV: "http://127.0.0.1:8765/api/"}) == (
        "http://127.0.0.1:8765"
    )
    assert base_url_override({BASE_URL_ENV: "https://proxy.test/dg"}) == "https://proxy.test/dg"
    for bad in ("127.0.0.1:8765", "ftp://host/", "http://"):
        with pytest.raises(ConfigError, match=BASE_URL_ENV):
            base_url_override({BASE_URL_ENV: bad})


def test_retry_wait_override() -> None:
    assert retry_wait_override({}) is None
    assert retry_wait_override({RETRY_WAIT_ENV: "0"}) == 0.0
    assert retry_wait_override({RETRY_WAIT_ENV: "1.5"}) == 1.5
    for bad in ("-1", "soon", "nan"):
        with pytest.raises(ConfigError, match=RETRY_WAIT_ENV):
            retry_wait_override({RETRY_WAIT_ENV: bad})


def test_environments_map_to_the_library_hosts(home: Path) -> None:
    config = load_config(warn=False)
    assert (config.environment, config.base_url, config.from_file) == (
        "www",
        "https://www.data.gouv.fr",
        False,
    )
    expected = {
        "prod": "https://www.data.gouv.fr",
        "www": "https://www.data.gouv.fr",
        "demo": "https://demo.data.gouv.fr",
        "dev": "https://dev.data.gouv.fr",
    }
    for environment, url in expected.items():
        (home / ".datagouv_config.json").write_text(json.dumps({"environment": environment}))
        assert load_config(warn=False).base_url == url


def test_base_url_override_wins_over_the_environment(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (home / ".datagouv_config.json").write_text(json.dumps({"environment": "demo"}))
    monkeypatch.setenv(BASE_URL_ENV, "http://127.0.0.1:9/")
    config = load_config(warn=False)
    assert (config.environment, config.base_url) == ("demo", "http://127.0.0.1:9")


def test_a_bad_config_file_names_the_file_and_field(home: Path) -> None:
    path = home / ".datagouv_config.json"
    path.write_text(json.dumps({"environment": "staging"}))
    with pytest.raises(ConfigError, match=r"\.datagouv_config\.json: field 'environment'"):
        load_config(warn=False)
    path.write_text("[1, 2]")
    with pytest.raises(ConfigError, match="expected a JSON object"):
        load_config(warn=False)
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="not readable as JSON"):
        load_config(warn=False)


def test_client_headers_and_base_url() -> None:
    anonymous = make_client(CliConfig("www", None, "http://127.0.0.1:9", False))
    assert anonymous.session.headers["User-Agent"] == "datagouv-cli/0.4.2"
    assert "X-API-KEY" not in anonymous.session.headers
    assert anonymous.base_url == "http://127.0.0.1:9"
    assert anonymous.dataset("d1", fetch=False).uri == "http://127.0.0.1:9/api/1/datasets/d1/"
    keyed = CliConfig("demo", "k-123", "https://demo.data.gouv.fr", True)
    client = make_client(keyed)
    assert client.session.headers["X-API-KEY"] == "k-123"
    assert client._authenticated is True
    assert "k-123" not in repr(keyed)


def test_library_retry_wait_is_scoped() -> None:
    from datagouv.utils.base_object import BaseObject  # type: ignore[import-untyped]

    retrying = BaseObject.refresh.retry
    original = retrying.wait
    functions = list(cli_config._retrying_functions())
    assert len(functions) >= 8  # refresh, update, delete, extras, metrics, the creators...
    with library_retry_wait(0):
        assert isinstance(retrying.wait, tenacity.wait_none)
        # The attempts are unchanged: only the sleeps go.
        assert retrying.stop.max_attempt_number == 5
    assert retrying.wait is original
    with library_retry_wait(None):
        assert retrying.wait is original


def test_tracebacks_mask_secrets_and_always_have_a_header() -> None:
    from datagouv_eval_pipeline.world.datagouv_cli.render import render_traceback

    def failing(api_key: str) -> None:
        raise PermissionError(f"rejected key {api_key}")

    try:
        failing("k-secret-9")
    except PermissionError as error:
        text = render_traceback(error, ["k-secret-9", None])
    # The frame (a test file) is dropped, the header stays, the key is masked.
    assert text == "Traceback (most recent call last):\nPermissionError: rejected key ***\n"
