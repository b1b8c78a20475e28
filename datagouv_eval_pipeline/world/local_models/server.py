"""Start llama.cpp's OpenAI-compatible server on 127.0.0.1 for one GGUF file, and stop it.

Two runtimes speak the same command line (``llama-server``'s flags):

* a ``llama-server`` executable (``$DATAGOUV_EVAL_LLAMA_SERVER``, else on ``PATH``): a user's
  own build or a distribution's package;
* the ``xllamacpp`` wheel (PyPI, MIT, prebuilt for manylinux x86_64: no compiler), installed by
  the ``local-llm`` extra. It links llama.cpp's own server code; ``xllamacpp_main`` runs it in
  a process of its own with the same flags.

The server runs as a :class:`~datagouv_eval_pipeline.base.server_process.ServerProcess`: a session
of
its own (a Ctrl-C in the terminal reaches the pipeline, which stops it), ``stop`` idempotent and
also run at interpreter exit, its output in a log file whose tail is quoted when it fails to
start.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from datagouv_eval_pipeline.base.server_process import (
    HOST,
    ChildServer,
    ServerProcess,
    free_port,
    log_tail,
)
from datagouv_eval_pipeline.base.serving import answers_ok

BINARY_ENV = "DATAGOUV_EVAL_LLAMA_SERVER"
"""Path of a ``llama-server`` executable to use instead of the one on ``PATH``."""
XLLAMACPP_MODULE = "datagouv_eval_pipeline.world.local_models.xllamacpp_main"


class LlamaServerError(RuntimeError):
    """The server could not start (the message names the file, the runtime or its output)."""


class RuntimeMissingError(LlamaServerError):
    """No llama.cpp server runtime is installed (the message says how to get one)."""


def machine_threads() -> int:
    """The CPU cores this process may run on (its affinity, not the host's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class LlamaServerSpec:
    """What to serve and how.

    Attributes:
        gguf: The model file.
        alias: The model name the server answers to (the ``model`` of requests).
        context_window: Tokens of context per slot (``--ctx-size`` is this times ``slots``).
        threads: CPU threads for generation and prompt processing (None: every core this
            process may use).
        slots: Requests served at once (``--parallel``).
        max_output_tokens: The server's cap on generated tokens per request (``--n-predict``);
            None: no cap beyond the context.
        chat_template_file: A Jinja chat template to use instead of the one in the GGUF file.
        start_timeout_s: Seconds to wait for ``/health`` to answer 200.
    """

    gguf: Path
    alias: str
    context_window: int = 4096
    threads: int | None = None
    slots: int = 1
    max_output_tokens: int | None = None
    chat_template_file: Path | None = None
    start_timeout_s: float = 120.0

    def arguments(self, port: int) -> list[str]:
        """The ``llama-server`` flags that serve this spec on ``127.0.0.1:port``."""
        threads = str(self.threads or machine_threads())
        args = [
            "--model",
            str(self.gguf),
            "--alias",
            self.alias,
            "--host",
            HOST,
            "--port",
            str(port),
            "--ctx-size",
            str(self.context_window * self.slots),
            "--parallel",
            str(self.slots),
            "--threads",
            threads,
            "--threads-batch",
            threads,
            # Tool calls go through the chat template (Jinja), as the model was trained.
            "--jinja",
        ]
        if self.max_output_tokens is not None:
            args += ["--n-predict", str(self.max_output_tokens)]
        if self.chat_template_file is not None:
            args += ["--chat-template-file", str(self.chat_template_file)]
        return args


@dataclass(frozen=True)
class Runtime:
    """A program that runs llama.cpp's server.

    Attributes:
        name: ``llama-server`` or ``xllamacpp``.
        command: The command before the flags.
        version: The runtime's version, when known (recorded with the runs).
    """

    name: str
    command: tuple[str, ...]
    version: str | None = None


def find_runtime(environ: Mapping[str, str] | None = None) -> Runtime:
    """The runtime to start servers with.

    ``$DATAGOUV_EVAL_LLAMA_SERVER``, else ``llama-server`` on ``PATH``, else the ``xllamacpp``
    wheel.

    Raises:
        RuntimeMissingError: None is installed (the message says how to install one).
    """
    env = os.environ if environ is None else environ
    chosen = env.get(BINARY_ENV, "").strip()
    if chosen:
        if not (Path(chosen).is_file() and os.access(chosen, os.X_OK)):
            raise RuntimeMissingError(f"${BINARY_ENV} is {chosen!r}, not an executable file")
        return Runtime("llama-server", (chosen,))
    on_path = shutil.which("llama-server", path=env.get("PATH"))
    if on_path:
        return Runtime("llama-server", (on_path,))
    if importlib.util.find_spec("xllamacpp") is not None:
        from importlib.metadata import version

        return Runtime("xllamacpp", (sys.executable, "-m", XLLAMACPP_MODULE), version("xllamacpp"))
    raise RuntimeMissingError(
        "no llama.cpp server runtime: install the project's `local-llm` extra "
        "(`uv sync --extra local-llm`, the xllamacpp wheel), or put a llama-server executable "
        f"on PATH or in ${BINARY_ENV}"
    )


class LlamaServer(ChildServer):
    """One running llama.cpp server (use as a context manager, or start/stop)."""

    def __init__(
        self, spec: LlamaServerSpec, *, runtime: Runtime | None = None, log_path: Path | None = None
    ) -> None:
        """Prepare the server.

        Args:
            spec: What to serve.
            runtime: The runtime (default: :func:`find_runtime`, at start).
            log_path: Where the server's output goes (default: a temporary file).
        """
        super().__init__()
        self.spec = spec
        self.runtime = runtime
        self.log_path = log_path
        self.startup_s = 0.0
        """Spawn to ``/health`` answering 200 (the model loaded)."""

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL (``http://127.0.0.1:PORT/v1``)."""
        if self.port is None:
            raise LlamaServerError("the llama.cpp server is not started")
        return f"http://{HOST}:{self.port}/v1"

    def start(self) -> str:
        """Start the server and wait until it has loaded the model; returns its base URL.

        Raises:
            LlamaServerError: The GGUF file is missing, or the server exited or did not become
                healthy in time (with the tail of its output).
            RuntimeMissingError: No runtime is installed.
        """
        if self._process is not None:
            return self.base_url
        if not self.spec.gguf.is_file():
            raise LlamaServerError(f"{self.spec.gguf}: no such GGUF model file")
        runtime = self.runtime = self.runtime or find_runtime()
        if self.log_path is None:
            handle, name = tempfile.mkstemp(prefix="llama-server-", suffix=".log")
            os.close(handle)
            self.log_path = Path(name)
        started = time.perf_counter()
        port = free_port()
        self._process = ServerProcess(self.log_path)
        self._process.spawn([*runtime.command, *self.spec.arguments(port)], port)
        self.port = port
        problem = self._process.wait_ready(
            # 503 while the model loads, 200 once it is ready.
            lambda bound: answers_ok(bound, "/health", timeout=2.0),
            f"answer http://{HOST}:{port}/health",
            started=started,
            timeout=self.spec.start_timeout_s,
            poll_s=0.1,
        )
        if problem is not None:
            self.stop()
            raise LlamaServerError(
                f"llama.cpp server ({runtime.name}) for {self.spec.gguf.name} {problem}"
            )
        self.startup_s = time.perf_counter() - started
        return self.base_url

    def log_tail(self, lines: int = 15) -> str:
        """The last lines of the server's output."""
        if self.log_path is None:
            return "(no output)"
        return log_tail(self.log_path, lines)

    def stop(self, timeout: float = 10.0) -> int | None:
        """Stop the server (SIGTERM, then SIGKILL after ``timeout``). Idempotent."""
        return super().stop(timeout)
