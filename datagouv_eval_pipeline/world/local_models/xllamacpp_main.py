"""llama.cpp's server from the ``xllamacpp`` wheel, with ``llama-server``'s flags.

``python -m datagouv_eval_pipeline.world.local_models.xllamacpp_main FLAGS`` takes the flags
:class:`LlamaServerSpec` writes.

xllamacpp links llama.cpp's server code (HTTP, OpenAI-compatible routes, Jinja chat templates)
into a Python extension; this module only maps the flags onto its ``CommonParams``, starts the
server and waits for SIGTERM or SIGINT. A thread ends the process if the pipeline that started
it is gone, so a killed pipeline leaves no server behind.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from pathlib import Path


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="xllamacpp_main", allow_abbrev=False)
    parser.add_argument("--model", required=True)
    parser.add_argument("--alias", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ctx-size", type=int, default=4096)
    parser.add_argument("--parallel", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--threads-batch", type=int, default=None)
    parser.add_argument("--n-predict", type=int, default=-1)
    parser.add_argument("--chat-template-file", default=None)
    parser.add_argument("--jinja", action="store_true")
    return parser


def _watch_parent() -> None:
    parent = os.getppid()
    while os.getppid() == parent:
        time.sleep(0.5)
    os.kill(os.getpid(), signal.SIGTERM)


def main(argv: list[str] | None = None) -> None:
    """Serve until SIGTERM or SIGINT."""
    args = _parser().parse_args(argv)
    # Blocked before the server's threads start, so they inherit the mask and sigwait gets them.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    # The optional extra `local-llm`; no stubs (untyped when installed, absent otherwise).
    import xllamacpp  # type: ignore[import-untyped,import-not-found,unused-ignore]

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.model_alias = {args.alias}
    params.hostnames = [args.host]
    params.port = args.port
    params.n_ctx = args.ctx_size
    params.n_parallel = args.parallel
    params.n_predict = args.n_predict
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads_batch or args.threads
    params.use_jinja = args.jinja
    params.ui = False
    if args.chat_template_file:
        params.chat_template = Path(args.chat_template_file).read_text(encoding="utf-8")
    threading.Thread(target=_watch_parent, name="parent-watch", daemon=True).start()
    server = xllamacpp.Server(params)
    print(f"xllamacpp {xllamacpp.__version__} listening at {server.listening_address}", flush=True)
    signal.sigwait({signal.SIGTERM, signal.SIGINT})
    sys.exit(0)


if __name__ == "__main__":
    main()
