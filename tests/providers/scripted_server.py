"""A minimal OpenAI-compatible HTTP server on 127.0.0.1 whose every answer a test scripts.

Unlike the replay server, it can answer anything: a 503 forever, a 429 with ``Retry-After: 0``,
a body that is not JSON. It counts every chat request it receives (the figure a retry policy
must bound) and when each arrived.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


@dataclass(frozen=True)
class Reply:
    """One scripted HTTP answer."""

    status: int = 200
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    raw: bytes | None = None  # sent as is instead of ``body`` (garbage)


Script = Callable[[dict[str, Any]], Reply]


def always(status: int, **headers: str) -> Script:
    """A script answering ``status`` with ``headers`` to every request."""
    body = {"error": {"message": f"scripted {status}", "type": "server_error"}}
    return lambda _body: Reply(status, body, headers)


class ScriptedServer:
    """Serve ``script`` on a free port of 127.0.0.1 (``with ScriptedServer(script) as s``)."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.bodies: list[dict[str, Any]] = []
        self.arrivals: list[float] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with owner._lock:
                    owner.bodies.append(body)
                    owner.arrivals.append(time.monotonic())
                reply = owner.script(body)
                payload = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
                self.send_response(reply.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                try:
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    # The client gave up (a timeout, a stopped run): nothing to answer, and no
                    # traceback on the test's output, which tests read for tracebacks.
                    return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL (``http://127.0.0.1:<port>/v1``)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def requests(self) -> int:
        """Chat requests received so far."""
        with self._lock:
            return len(self.bodies)

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


class SearchThenAnswer:
    """A scripted model: search the catalog once, then give a final answer.

    The usage it reports is set by the test; ``delay_s`` makes every answer late.
    """

    ANSWER: Mapping[str, Any] = {
        "answer": "Voir le catalogue.",
        "declined": False,
        "cited_urls": [],
        "ids_used": [],
    }

    def __init__(
        self, prompt_tokens: int = 10, completion_tokens: int = 5, delay_s: float = 0.0
    ) -> None:
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        self.delay_s = delay_s

    def __call__(self, body: dict[str, Any]) -> Reply:
        from datagouv_eval_pipeline.world.replay import tool_call_completion

        if self.delay_s:
            time.sleep(self.delay_s)
        model = str(body["model"])
        if body["messages"][-1]["role"] != "tool":
            calls: list[tuple[str, Mapping[str, Any]]] = [
                ("search_datasets", {"query": "catalogue"})
            ]
        else:
            calls = [("final_answer", self.ANSWER)]
        completion = tool_call_completion(
            model,
            calls,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
        )
        return Reply(200, completion)
