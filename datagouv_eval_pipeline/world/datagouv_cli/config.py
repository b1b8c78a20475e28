"""Configuration of the emulated ``datagouv`` CLI: the config file, environment overrides, client.

The real CLI (reference ``datagouv-toolsets.md`` §3) keeps ``{"environment", "api_key"?}`` in
``~/.datagouv_config.json`` and builds a ``datagouv.Client`` from it with the header
``User-Agent: datagouv-cli/<version>``. The library hard-codes its hosts
(``https://{www|demo|dev}.data.gouv.fr``), so this emulation adds environment overrides that let
the sandbox point the same code at the local twin with nothing but variables:

* ``DATAGOUV_CLI_BASE_URL``: the site root the library builds ``/api/1/…``, ``/api/2/…`` from
  (``TwinUrls.site``, e.g. ``http://127.0.0.1:8765/``). A trailing ``/`` or ``/api/`` is accepted.
* ``DATAGOUV_CLI_RETRY_WAIT``: seconds between the library's retries (its default is an
  exponential 4-10 s wait, about 20 s before an unknown id fails); ``0`` keeps the retries and
  their messages but does not sleep.

The datagouv library is imported lazily so that ``--help`` and ``--version`` stay fast.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

CLI_VERSION = "0.4.2"
"""The release of the official ``datagouv-cli`` whose behaviour this command reproduces."""

CONFIG_FILE_NAME = ".datagouv_config.json"
BASE_URL_ENV = "DATAGOUV_CLI_BASE_URL"
RETRY_WAIT_ENV = "DATAGOUV_CLI_RETRY_WAIT"
ENVIRONMENTS = ("www", "prod", "demo", "dev")

NO_CONFIG_WARNING = (
    "WARNING:root:No config has been specified, defaulting to prod environment. "
    "Run `datagouv setup` to create a config file and get rid of this message."
)


class ConfigError(ValueError):
    """An environment override or the config file is unusable (message names which and why)."""


@dataclass(frozen=True)
class CliConfig:
    """What one invocation runs with.

    Attributes:
        environment: ``www``, ``prod``, ``demo`` or ``dev`` (from the config file; ``www``
            when there is none, as the library defaults).
        api_key: The API key from the config file, or None. Never printed.
        base_url: The site root the library will use (no trailing slash).
        from_file: Whether a config file was found.
    """

    environment: str
    api_key: str | None
    base_url: str
    from_file: bool

    def __repr__(self) -> str:
        # Keep the key out of any repr that may end up in a log or a traceback.
        key = "***" if self.api_key else None
        return (
            f"CliConfig(environment={self.environment!r}, api_key={key!r}, "
            f"base_url={self.base_url!r}, from_file={self.from_file!r})"
        )


def user_agent() -> str:
    """The ``User-Agent`` the real CLI sends (it replaces the library's ``datagouv-python/…``)."""
    return f"datagouv-cli/{CLI_VERSION}"


def config_path() -> Path:
    """``~/.datagouv_config.json``, resolved at call time (the sandbox sets ``HOME``)."""
    return Path.home() / CONFIG_FILE_NAME


def save_config(environment: str, api_key: str | None) -> Path:
    """Write the config file as the real CLI does (the key only when not blank).

    The file is created readable by its owner only, since it may hold an API key.
    """
    config: dict[str, str] = {"environment": environment}
    if api_key:
        config["api_key"] = api_key
    path = config_path()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(config))
    return path


def delete_config() -> None:
    """Remove the config file; like the real CLI, a missing file raises FileNotFoundError."""
    config_path().unlink()


def site_base_url(environment: str) -> str:
    """The library's own base URL for an environment (``https://www.data.gouv.fr`` …)."""
    host = "www" if environment in ("www", "prod") else environment
    return f"https://{host}.data.gouv.fr"


def base_url_override(environ: dict[str, str] | os._Environ[str] | None = None) -> str | None:
    """The ``DATAGOUV_CLI_BASE_URL`` override, normalised to a root without trailing slash.

    Raises:
        ConfigError: When the value is not an absolute http(s) URL.
    """
    env = os.environ if environ is None else environ
    raw = env.get(BASE_URL_ENV, "").strip()
    if not raw:
        return None
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(
            f"{BASE_URL_ENV}={raw!r}: expected an absolute http(s) URL of the site root, "
            "e.g. http://127.0.0.1:8765/"
        )
    path = parts.path.rstrip("/")
    # Accept the API root too (TwinUrls.datagouv_api): the library appends /api/1 itself.
    if path.endswith("/api"):
        path = path[: -len("/api")]
    return f"{parts.scheme}://{parts.netloc}{path}"


def retry_wait_override(environ: dict[str, str] | os._Environ[str] | None = None) -> float | None:
    """The ``DATAGOUV_CLI_RETRY_WAIT`` value in seconds, or None for the library's default.

    Raises:
        ConfigError: When the value is not a non-negative number.
    """
    env = os.environ if environ is None else environ
    raw = env.get(RETRY_WAIT_ENV, "").strip()
    if not raw:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:  # also rejects NaN
        raise ConfigError(f"{RETRY_WAIT_ENV}={raw!r}: expected a number of seconds >= 0")
    return seconds


def load_config(*, warn: bool = True) -> CliConfig:
    """Read the config file and the environment overrides.

    Without a config file the real CLI logs a warning on stderr and uses prod; this does the same
    (``warn=False`` silences it for callers that are not the CLI).

    Raises:
        ConfigError: When the config file is not a JSON object with string values, names an
            unknown environment, or an override is malformed.
    """
    path = config_path()
    data: dict[str, Any] = {}
    from_file = path.exists()
    if from_file:
        try:
            loaded = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as error:
            raise ConfigError(f"{path}: not readable as JSON ({error})") from None
        if not isinstance(loaded, dict):
            raise ConfigError(f"{path}: expected a JSON object, got {type(loaded).__name__}")
        data = loaded
    elif warn:
        print(NO_CONFIG_WARNING, file=sys.stderr)
    environment = data.get("environment", "www")
    if not isinstance(environment, str) or environment not in ENVIRONMENTS:
        raise ConfigError(
            f"{path}: field 'environment' must be one of {list(ENVIRONMENTS)}, got {environment!r}"
        )
    api_key = data.get("api_key")
    if api_key is not None and not isinstance(api_key, str):
        raise ConfigError(f"{path}: field 'api_key' must be a string")
    override = base_url_override()
    return CliConfig(
        environment=environment,
        api_key=api_key or None,
        base_url=override or site_base_url(environment),
        from_file=from_file,
    )


def make_client(config: CliConfig) -> Any:
    """A ``datagouv.Client`` configured like the real CLI's, aimed at ``config.base_url``.

    The library exposes no base-URL parameter; ``Client.base_url`` is a plain attribute that every
    object reads when it builds its URIs, so setting it right after construction redirects all of
    ``/api/1``, ``/api/2`` and the resource lookups.
    """
    from datagouv import Client  # type: ignore[import-untyped]

    client = Client(
        environment=config.environment,
        api_key=config.api_key,
        headers={"User-Agent": user_agent()},
    )
    client.base_url = config.base_url
    return client


def _retrying_functions() -> Iterator[Any]:
    """Every tenacity-wrapped method of the library (each has its own ``Retrying`` object)."""
    import tenacity
    from datagouv.api import (  # type: ignore[import-untyped]
        dataset,
        organization,
        resource,
        topic,
    )
    from datagouv.utils import base_object  # type: ignore[import-untyped]

    seen: set[int] = set()
    for module in (base_object, dataset, organization, resource, topic):
        for value in vars(module).values():
            if not isinstance(value, type):
                continue
            for member in vars(value).values():
                retrying = getattr(member, "retry", None)
                if isinstance(retrying, tenacity.Retrying) and id(retrying) not in seen:
                    seen.add(id(retrying))
                    yield retrying


@contextlib.contextmanager
def library_retry_wait(seconds: float | None) -> Iterator[None]:
    """Within the block, the library waits ``seconds`` between retries (None: unchanged).

    The number of attempts and the ``Retrying … due to …`` lines stay as in the library.
    """
    if seconds is None:
        yield
        return
    import tenacity

    saved = [(retrying, retrying.wait) for retrying in _retrying_functions()]
    wait = tenacity.wait_none() if seconds == 0 else tenacity.wait_fixed(seconds)
    for retrying, _ in saved:
        retrying.wait = wait
    try:
        yield
    finally:
        for retrying, previous in saved:
            retrying.wait = previous
