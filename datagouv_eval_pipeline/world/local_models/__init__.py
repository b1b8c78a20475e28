"""Models served on this machine: llama.cpp's OpenAI-compatible server started from a GGUF file.

:class:`LlamaServer` starts the server on 127.0.0.1 (a free port), waits for its ``/health``
endpoint and stops it; :func:`find_runtime` says which runtime starts it (a ``llama-server``
executable, else the ``xllamacpp`` wheel of the ``local-llm`` extra) or what is missing.
"""

from datagouv_eval_pipeline.world.local_models.server import (
    LlamaServer,
    LlamaServerError,
    LlamaServerSpec,
    Runtime,
    RuntimeMissingError,
    find_runtime,
)
from datagouv_eval_pipeline.world.local_models.servers import (
    CHECK_ONLY_URL,
    LocalServers,
    served_model,
    server_spec,
)

__all__ = [
    "CHECK_ONLY_URL",
    "LlamaServer",
    "LlamaServerError",
    "LlamaServerSpec",
    "LocalServers",
    "Runtime",
    "RuntimeMissingError",
    "find_runtime",
    "served_model",
    "server_spec",
]
