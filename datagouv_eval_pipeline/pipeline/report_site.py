"""Where the report is served over HTTP, and the small static server that serves it.

The Dagster UI cannot open ``file://`` links ("Not allowed to load local resource"), so the
asset metadata links to the report through HTTP: ``datagouv-eval dagster ui`` serves the report
directory on 127.0.0.1 (``DEFAULT_REPORT_PORT``) next to the UI, and ``datagouv-eval report
serve`` does the same on its own. The links' base URL is ``$DATAGOUV_EVAL_REPORT_URL`` when set
(a report published elsewhere), else the address the UI command serves.
"""

from __future__ import annotations

import functools
import http.server
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

REPORT_URL_ENV = "DATAGOUV_EVAL_REPORT_URL"
"""Base URL of the served report directory, as the asset metadata links to it."""
DEFAULT_REPORT_PORT = 8766
"""The port ``dagster ui`` and ``report serve`` serve the report on by default (the twin's
``twin serve`` default is 8765: both can run side by side)."""


def default_report_url(port: int = DEFAULT_REPORT_PORT) -> str:
    """The base URL of the report served on 127.0.0.1 at ``port``."""
    return f"http://127.0.0.1:{port}/"


def report_base_url(environ: Mapping[str, str] | None = None) -> str:
    """The base URL metadata links use, ending with ``/``.

    Raises:
        ValueError: ``$DATAGOUV_EVAL_REPORT_URL`` is set but is not an http(s) URL.
    """
    env = os.environ if environ is None else environ
    value = env.get(REPORT_URL_ENV, "").strip()
    if not value:
        return default_report_url()
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(
            f"{REPORT_URL_ENV}={value!r} is not an http(s) URL; expected e.g. "
            f"{default_report_url()}"
        )
    return value if value.endswith("/") else value + "/"


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves a directory's files, without a log line per request."""

    def log_message(self, format: str, *args: object) -> None:
        """Drop the per-request line (it would drown what the command printed)."""


def report_server(directory: Path, port: int) -> http.server.ThreadingHTTPServer:
    """A server of ``directory`` bound to 127.0.0.1:``port`` (0: any free port), not started."""
    handler = functools.partial(QuietHandler, directory=str(directory))
    return http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)


def serve_until_parent_exits(directory: Path, port: int, parent: int) -> None:
    """Serve ``directory`` until the process ``parent`` is gone (checked every second).

    The UI command starts this in a child process and then becomes ``dagster dev``: when that
    ends, however it ends, the report server ends too instead of holding the port.
    """
    with report_server(directory, port) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        stopped = threading.Event()
        while not stopped.wait(1.0):
            if os.getppid() != parent:
                break
        server.shutdown()


def main(argv: list[str]) -> None:
    """``python -m datagouv_eval_pipeline.pipeline.report_site DIRECTORY PORT PARENT_PID``."""
    import signal

    directory, port, parent = Path(argv[0]), int(argv[1]), int(argv[2])
    # Ctrl-C reaches the whole terminal group: the UI stops, and this server with it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    serve_until_parent_exits(directory, port, parent)


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
