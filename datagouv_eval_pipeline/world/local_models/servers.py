"""The servers of a run's ``llama_cpp`` models: started on first use, stopped together.

A ``llama_cpp`` provider in ``models.yml`` names a GGUF file per model; the run (``run-cell``,
the Dagster resource ``LocalModelServersResource``, the judge) asks :class:`LocalServers` for
the model's base URL, which starts llama.cpp's server the first time, sized from the model's
settings: context from ``context_window``, the generation cap from ``max_output_tokens``,
threads from the provider (every core by default), slots from its ``concurrency``.
"""

from __future__ import annotations

import os
from pathlib import Path

from datagouv_eval_pipeline.base.server_process import ServerPool
from datagouv_eval_pipeline.core.benchmark import (
    CellModel,
    LocalServerSettings,
    ModelsFile,
    ProviderKind,
)
from datagouv_eval_pipeline.world.local_models.server import (
    LlamaServer,
    LlamaServerError,
    LlamaServerSpec,
)

TEMPLATES_DIR = Path(__file__).with_name("templates")
CHECK_ONLY_URL = "http://127.0.0.1:9/v1"
"""Stands in for a server not started yet when a judge configuration is only checked (port 9,
discard: nothing is ever sent to it)."""
DEFAULT_CONTEXT_WINDOW = 4096
"""Tokens of context per slot when the model sets no ``context_window``."""


def _expanded(value: str) -> Path:
    return Path(os.path.expandvars(os.path.expanduser(value)))


def template_path(value: str) -> Path:
    """A ``chat_template_file`` value as a path.

    A template the project ships, by its name, or a file (``~`` and ``$VARS`` expanded).

    Raises:
        LlamaServerError: Neither exists.
    """
    shipped = TEMPLATES_DIR / value
    if "/" not in value and shipped.is_file():
        return shipped
    path = _expanded(value)
    if not path.is_file():
        known = ", ".join(sorted(p.name for p in TEMPLATES_DIR.glob("*.jinja")))
        raise LlamaServerError(
            f"chat_template_file {value!r}: no such file, nor a template the project ships "
            f"({known})"
        )
    return path


def server_spec(model: CellModel) -> LlamaServerSpec:
    """How to serve a ``llama_cpp`` model.

    Raises:
        LlamaServerError: The model is not a ``llama_cpp`` one, or its template is missing.
    """
    server: LocalServerSettings | None = model.server
    if model.kind != ProviderKind.LLAMA_CPP or server is None:
        raise LlamaServerError(f"model {model.key} is not served by the pipeline (llama_cpp)")
    settings = model.settings
    template = server.chat_template_file
    return LlamaServerSpec(
        gguf=_expanded(server.gguf),
        alias=model.name,
        context_window=settings.context_window or DEFAULT_CONTEXT_WINDOW,
        threads=server.threads,
        slots=server.slots,
        max_output_tokens=settings.max_output_tokens,
        chat_template_file=template_path(template) if template else None,
    )


def served_model(name: str, models: ModelsFile) -> CellModel | None:
    """The ``llama_cpp`` model ``<provider>/<model>`` of ``models.yml``; None for other kinds.

    For the judge, whose model is named this way rather than by a cell.
    """
    provider_name, _, model_name = name.partition("/")
    for provider in models.providers:
        if provider.name != provider_name or provider.kind != ProviderKind.LLAMA_CPP:
            continue
        for entry in provider.models:
            if entry.name == model_name:
                return CellModel(
                    provider=provider.name,
                    name=entry.name,
                    kind=provider.kind,
                    base_url=None,
                    api_key_env=None,
                    input_price_per_mtok=entry.input_price_per_mtok,
                    output_price_per_mtok=entry.output_price_per_mtok,
                    currency=models.currency,
                    label=entry.label,
                    settings=provider.settings_for(entry),
                    server=provider.server_for(entry),
                )
    return None


class LocalServers(ServerPool[str, LlamaServer]):
    """One server per ``llama_cpp`` model, started when first asked for (thread-safe)."""

    def __init__(self, log_dir: Path | None = None) -> None:
        """Prepare an empty set.

        Args:
            log_dir: Where the servers' output goes (default: temporary files).
        """
        super().__init__()
        self.log_dir = log_dir

    def base_url(self, model: CellModel) -> str:
        """The OpenAI-compatible base URL of the model's server, started if needed.

        Raises:
            LlamaServerError: It cannot start (the message names the file or the runtime).
        """

        def start(index: int) -> LlamaServer:
            log = None
            if self.log_dir is not None:
                self.log_dir.mkdir(parents=True, exist_ok=True)
                log = self.log_dir / f"llama-server-{model.provider}-{index}.log"
            server = LlamaServer(server_spec(model), log_path=log)
            server.start()
            return server

        return self.get(model.key, start).base_url

    def servers(self) -> dict[str, LlamaServer]:
        """The running servers by model (``provider~name``)."""
        return self.started()
