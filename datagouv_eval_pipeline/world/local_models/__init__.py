"""Models served on this machine: llama.cpp's OpenAI-compatible server started from a GGUF file.

:class:`LlamaServer` starts the server on 127.0.0.1 (a free port), waits for its ``/health``
endpoint and stops it; :func:`find_runtime` says which runtime starts it (a ``llama-server``
executable, else the ``xllamacpp`` wheel of the ``local-llm`` extra) or what is missing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from datagouv_eval_pipeline.base.faces import lazy_attributes

if TYPE_CHECKING:
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

_MODULE_OF: dict[str, str] = {
    "CHECK_ONLY_URL": ".servers",
    "LlamaServer": ".server",
    "LlamaServerError": ".server",
    "LlamaServerSpec": ".server",
    "LocalServers": ".servers",
    "Runtime": ".server",
    "RuntimeMissingError": ".server",
    "find_runtime": ".server",
    "served_model": ".servers",
    "server_spec": ".servers",
}
"""Each public name, and the module that defines it."""

if not TYPE_CHECKING:  # hidden from mypy, which then checks each name imported from the face
    __getattr__ = lazy_attributes(__name__, _MODULE_OF)


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
