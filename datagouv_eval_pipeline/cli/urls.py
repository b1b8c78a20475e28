"""URL options (``--judge-base-url``, ``--model-base-url``, ``--upstream``), checked when given.

A value that is not an absolute http(s) URL is a usage error naming the option, instead of
minutes of connection errors once the requests start.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import click


class HttpUrl(click.ParamType[str]):
    """An absolute ``http://`` or ``https://`` URL with a host, e.g. ``http://127.0.0.1:8000/v1``."""

    name = "URL"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> str:
        """Return the URL unchanged, or fail saying what was expected."""
        text = str(value).strip()
        try:
            parts = urlsplit(text)
            port = parts.port  # raises on a port that is not a number or out of range
        except ValueError as error:
            self.fail(f"{text!r} is not a URL ({error})", param, ctx)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            self.fail(
                f"{text!r} is not an http(s) URL; expected e.g. http://127.0.0.1:8000/v1",
                param,
                ctx,
            )
        del port
        return text


HTTP_URL = HttpUrl()
"""The parameter type of every URL option."""
